"""The safety gate: deterministic, structural checks of a batch of ops against a schema and a tree.

The gate never rewrites meaning; semantic judgement belongs to the model. For each op it
decides *accept* or *reject* (with a machine-readable :class:`Reason`, the offending op and a
human-readable detail). Policy, in the order the checks run:

1. ``NO_OP`` only alone. A batch whose only ops are ``NO_OP`` accepts the first and rejects any
   further ones (``NO_OP_NOT_ALONE``, detail "repeated"). In a batch that also holds other ops,
   every ``NO_OP`` is rejected ``NO_OP_NOT_ALONE`` and the other ops are judged normally.
2. Path: must be a leaf of the schema. A path that names an inner node is ``NOT_A_LEAF``; any
   other unknown path is ``UNKNOWN_PATH``. Paths are matched exactly (the parser already strips
   surrounding whitespace and quotes).
3. One op per path per batch: the first op naming a leaf *claims* it, whether or not that op is
   then accepted; every later op on the same leaf is ``DUPLICATE_PATH``. (A model that writes
   the same leaf twice in one chunk is confused; we do not guess which op it meant.)
4. Value. ``DELETE`` must carry no value (``DELETE_WITH_VALUE``). ``ADD``/``UPDATE`` need a
   value (``None`` is ``EMPTY_VALUE``) that is a string (``VALUE_NOT_STRING``) and non-empty after
   whitespace normalisation (``EMPTY_VALUE``) and whose normalised length in characters is within the leaf budget
   (``OVER_BUDGET``; never truncated). Normalisation = strip and collapse every run of
   whitespace (including newlines) to one space; the accepted op carries the normalised value.
5. State, judged against the tree *before* the batch (rule 3 makes batch order irrelevant):
   ``DELETE`` of an empty leaf is ``DELETE_ON_EMPTY``. ``ADD`` on an occupied leaf and
   ``UPDATE`` on an empty leaf are, in the default **strict** policy, rejected
   ``ADD_ON_OCCUPIED`` / ``UPDATE_ON_EMPTY``. In **lenient** mode (``GatePolicy(lenient=True)``)
   they are normalised to ``UPDATE`` / ``ADD`` respectively, accepted, and recorded as a
   :class:`Normalisation` (original op, resulting op, note) so the caller can audit it.

6. No change: an ``ADD``/``UPDATE`` whose normalised value equals the leaf's current value is
   ``NO_CHANGE`` (audited, never written as a new version).
7. Grounding (``GatePolicy(grounding=True)``): the value of an ``ADD``/``UPDATE`` must be
   supported by the user's words (:func:`memory.engine.grounding.check_grounding`): by the op's
   cited ``source`` sentences when it has them (one a line; each must itself occur in the
   ``evidence``, the chunk's user turns, when those are given), else by the ``evidence``; the
   leaf's old value counts as support too, and so does a date the evidence marks as derived from
   a message's timestamp (``memory.engine.dates.chunk_evidence``: "yesterday" sent on 8 May 2023
   grounds "7 May 2023"; nothing else new is accepted). Failing that, or with no user words to check against, it is
   ``UNGROUNDED``.
8. Small talk (``GatePolicy(small_talk=True)``, on for the listener and for model writes, off for
   moderators and migrations): an ``ADD``/``UPDATE`` whose value brings a clause the leaf does not
   hold yet that has no lasting content (:func:`memory.engine.chatter.small_talk_reason`: a
   greeting, "how about you?", "I hear ya", an image caption, "It was great", ...) is
   ``SMALL_TALK``, whatever engine wrote it.

``PARSE_ERROR`` and ``REVIEW_REQUIRED`` are never produced here; callers use them to record
lines the parser could not read and ops held back for human review in the same shape.
Accepted ops keep the batch order. The gate is a pure function of (schema, tree, ops, policy).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from .chatter import small_talk_reason
from .dates import DATE_EVIDENCE, derived_dates
from .grounding import DEFAULT_MIN_SUPPORT, check_grounding
from .ops import Op, OpType
from .schema import Schema
from .tree import Tree


class Reason(StrEnum):
    UNKNOWN_PATH = "UNKNOWN_PATH"
    NOT_A_LEAF = "NOT_A_LEAF"
    ADD_ON_OCCUPIED = "ADD_ON_OCCUPIED"
    UPDATE_ON_EMPTY = "UPDATE_ON_EMPTY"
    DELETE_ON_EMPTY = "DELETE_ON_EMPTY"
    EMPTY_VALUE = "EMPTY_VALUE"
    VALUE_NOT_STRING = "VALUE_NOT_STRING"
    DELETE_WITH_VALUE = "DELETE_WITH_VALUE"
    OVER_BUDGET = "OVER_BUDGET"
    DUPLICATE_PATH = "DUPLICATE_PATH"
    NO_OP_NOT_ALONE = "NO_OP_NOT_ALONE"
    NO_CHANGE = "NO_CHANGE"
    UNGROUNDED = "UNGROUNDED"
    SMALL_TALK = "SMALL_TALK"
    PARSE_ERROR = "PARSE_ERROR"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """``lenient=False`` (default): ADD on occupied / UPDATE on empty are rejected.
    ``lenient=True``: they are normalised to UPDATE / ADD and recorded.
    ``grounding=True``: values must be supported by the user's words (rule 7), at least
    ``min_support`` of their content words.
    ``small_talk=True``: values that add small talk are rejected (rule 8)."""

    lenient: bool = False
    grounding: bool = False
    min_support: float = DEFAULT_MIN_SUPPORT
    small_talk: bool = False


STRICT = GatePolicy()
LENIENT = GatePolicy(lenient=True)


@dataclass(frozen=True, slots=True)
class Rejection:
    op: Op | None
    reason: Reason
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": None if self.op is None else self.op.to_dict(),
            "reason": str(self.reason),
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Normalisation:
    original: Op
    result: Op
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"original": self.original.to_dict(), "result": self.result.to_dict(), "note": self.note}


@dataclass(frozen=True, slots=True)
class GateResult:
    accepted: tuple[Op, ...]
    rejected: tuple[Rejection, ...]
    normalised: tuple[Normalisation, ...] = ()

    @property
    def all_accepted(self) -> bool:
        return not self.rejected

    def to_dict(self) -> dict[str, Any]:
        return {
            "accepted": [op.to_dict() for op in self.accepted],
            "rejected": [r.to_dict() for r in self.rejected],
            "normalised": [n.to_dict() for n in self.normalised],
        }


def normalise_value(value: str) -> str:
    """Strip and collapse every whitespace run to a single space."""
    return " ".join(value.split())


def _ungrounded(op: Op, value: str, old: str | None, evidence, policy: GatePolicy) -> str | None:
    """Why ``value`` is not grounded (rule 7), or None when it is."""
    dates = derived_dates(evidence or ())
    if op.source:
        cited = [normalise_value(line) for line in op.source.split("\n") if line.strip()]
        turns = [normalise_value(e) for e in evidence or () if not e.startswith(DATE_EVIDENCE)]
        if evidence is not None and not all(any(c in t for t in turns) for c in cited):
            return "the cited sentence is not in the chunk's user turns"
        sources: list[str] = cited + dates
    else:
        sources = [e for e in evidence or () if e and not e.startswith(DATE_EVIDENCE)] + dates
    if not sources:
        return "no user words to check the value against"
    verdict = check_grounding(value, sources, old, min_support=policy.min_support)
    return None if verdict.ok else verdict.detail


def _small_talk(value: str, old: str | None) -> str | None:
    """Why ``value`` brings small talk to a leaf holding ``old`` (rule 8), or None."""
    held = {c.strip().casefold() for c in (old or "").split(";")}
    for clause in (c.strip() for c in value.split(";")):
        if clause and clause.casefold() not in held:
            reason = small_talk_reason(clause)
            if reason is not None:
                return f"no lasting content ({reason}): {clause!r}"
    return None


def _judge(
    schema: Schema, tree: Tree, op: Op, policy: GatePolicy, evidence: Sequence[str] | None, claimed: set[str]
) -> Rejection | tuple[Op, str]:
    """Rules 2 to 8 for an op other than ``NO_OP``: its rejection, or the op to accept and, when
    the lenient policy changed its type, the note of that :class:`Normalisation` (else "")."""
    path = op.path
    assert path is not None  # guaranteed by Op construction
    leaf = schema.leaf(path)
    if leaf is None:
        if schema.is_inner(path):
            return Rejection(op, Reason.NOT_A_LEAF, f"{path!r} is an inner node of {schema.id}")
        return Rejection(op, Reason.UNKNOWN_PATH, f"{path!r} is not a leaf of {schema.id}")
    if path in claimed:
        return Rejection(op, Reason.DUPLICATE_PATH, f"an earlier op in this batch names {path!r}")
    claimed.add(path)
    occupied = path in tree
    if op.type is OpType.DELETE:
        if op.value is not None:
            return Rejection(op, Reason.DELETE_WITH_VALUE, "DELETE must carry no value (None)")
        if not occupied:
            return Rejection(op, Reason.DELETE_ON_EMPTY, f"{path!r} is already empty")
        return op, ""
    value = op.value
    if value is None:
        return Rejection(op, Reason.EMPTY_VALUE, f"{op.type} carries no value")
    if not isinstance(value, str):
        detail = f"{op.type} value must be a string, got {type(value).__name__}"
        return Rejection(op, Reason.VALUE_NOT_STRING, detail)
    clean = normalise_value(value)
    if not clean:
        return Rejection(op, Reason.EMPTY_VALUE, f"{op.type} value is empty after normalisation")
    if len(clean) > leaf.budget:
        return Rejection(op, Reason.OVER_BUDGET, f"{len(clean)} chars > budget {leaf.budget} for {path!r}")
    old = tree[path] if occupied else None
    if occupied and clean == old:
        return Rejection(op, Reason.NO_CHANGE, f"{path!r} already holds this value")
    result, note = (op if clean == value else replace(op, value=clean)), ""
    if op.type is OpType.ADD and occupied:
        if not policy.lenient:
            return Rejection(op, Reason.ADD_ON_OCCUPIED, f"{path!r} already has a value; use UPDATE")
        result, note = replace(result, type=OpType.UPDATE), "ADD on occupied leaf applied as UPDATE (lenient)"
    elif op.type is OpType.UPDATE and not occupied:
        if not policy.lenient:
            return Rejection(op, Reason.UPDATE_ON_EMPTY, f"{path!r} is empty; use ADD")
        result, note = replace(result, type=OpType.ADD), "UPDATE on empty leaf applied as ADD (lenient)"
    why = _ungrounded(op, clean, old, evidence, policy) if policy.grounding else None
    if why is not None:
        return Rejection(op, Reason.UNGROUNDED, why)
    why = _small_talk(clean, old) if policy.small_talk else None
    if why is not None:
        return Rejection(op, Reason.SMALL_TALK, why)
    return result, note


def gate(
    schema: Schema,
    tree: Tree,
    ops: Iterable[Op],
    policy: GatePolicy = STRICT,
    evidence: Sequence[str] | None = None,
) -> GateResult:
    """Judge ``ops`` against ``schema`` and the current ``tree``; see the module docstring.

    ``evidence``: the chunk's user turns, for the grounding check (rule 7)."""
    ops = tuple(ops)
    accepted: list[Op] = []
    rejected: list[Rejection] = []
    normalised: list[Normalisation] = []
    only_no_ops = all(op.type is OpType.NO_OP for op in ops)
    seen_no_op = False
    claimed: set[str] = set()
    for op in ops:
        verdict: Rejection | tuple[Op, str]
        if op.type is OpType.NO_OP:  # rule 1
            detail = (
                "NO_OP mixed with other ops" if not only_no_ops else "repeated NO_OP" if seen_no_op else ""
            )
            verdict = Rejection(op, Reason.NO_OP_NOT_ALONE, detail) if detail else (op, "")
            seen_no_op = True
        else:
            verdict = _judge(schema, tree, op, policy, evidence, claimed)
        if isinstance(verdict, Rejection):
            rejected.append(verdict)
            continue
        result, note = verdict
        if note:
            normalised.append(Normalisation(op, result, note))
        accepted.append(result)
    return GateResult(tuple(accepted), tuple(rejected), tuple(normalised))
