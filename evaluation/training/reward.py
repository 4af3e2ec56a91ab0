"""The GRPO reward: :func:`memory.engine.scorer.score` of each completion against its example.

TRL's ``GRPOTrainer`` calls a reward function with ``prompts``, ``completions``, ``completion_ids``
and every other dataset column as a keyword argument (one value per completion; the installed TRL
1.16 also passes ``trainer_state``, ``log_extra`` and ``log_metric``). The columns used here are
the ones :mod:`evaluation.training.data` writes: ``gold``, ``negatives`` (the declined ops),
``tree``, ``turns``, ``pointing`` (JSON strings), ``schema_id``, ``schema_version`` and
``schema_document`` (a tenant's own schema as a JSON string, None for a shipped one; a dataset
without the column names shipped schemas only): :func:`evaluation.training.data.schema_of`.

A completion of a **pointing** prompt (the row's ``pointing`` holds its sentences and slots) is
mapped to ops the way the listener maps it (:func:`evaluation.training.pointing.reply_ops`); items
it cannot map count as unreadable (``PARSE_ERROR`` each), a reply that is not ``{"ops": [...]}``
scores -1. Any other completion is read as the full-enum op text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from evaluation.training.data import schema_of
from memory.engine.ops import Op
from memory.engine.scorer import score


def ops_of(items: Iterable[dict[str, Any]]) -> list[Op]:
    """Engine ops from an export line's ``gold`` / ``negatives`` (``origin`` and ``reason`` dropped)."""
    return [Op.from_dict({k: v for k, v in d.items() if k not in ("origin", "reason")}) for d in items]


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the last message of a conversational completion."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        return str(completion[-1].get("content") or "")
    return ""


class ScorerReward:
    """Callable reward for ``GRPOTrainer(reward_funcs=[ScorerReward()])``.

    ``record=True`` keeps ``(chunk_id, text, total)`` per scored completion in ``calls`` (tests).
    """

    __name__ = "scorer"

    def __init__(self, *, record: bool = False) -> None:
        self.record = record
        self.calls: list[tuple[int, str, float]] = []

    def __call__(
        self,
        prompts: list[Any],
        completions: list[Any],
        *,
        gold: list[str],
        negatives: list[str],
        tree: list[str],
        turns: list[str],
        schema_id: list[str],
        schema_version: list[int],
        chunk_id: list[int] | None = None,
        pointing: list[str] | None = None,
        schema_document: list[str | None] | None = None,
        **_: Any,
    ) -> list[float]:
        rewards = []
        for i, completion in enumerate(completions):
            text = completion_text(completion)
            context = json.loads(pointing[i]) if pointing else None
            subject_tree = json.loads(tree[i])
            predicted: Any = text
            errors = 0
            if context:
                from evaluation.training.pointing import reply_ops

                predicted, errors = reply_ops(text, context, subject_tree)
            report = score(
                predicted,
                ops_of(json.loads(gold[i])),
                subject_tree,
                json.loads(turns[i]),
                schema=schema_of(
                    schema_id[i],
                    int(schema_version[i]),
                    schema_document[i] if schema_document else None,
                    where=f"row of chunk {chunk_id[i] if chunk_id else '?'}",
                ),
                declined_ops=ops_of(json.loads(negatives[i])),
                parse_errors=errors,
            )
            rewards.append(float(report.total))
            if self.record:
                self.calls.append((int(chunk_id[i]) if chunk_id else -1, text, float(report.total)))
        return rewards
