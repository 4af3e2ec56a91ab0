"""Evidence recall metrics, shared by the recall benchmark and the evaluation harness.

Gold evidence is given as turn ids; the retrieval unit is the pair unit that
contains the turn (:func:`unit_index`). recall@k for one question is the
fraction of its gold units found among the first k retrieved units; questions
without gold evidence are skipped (and counted as such).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from memory.recall.units import Unit


def unit_index(units: Iterable[Unit]) -> dict[str, int]:
    """Map each turn id to the start_seq of the unit holding it."""
    return {turn.turn_id: u.start_seq for u in units for turn in u.turns}


def recall_at_k(retrieved: Sequence[Hashable], gold: Iterable[Hashable], k: int) -> float:
    """|gold ∩ retrieved[:k]| / |gold|; raises ValueError on empty gold or k < 1."""
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("recall is undefined without gold evidence")
    if k < 1:
        raise ValueError("k must be >= 1")
    seen: list[Hashable] = []
    for r in retrieved:
        if r not in seen:
            seen.append(r)
        if len(seen) == k:
            break
    return len(gold_set.intersection(seen)) / len(gold_set)


@dataclass(frozen=True)
class RecallQuestion:
    qid: str
    category: str
    gold_turns: tuple[str, ...]


@dataclass
class RecallReport:
    ks: tuple[int, ...]
    overall: dict[int, float] = field(default_factory=dict)
    per_category: dict[str, dict[int, float]] = field(default_factory=dict)
    n_scored: int = 0
    n_skipped: int = 0
    per_category_n: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "ks": list(self.ks),
            "overall": {f"@{k}": v for k, v in self.overall.items()},
            "per_category": {c: {f"@{k}": v for k, v in d.items()} for c, d in self.per_category.items()},
            "per_category_n": dict(self.per_category_n),
            "n_scored": self.n_scored,
            "n_skipped": self.n_skipped,
        }


def evaluate_recall(
    questions: Iterable[RecallQuestion],
    retrieved: Mapping[str, Sequence[Hashable]],
    turn_to_unit: Mapping[str, Hashable],
    *,
    ks: Sequence[int] = (5, 10),
) -> RecallReport:
    """Average recall@k over questions, overall and per category.

    `retrieved[qid]` is the ranked list of unit ids returned for that question;
    gold turn ids unknown to `turn_to_unit` are skipped (the question is skipped
    when none of its gold turns maps to a unit).
    """
    report = RecallReport(ks=tuple(ks))
    per_k: dict[int, list[float]] = defaultdict(list)
    per_cat: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for q in questions:
        gold = {turn_to_unit[t] for t in q.gold_turns if t in turn_to_unit}
        if not gold:
            report.n_skipped += 1
            continue
        if q.qid not in retrieved:
            raise KeyError(f"no retrieval result for question {q.qid!r}")
        report.n_scored += 1
        report.per_category_n[q.category] = report.per_category_n.get(q.category, 0) + 1
        for k in ks:
            r = recall_at_k(retrieved[q.qid], gold, k)
            per_k[k].append(r)
            per_cat[q.category][k].append(r)
    report.overall = {k: fmean(v) if v else 0.0 for k, v in per_k.items()}
    report.per_category = {c: {k: fmean(v) for k, v in d.items()} for c, d in sorted(per_cat.items())}
    return report
