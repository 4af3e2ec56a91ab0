"""Aggregation of per-item outcomes into the numbers the report shows (pure Python + numpy).

- `accuracy_table`: accuracy overall and per group (PersonaMem `question_type`, LoCoMo category)
  with counts; failed/unparsed model calls are counted and scored wrong.
- `distribution`: median / p90 / mean / max of e.g. memory-context tokens per mode.
- `op_stats`: from per-chunk op outcomes (built from the store's OpRecords): schema-valid rate,
  gate rejections by reason, NO_OP rate, model calls and tokens per chunk.
- `recall_section`: evidence recall@k per category, from the recall package's own `evaluate_recall`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

# Gate reasons that mean the model's output did not fit the schema (as opposed to tree state).
SCHEMA_REASONS = frozenset({"UNKNOWN_PATH", "NOT_A_LEAF", "VALUE_NOT_STRING", "PARSE_ERROR"})


@dataclass(frozen=True)
class Outcome:
    group: str
    correct: bool
    failed: bool = False  # the model call failed or its reply could not be read
    score: float | None = None  # graded score (LoCoMo F1); None for plain right/wrong


def accuracy_table(outcomes: Iterable[Outcome]) -> dict:
    rows: dict[str, list[Outcome]] = defaultdict(list)
    everything: list[Outcome] = []
    for o in outcomes:
        rows[o.group].append(o)
        everything.append(o)

    def summarise(items: list[Outcome]) -> dict:
        n = len(items)
        correct = sum(o.correct for o in items)
        scores = [o.score for o in items if o.score is not None]
        out = {
            "n": n,
            "correct": correct,
            "failed": sum(o.failed for o in items),
            "accuracy": round(correct / n, 4) if n else None,
        }
        if scores:
            out["mean_score"] = round(float(np.mean(scores)), 4)
        return out

    return {"overall": summarise(everything), "per_group": {g: summarise(v) for g, v in sorted(rows.items())}}


def distribution(values: Sequence[float]) -> dict:
    if not values:
        return {"n": 0, "median": None, "p90": None, "mean": None, "max": None}
    arr = np.asarray(values, dtype=float)
    return {
        "n": int(arr.size),
        "median": round(float(np.median(arr)), 2),
        "p90": round(float(np.percentile(arr, 90)), 2),
        "mean": round(float(arr.mean()), 2),
        "max": round(float(arr.max()), 2),
    }


@dataclass(frozen=True)
class ChunkOps:
    """What one processed chunk produced (one MemListener call)."""

    op_types: tuple[str, ...] = ()  # proposed ops' types, e.g. ("ADD", "UPDATE")
    rejections: tuple[str, ...] = ()  # gate reasons of rejected ops
    parse_errors: int = 0
    model_calls: int = 1
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: bool = False  # the call failed (no usable output)
    extra: dict = field(default_factory=dict)

    @property
    def schema_valid(self) -> bool:
        return not self.failed and self.parse_errors == 0 and not (set(self.rejections) & SCHEMA_REASONS)

    @property
    def is_no_op(self) -> bool:
        return not self.failed and tuple(self.op_types) == ("NO_OP",)


def op_stats(chunks: Iterable[ChunkOps]) -> dict:
    items = list(chunks)
    n = len(items)
    types: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for c in items:
        types.update(c.op_types)
        reasons.update(c.rejections)
    proposed = sum(types.values())
    rejected = sum(reasons.values())

    def rate(k: int, d: int) -> float | None:
        return round(k / d, 4) if d else None

    return {
        "chunks": n,
        "failed_calls": sum(c.failed for c in items),
        "schema_valid_rate": rate(sum(c.schema_valid for c in items), n),
        "no_op_rate": rate(sum(c.is_no_op for c in items), n),
        "ops_proposed": proposed,
        "ops_by_type": dict(sorted(types.items())),
        "ops_rejected": rejected,
        "gate_rejections_by_reason": dict(sorted(reasons.items())),
        "op_accept_rate": rate(proposed - rejected, proposed),
        "model_calls_per_chunk": rate(sum(c.model_calls for c in items), n),
        "prompt_tokens_per_chunk": distribution([c.prompt_tokens for c in items]),
        "completion_tokens_per_chunk": distribution([c.completion_tokens for c in items]),
    }


def recall_section(report, names: dict[str, str] | None = None) -> dict:
    """Render a `evaluation.recall_metrics.RecallReport` (the recall package's own recall@k) for results.json."""
    names = names or {}

    def row(n: int, values: dict[int, float]) -> dict:
        return {"n": n, **{f"recall@{k}": round(values.get(k, 0.0), 4) if n else None for k in report.ks}}

    return {
        "overall": row(report.n_scored, report.overall),
        "per_group": {
            names.get(c, c): row(report.per_category_n.get(c, 0), v)
            for c, v in sorted(report.per_category.items())
        },
        "skipped_without_evidence": report.n_skipped,
    }
