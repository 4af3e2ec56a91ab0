"""Pointer ops: what the pointing prompt's output means, mapped back to tree ops in code.

The model (or the extractive listener) never writes a path. Each item of its output names a
numbered user sentence and a numbered candidate leaf of this chunk::

    {"op": "ADD" | "UPDATE" | "DELETE" | "NO_OP", "sentence": 3, "leaf": 2, "value": "..."}

:func:`ops_from_pointers` turns the items into :class:`~memory.engine.ops.Op` values:

- ``leaf`` -> the candidate's path, ``sentence`` -> the sentence text, carried as ``Op.source``
  (so the gate's grounding check and the audit log see the user's words); when the cited
  sentence does not support the value but another sentence of the chunk does, that one is cited;
- ADD/UPDATE: the value is merged into the leaf's current value by
  :func:`memory.engine.clauses.merge_clauses` (a write on an empty leaf is an ADD, on a filled
  one an UPDATE, whatever the model called it); a merge that changes nothing stays an UPDATE to
  the same value, which the gate audits as ``NO_CHANGE``;
- DELETE: the clauses the cited sentence names are removed (an UPDATE), or the leaf is cleared;
- an unknown sentence or leaf id, or two items on one leaf, become errors (the first item on a
  leaf wins), reported in the parser's error shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .candidates import Candidates, UserSentence
from .clauses import merge_clauses, retract
from .gate import normalise_value
from .grounding import check_grounding
from .ops import Op, OpType

__all__ = ["PointerError", "ops_from_pointers"]


@dataclass(frozen=True, slots=True)
class PointerError:
    item: str
    message: str


def _as_int(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return None


def ops_from_pointers(
    items: Sequence[Any],
    sentences: Sequence[UserSentence],
    candidates: Candidates,
    tree: Mapping[str, str],
    budgets: Mapping[str, int],
) -> tuple[list[Op], list[PointerError]]:
    """Map pointer items to ops; see the module docstring."""
    by_sentence = {s.id: s for s in sentences}
    by_leaf = {c.id: c for c in candidates.leaves}
    ops: list[Op] = []
    errors: list[PointerError] = []
    claimed: set[str] = set()
    for raw in items:
        if not isinstance(raw, Mapping):
            errors.append(PointerError(repr(raw)[:200], "an op must be a JSON object"))
            continue
        kind = str(raw.get("op", "")).strip().upper()
        if kind in ("NO_OP", "NOOP", "NONE"):
            continue
        if kind not in ("ADD", "UPDATE", "DELETE"):
            errors.append(PointerError(repr(dict(raw))[:200], f"unknown op {kind!r}"))
            continue
        leaf_id, sentence_id = _as_int(raw.get("leaf")), _as_int(raw.get("sentence"))
        leaf = by_leaf.get(leaf_id) if leaf_id is not None else None
        sentence = by_sentence.get(sentence_id) if sentence_id is not None else None
        if leaf is None or sentence is None:
            what = "leaf" if leaf is None else "sentence"
            errors.append(PointerError(repr(dict(raw))[:200], f"{what} id is not one of this chunk's"))
            continue
        if leaf.path in claimed:
            errors.append(PointerError(repr(dict(raw))[:200], f"a second op on candidate {leaf.id}"))
            continue
        claimed.add(leaf.path)
        old = tree.get(leaf.path)
        if kind == "DELETE":
            if old is None:
                continue
            remaining = retract(old, sentence.text)
            op = (
                Op(OpType.DELETE, leaf.path, None, source=sentence.text)
                if remaining is None
                else Op(OpType.UPDATE, leaf.path, remaining, source=sentence.text)
            )
            ops.append(op)
            continue
        value = raw.get("value")
        if not isinstance(value, str) or not normalise_value(value):
            errors.append(PointerError(repr(dict(raw))[:200], "ADD/UPDATE needs a non-empty string value"))
            continue
        value = normalise_value(value)
        merged = merge_clauses(old, value, budgets.get(leaf.path, 80))
        op_type = OpType.UPDATE if old is not None else OpType.ADD
        ops.append(Op(op_type, leaf.path, merged, source=_supporting(value, sentence, sentences).text))
    return ops, errors


def _supporting(value: str, cited: UserSentence, sentences: Sequence[UserSentence]) -> UserSentence:
    """The cited sentence when it supports ``value``; else the chunk's sentence that does (small
    models cite the sentence next to the right one); else the cited one (the gate then rejects)."""
    if check_grounding(value, [cited.text]).ok:
        return cited
    best = max(sentences, key=lambda s: check_grounding(value, [s.text]).support, default=cited)
    return best if check_grounding(value, [best.text]).ok else cited
