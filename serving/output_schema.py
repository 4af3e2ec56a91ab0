"""JSON schemas of the MemListener's output for constrained decoding: paths or ids as enums, the op
list capped (``MAX_OPS``), values at the largest budget up to ``MAX_VALUE_CHARS`` (a grammar grows
with ``maxLength``); an object root, as several implementations refuse array roots."""

from __future__ import annotations

import functools
from typing import Any

from memory.engine.schema import Schema

MAX_OPS = 12
#: Largest ``maxLength`` of a value (one op's value; the gate checks each leaf's budget).
MAX_VALUE_CHARS = 400


def _closed(**properties: dict[str, Any]) -> dict[str, Any]:
    """An object of exactly ``properties``, all required, in the order a grammar emits them."""
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
    """The pointing output: ops naming this chunk's sentence and candidate-leaf ids (integer enums),
    ``op`` first in every variant as models write it (grammars emit properties in schema order)."""
    max_len = max(1, min(max_len, MAX_VALUE_CHARS))
    sentence = {"type": "integer", "enum": list(range(1, n_sentences + 1))}
    leaf = {"type": "integer", "enum": list(range(1, n_leaves + 1))}
    write = _closed(op=_op("ADD", "UPDATE"), sentence=sentence, leaf=leaf, value=_value(max_len))
    delete = _closed(op=_op("DELETE"), sentence=sentence, leaf=leaf)
    no_op = _closed(op=_op("NO_OP"))
    return _op_list(write, delete, no_op, max_ops=max_ops)
