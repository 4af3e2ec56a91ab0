"""Pointer ops: what the pointing prompt's output means, mapped back to tree ops in code.

The model (or the extractive listener) never writes a path: each item names a numbered user sentence
and a numbered candidate leaf of the chunk, ``{"op": "ADD" | "UPDATE" | "DELETE" | "NO_OP",
"sentence": 3, "leaf": 2, "value": "..."}``. :func:`ops_from_pointers` maps them to ops:

- the leaf id gives the path; the sentence is carried as ``Op.source`` for the grounding check and
  the audit (when it does not support the value but another sentence of the chunk does, that one);
- ADD/UPDATE merge the value into the leaf's (:func:`memory.engine.clauses.merge_clauses`): an
  ADD on an empty leaf, else an UPDATE, whatever the model said; a merge that changes nothing stays
  an UPDATE to the same value, which the gate audits as ``NO_CHANGE``; a leaf in ``singles`` is
  replaced instead;
- DELETE removes the clauses the sentence names (an UPDATE) or clears the leaf;
- several items on one leaf fold into one op in order, citing each sentence once;
- an unknown id, an ADD without a value or an item on a leaf being deleted is a :class:`PointerError`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .candidates import Candidates, UserSentence
from .clauses import merge_clauses, retract
from .gate import normalise_value
from .grounding import check_grounding
from .ops import Op, OpType


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
    singles: Collection[str] = (),
) -> tuple[list[Op], list[PointerError]]:
    """Map pointer items to ops; see the module docstring."""
    by_sentence = {s.id: s for s in sentences}
    by_leaf = {c.id: c for c in candidates.leaves}
    pending: dict[str, Op] = {}  # path -> its op so far, in first-touch order
    errors: list[PointerError] = []
    for raw in items:
        if not isinstance(raw, Mapping):
            errors.append(PointerError(repr(raw)[:200], "an op must be a JSON object"))
            continue
        kind, shown = str(raw.get("op", "")).strip().upper(), repr(dict(raw))[:200]
        if kind in ("NO_OP", "NOOP", "NONE"):
            continue
        if kind not in ("ADD", "UPDATE", "DELETE"):
            errors.append(PointerError(shown, f"unknown op {kind!r}"))
            continue
        leaf_id, sentence_id = _as_int(raw.get("leaf")), _as_int(raw.get("sentence"))
        leaf = by_leaf.get(leaf_id) if leaf_id is not None else None
        sentence = by_sentence.get(sentence_id) if sentence_id is not None else None
        if leaf is None or sentence is None:
            what = "leaf" if leaf is None else "sentence"
            errors.append(PointerError(shown, f"{what} id is not one of this chunk's"))
            continue
        before = pending.get(leaf.path)
        if before is not None and before.type is OpType.DELETE:
            errors.append(PointerError(shown, f"candidate {leaf.id} is already deleted"))
            continue
        old = before.value if before is not None else tree.get(leaf.path)
        source = _cite(before, sentence.origin)
        if kind == "DELETE":
            if old is None:
                continue
            remaining = retract(old, sentence.origin)
            pending[leaf.path] = (
                Op(OpType.DELETE, leaf.path, None, source=source)
                if remaining is None
                else Op(OpType.UPDATE, leaf.path, remaining, source=source)
            )
            continue
        value = raw.get("value")
        if not isinstance(value, str) or not normalise_value(value):
            errors.append(PointerError(shown, "ADD/UPDATE needs a non-empty string value"))
            continue
        value = normalise_value(value)
        merged = merge_clauses(old, value, budgets.get(leaf.path, 80), single=leaf.path in singles)
        op_type = OpType.UPDATE if tree.get(leaf.path) is not None else OpType.ADD
        cited = _supporting(value, sentence, sentences).origin
        pending[leaf.path] = Op(op_type, leaf.path, merged, source=_cite(before, cited))
    return list(pending.values()), errors


def _cite(before: Op | None, sentence: str) -> str:
    """The sentences an op folded from several items cites: each once, in order, a line each."""
    if before is None or not before.source:
        return sentence
    cited = before.source.split("\n")
    return before.source if sentence in cited else "\n".join([*cited, sentence])


def _supporting(value: str, cited: UserSentence, sentences: Sequence[UserSentence]) -> UserSentence:
    """The cited sentence when it supports ``value``; else the chunk's sentence that does (small
    models cite the sentence next to the right one); else the cited one (the gate then rejects)."""
    if check_grounding(value, [cited.origin]).ok:
        return cited
    best = max(sentences, key=lambda s: check_grounding(value, [s.origin]).support, default=cited)
    return best if check_grounding(value, [best.origin]).ok else cited
