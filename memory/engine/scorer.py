"""Op scorer: how good is a MemListener prediction for one chunk, as one number in [-1, 1].

:func:`score` compares the predicted ops with the *gold* ops (applied, or approved or written by a
moderator) and the *declined* ones; it is the training reward and a metric. The rules and their
weights are the table in docs/TRAINING.md ("Op scorer"); what the table does not say:

- pairs on one path are taken best first, ties broken by op content, and the gate sees the ops in
  content order: the score never depends on the order of either list;
- a lone predicted ``NO_OP`` and a gold ``NO_OP`` are never unmatched: "nothing to record" against
  a fact costs only the missing fact, a spurious fact against ``NO_OP`` only its redundancy;
- ``parse_errors`` adds unreadable items of a prediction given as ops (pointer items the pointing
  map refused), each worth ``PARSE_ERROR`` like an unreadable line of text;
- the gate verdict (rule "gate") is computed per op with an LRU cache on (schema, op, the leaf's
  state, policy, evidence) plus one structural pass for the batch rules (one op per path, NO_OP
  alone), which equals one ``gate`` call over the batch: a GRPO group's repeated ops are judged
  once, and ops that exactly match gold (exempt) not at all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .gate import GatePolicy, Reason, gate
from .ops import Op, OpType
from .parser import parse_ops
from .schema import Schema
from .tree import Tree

EXACT = 1.0
MISSING = -0.5
REDUNDANT = -0.5
DECLINED = -1.0
GATE = -0.5
PARSE_ERROR = -0.5
DECLINED_MATCH = 0.8
DEFAULT_POLICY = GatePolicy(grounding=True)
# Batch-level gate reasons: already counted by the match as redundant ops (rule 5).
_COUNTED_BY_MATCH = frozenset({Reason.DUPLICATE_PATH, Reason.NO_OP_NOT_ALONE})
_WORD = re.compile(r"\w+")

Similarity = Callable[[str, str], float]


@dataclass(frozen=True, slots=True)
class Match:
    """One predicted op paired with one gold op: ``kind`` is exact | partial | type_mismatch."""

    predicted: Op
    gold: Op
    kind: str
    credit: float


@dataclass(frozen=True, slots=True)
class ScoreReport:
    """The score and every part of it (see the module docstring for the rules)."""

    total: float
    format_ok: bool
    n_predicted: int = 0
    n_gold: int = 0
    parse_errors: int = 0
    exact: int = 0
    partial: int = 0
    partial_credit: float = 0.0
    type_mismatch: int = 0
    missing: int = 0
    redundant: int = 0
    declined_hits: int = 0
    gate_rejections: int = 0
    gate_reasons: tuple[str, ...] = ()
    raw: float = 0.0
    denominator: int = 1
    matches: tuple[Match, ...] = field(default=(), compare=False)

    @property
    def parts(self) -> dict[str, float]:
        """Each rule's contribution to ``raw`` (before normalisation and clipping)."""
        if not self.format_ok:
            return {"format": -1.0}
        return {
            "match": self.exact * EXACT + self.partial_credit,
            "missing": self.missing * MISSING,
            "redundant": self.redundant * REDUNDANT,
            "declined": self.declined_hits * DECLINED,
            "gate": self.gate_rejections * GATE,
            "parse_errors": self.parse_errors * PARSE_ERROR,
        }

    def to_dict(self) -> dict[str, Any]:
        """Every field but ``matches`` (JSON-ready), then ``parts``."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "matches"}
        return out | {"gate_reasons": list(self.gate_reasons), "parts": self.parts}


def normalise_text(value: Any) -> str:
    """Casefolded word tokens joined by one space; a non-string value normalises to ``""``."""
    if not isinstance(value, str):
        return ""
    return _normalise(value)


@functools.lru_cache(maxsize=16384)
def _normalise(value: str) -> str:
    return " ".join(_WORD.findall(value.casefold()))


def token_f1(a: str, b: str) -> float:
    """F1 of the distinct word tokens of two (normalised or raw) values; 1.0 for two empty values."""
    ta, tb = set(normalise_text(a).split()), set(normalise_text(b).split())
    if not ta and not tb:
        return 1.0
    shared = len(ta & tb)
    return 0.0 if not shared else 2 * shared / (len(ta) + len(tb))


def _key(op: Op) -> tuple:
    """Content order of ops (never their position)."""
    conf = -1.0 if op.confidence is None else op.confidence
    return (str(op.type), op.path or "", repr(op.value), conf, op.source or "")


def _clip01(x: float) -> float:
    return 0.0 if x != x else max(0.0, min(1.0, float(x)))  # NaN -> 0


def _turn(t: Any) -> tuple[str, str]:
    if isinstance(t, Mapping):
        return str(t.get("role", "")), str(t.get("content", ""))
    return str(getattr(t, "role", "")), str(getattr(t, "content", ""))


class _SchemaRef:
    """A schema as a cache key: hashed by (id, version), not by its 212 leaves."""

    __slots__ = ("schema", "_hash")

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._hash = hash(schema.key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _SchemaRef) and (other.schema is self.schema or other.schema == self.schema)


@functools.lru_cache(maxsize=8192)
def _judge_one(
    ref: _SchemaRef, op: Op, old: str | None, policy: GatePolicy, evidence: tuple[str, ...]
) -> str | None:
    """The gate's reason for one op against its leaf's state (``old`` = current value), or None."""
    tree = Tree({op.path: old}) if old is not None and op.path else Tree.empty()
    rejected = gate(ref.schema, tree, (op,), policy, evidence).rejected
    return str(rejected[0].reason) if rejected else None


def _gate_reasons(
    schema: Schema,
    tree: Tree,
    ops: Sequence[Op],
    policy: GatePolicy,
    evidence: tuple[str, ...],
    skip: frozenset[int] = frozenset(),
) -> dict[int, str]:
    """``{index in ops: reason}`` as one ``gate`` call gives it; ops in ``skip`` (exempt) not judged."""
    if len({id(op) for op in ops}) != len(ops):  # rejections are told apart by object identity
        ops = [replace(op) for op in ops]
    structural = gate(schema, tree, ops, GatePolicy(lenient=policy.lenient))
    batch_level = {id(r.op): str(r.reason) for r in structural.rejected if r.reason in _COUNTED_BY_MATCH}
    reasons: dict[int, str] = {}
    ref = _SchemaRef(schema)
    for i, op in enumerate(ops):
        if id(op) in batch_level:
            reasons[i] = batch_level[id(op)]
            continue
        if i in skip:
            continue
        old = tree.get(op.path) if op.path else None
        try:
            why = _judge_one(ref, op, old, policy, evidence)
        except TypeError:  # an unhashable value (a JSON list or object): judge without the cache
            why = _judge_one.__wrapped__(ref, op, old, policy, evidence)
        if why is not None:
            reasons[i] = why
    return reasons


def _read_prediction(predicted: Any, raw_text: str | None) -> tuple[list[Op] | None, int]:
    """(ops, parse error count); ops None when the prediction is unreadable (rule 1)."""
    if raw_text is not None and predicted is not None:
        raise ValueError("pass either predicted ops or raw_text, not both")
    text = raw_text if raw_text is not None else predicted if isinstance(predicted, str) else None
    if text is not None:
        parsed = parse_ops(text)
        return (list(parsed.ops) or None), len(parsed.errors)
    ops = list(predicted or ())
    if not all(isinstance(op, Op) for op in ops):
        raise TypeError("predicted ops must be engine Op objects (or pass the raw text)")
    return (ops or None), 0


def _pair_credit(pred: Op, gold: Op, similarity: Similarity) -> tuple[str, float]:
    if pred.type is not gold.type:
        return "type_mismatch", 0.0
    if pred.type in (OpType.DELETE, OpType.NO_OP):
        return "exact", EXACT
    p, g = normalise_text(pred.value), normalise_text(gold.value)
    if p == g and isinstance(pred.value, str):
        return "exact", EXACT
    return "partial", _clip01(similarity(pred.value if isinstance(pred.value, str) else "", gold.value or ""))


def _hits_declined(op: Op, declined: Sequence[Op], similarity: Similarity) -> bool:
    """A declined op of the op's type and path that it matches exactly or by ``DECLINED_MATCH``."""
    for d in declined:
        if d.type is op.type and d.path == op.path:
            kind, credit = _pair_credit(op, d, similarity)
            if kind == "exact" or credit >= DECLINED_MATCH:
                return True
    return False


def _match(
    preds: Sequence[Op], golds: Sequence[Op], similarity: Similarity
) -> tuple[list[tuple[int, int, str, float]], set[int], set[int]]:
    """Best-first one-to-one pairs by path: ([(pred i, gold j, kind, credit)], unmatched preds, golds)."""
    by_path: dict[str | None, list[int]] = {}
    for j, g in enumerate(golds):
        by_path.setdefault(g.path, []).append(j)
    candidates = []
    gold_keys: dict[int, tuple] = {}
    for i, p in enumerate(preds):
        for j in by_path.get(p.path, ()):
            kind, credit = _pair_credit(p, golds[j], similarity)
            if j not in gold_keys:
                gold_keys[j] = _key(golds[j])
            candidates.append((-credit, _key(p), gold_keys[j], i, j, kind, credit))
    candidates.sort(key=lambda c: c[:3])
    pairs, used_p, used_g = [], set(), set()
    for _, _, _, i, j, kind, credit in candidates:
        if i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
            pairs.append((i, j, kind, credit))
    return pairs, set(range(len(preds))) - used_p, set(range(len(golds))) - used_g


def score(
    predicted_ops: Sequence[Op] | str | None,
    gold_ops: Iterable[Op],
    tree: Tree | Mapping[str, str],
    turns: Iterable[Any],
    *,
    schema: Schema,
    declined_ops: Iterable[Op] = (),
    raw_text: str | None = None,
    similarity: Similarity | None = None,
    policy: GatePolicy = DEFAULT_POLICY,
    parse_errors: int = 0,
) -> ScoreReport:
    """Score one chunk's prediction against its gold and declined ops; see the module docstring.

    ``predicted_ops``: ops, or the raw model text (or pass the text as ``raw_text`` with
    ``predicted_ops=None``). ``tree``: the subject's tree the prediction was made against.
    ``turns``: the chunk's turns (mappings or objects with ``role`` and ``content``)."""
    if parse_errors < 0:
        raise ValueError("parse_errors must be >= 0")
    sim = similarity or token_f1
    preds, n_errors = _read_prediction(predicted_ops, raw_text)
    n_errors += parse_errors
    golds = [op for op in gold_ops if op.type is not OpType.NO_OP] or [Op.no_op()]
    if preds is None:
        return ScoreReport(-1.0, False, 0, len(golds), n_errors, raw=-1.0)
    tree = tree if isinstance(tree, Tree) else Tree.from_dict(tree)
    evidence = tuple(content for role, content in map(_turn, turns) if role == "user")
    declined = tuple(declined_ops)
    preds = sorted(preds, key=_key)  # canonical order: nothing below depends on the caller's order

    hit = {i for i, op in enumerate(preds) if declined and _hits_declined(op, declined, sim)}
    pool = [i for i in range(len(preds)) if i not in hit]
    pairs, unmatched_p, unmatched_g = _match([preds[i] for i in pool], golds, sim)
    exact_preds = {pool[i] for i, _, kind, _ in pairs if kind == "exact"}
    lone_no_op = len(preds) == 1 and preds[0].type is OpType.NO_OP
    redundant = sum(1 for i in unmatched_p if not (lone_no_op and preds[pool[i]].type is OpType.NO_OP))
    missing = sum(1 for j in unmatched_g if golds[j].type is not OpType.NO_OP)

    reasons = _gate_reasons(schema, tree, preds, policy, evidence, frozenset(exact_preds))
    counted = sorted(r for i, r in reasons.items() if r not in _COUNTED_BY_MATCH and i not in exact_preds)

    kinds = [kind for _, _, kind, _ in pairs]
    partial_credit = sum(credit for _, _, kind, credit in pairs if kind == "partial")
    raw = (
        kinds.count("exact") * EXACT
        + partial_credit
        + missing * MISSING
        + redundant * REDUNDANT
        + len(hit) * DECLINED
        + len(counted) * GATE
        + n_errors * PARSE_ERROR
    )
    denominator = max(len(golds), len(preds) + n_errors, 1)
    total = max(-1.0, min(1.0, raw / denominator))
    matches = tuple(Match(preds[pool[i]], golds[j], kind, credit) for i, j, kind, credit in pairs)
    return ScoreReport(
        total=total,
        format_ok=True,
        n_predicted=len(preds),
        n_gold=len(golds),
        parse_errors=n_errors,
        exact=kinds.count("exact"),
        partial=kinds.count("partial"),
        partial_credit=partial_credit,
        type_mismatch=kinds.count("type_mismatch"),
        missing=missing,
        redundant=redundant,
        declined_hits=len(hit),
        gate_rejections=len(counted),
        gate_reasons=tuple(counted),
        raw=raw,
        denominator=denominator,
        matches=matches,
    )
