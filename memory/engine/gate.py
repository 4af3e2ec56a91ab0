"""The safety gate: deterministic, structural checks of a batch of ops against a schema and a tree.

The gate never rewrites meaning; semantic judgement belongs to the model. Each op is accepted or
rejected with a :class:`Reason`, the op and a human-readable detail. The rules, in order:

1. ``NO_OP`` only alone: in a batch of ``NO_OP`` only, the first is accepted and the others are
   ``NO_OP_NOT_ALONE`` ("repeated"); beside other ops every ``NO_OP`` is, and the others are judged.
2. The path must be a leaf of the schema, matched exactly: an inner node is ``NOT_A_LEAF``, any
   other path ``UNKNOWN_PATH``.
3. One op per leaf per batch: the first op naming a leaf claims it, accepted or not; every later one
   is ``DUPLICATE_PATH`` (a model writing a leaf twice is confused; we do not guess which it meant).
4. Value: ``DELETE`` carries none (``DELETE_WITH_VALUE``); ``ADD``/``UPDATE`` need a string
   (``EMPTY_VALUE``, ``VALUE_NOT_STRING``) that is non-empty once stripped and every whitespace run
   is one space (``EMPTY_VALUE``) and within the leaf budget (``OVER_BUDGET``, never truncated); the
   accepted op carries the normalised value.
5. State, against the tree *before* the batch (rule 3 makes batch order irrelevant): ``DELETE`` of an
   empty leaf is ``DELETE_ON_EMPTY``; ``ADD`` on an occupied leaf and ``UPDATE`` on an empty one are
   ``ADD_ON_OCCUPIED`` / ``UPDATE_ON_EMPTY`` in the default **strict** policy, and in **lenient**
   mode turned into ``UPDATE`` / ``ADD`` and recorded as a :class:`Normalisation` for the audit.
6. An ``ADD``/``UPDATE`` whose normalised value equals the leaf's is ``NO_CHANGE`` (audited, no
   new version).
7. Grounding (``GatePolicy(grounding=True)``): the value must be supported by the user's words
   (:func:`memory.engine.grounding.check_grounding`): by the op's cited ``source`` sentences (one a
   line; each must occur in the ``evidence``, the chunk's user turns, when given), else by the
   ``evidence``. The leaf's old value counts too, and so does a date the evidence marks as derived
   from a message's timestamp (``memory.engine.dates.chunk_evidence``: "yesterday" sent on 8 May
   2023 grounds "7 May 2023"). Failing that, or with no user words to check, ``UNGROUNDED``.
8. Small talk (``GatePolicy(small_talk=True)``: on for the listener and model writes, off for
   moderators and migrations): a value bringing a clause the leaf does not hold that has no lasting
   content (:func:`memory.engine.chatter.small_talk_reason`) is ``SMALL_TALK``, whatever wrote it.

``PARSE_ERROR`` and ``REVIEW_REQUIRED`` are never produced here; callers use them to record
unreadable lines and ops held for review in the same shape. Accepted ops keep the batch order. The
gate is a pure function of (schema, tree, ops, policy, evidence).
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
    """The optional rules: ``lenient`` (rule 5), ``grounding`` with ``min_support`` (7), ``small_talk`` (8)."""

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
