"""JSON schema of the MemListener's output, for constrained decoding.

``path`` is an enum of the schema's leaves, so a constrained engine cannot emit an unknown path. The
op list is capped (``MAX_OPS``) and values at the largest leaf budget, never above
``MAX_VALUE_CHARS`` (a grammar grows with ``maxLength`` and one MemListener serves every tenant);
the gate still checks each leaf's budget. The root is an object because several structured-output
implementations refuse array roots.
"""

from __future__ import annotations

import functools
from typing import Any

from memory.engine.schema import Schema

MAX_OPS = 12
#: Largest ``maxLength`` of a value in any generated output schema (the default schema's largest
#: budget is 300; a value over its leaf's budget is refused by the gate anyway).
MAX_VALUE_CHARS = 400


def _closed(**properties: dict[str, Any]) -> dict[str, Any]:
    """An object of exactly ``properties``, every one required, in this order (the order a
    grammar-constrained engine emits them in)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _op(*names: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(names)}


def _value(max_len: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_len}


def _op_list(*variants: dict[str, Any], max_ops: int) -> dict[str, Any]:
    """``{"ops": [...]}`` of 1..``max_ops`` items, each one of ``variants`` (both output schemas)."""
    return _closed(
        ops={"type": "array", "items": {"anyOf": list(variants)}, "minItems": 1, "maxItems": max_ops}
    )


@functools.lru_cache(maxsize=32)
def op_list_schema(schema: Schema, *, max_ops: int = MAX_OPS) -> dict[str, Any]:
    """The constrained-output JSON schema for ``schema`` (cached; do not mutate the result)."""
    path = {"type": "string", "enum": list(schema.paths)}
    null = {"type": "null"}
    max_len = min(max(leaf.budget for leaf in schema.leaves), MAX_VALUE_CHARS)
    write = _closed(op=_op("ADD", "UPDATE"), path=path, value=_value(max_len))
    delete = _closed(op=_op("DELETE"), path=path, value=null)
    no_op = _closed(op=_op("NO_OP"), path=null, value=null)
    return _op_list(write, delete, no_op, max_ops=max_ops)


@functools.lru_cache(maxsize=256)
def pointer_list_schema(n_sentences: int, n_leaves: int, *, max_ops: int = MAX_OPS, max_len: int = 160):
    """The pointing prompt's output: ops that name a sentence id and a candidate-leaf id of this
    chunk only (integer enums), so a constrained engine cannot point outside the chunk.
    Property order matters: grammar-constrained engines emit properties in schema order, and
    ``op`` comes first in every variant, as models write it."""
    max_len = max(1, min(max_len, MAX_VALUE_CHARS))
    sentence = {"type": "integer", "enum": list(range(1, n_sentences + 1))}
    leaf = {"type": "integer", "enum": list(range(1, n_leaves + 1))}
    write = _closed(op=_op("ADD", "UPDATE"), sentence=sentence, leaf=leaf, value=_value(max_len))
    delete = _closed(op=_op("DELETE"), sentence=sentence, leaf=leaf)
    no_op = _closed(op=_op("NO_OP"))
    return _op_list(write, delete, no_op, max_ops=max_ops)
