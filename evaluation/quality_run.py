"""The LLM-free quality phase of a LoCoMo run: what the store holds, measured with `quality.py`.

- Per subject, `value_metrics` over its applied model ADD/UPDATE OpRecords; each op's chunk text
  comes from the subject's messages in `source_start_seq..source_end_seq` (role "user" = the
  speaker, "assistant" = the other speaker).
- Per subject, `observation_coverage` of the speaker's LoCoMo `observation` facts (within the
  session slice) by the final tree, embedded with the shipped all-MiniLM-L6-v2
  (`serving.embedder.get_embedder("minilm")`, whatever the recall index is configured with, so runs
  stay comparable).
- Pooled rows: `<conversation>:both` per conversation and `all` when there are several.
- Context answer recall: per question and answer mode, the share of the gold answer's tokens in the
  context handed to the responder (`context_recall_section` aggregates the rows).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from evaluation.quality import TAUS, observation_coverage, pool_coverage, value_metrics
from memory.engine.dates import DATE_EVIDENCE, chunk_evidence
from memory.engine.render import token_counter_name
from memory.models import Message, OpRecord, Subject
from memory.selectors import tree_current

EMBEDDER = "minilm (all-MiniLM-L6-v2)"


def default_embed(texts: Sequence[str]) -> np.ndarray:
    from serving.embedder import get_embedder

    return get_embedder("minilm").embed(list(texts))


def op_value_rows(subject: Subject) -> list[dict]:
    """One row per applied model ADD/UPDATE of `subject` (see `quality.value_metrics`), in log order."""
    ops = list(
        OpRecord.objects.filter(
            subject=subject,
            status=OpRecord.Status.APPLIED,
            actor_kind=OpRecord.ActorKind.MODEL,
            op_type__in=("ADD", "UPDATE"),
            new_value__isnull=False,
        )
        .order_by("id")
        .values("new_value", "old_value", "source_start_seq", "source_end_seq")
    )
    messages = list(
        Message.objects.filter(subject=subject).order_by("seq").values_list("seq", "role", "content", "ts")
    )
    rows = []
    for op in ops:
        lo, hi = op["source_start_seq"], op["source_end_seq"]
        span = [
            (role, text, ts)
            for seq, role, text, ts in messages
            if lo is not None and hi is not None and lo <= seq <= hi
        ]
        # the user's words plus the dates the gate derives from their timestamps ("yesterday")
        user = chunk_evidence({"role": r, "content": t, "ts": ts} for r, t, ts in span)
        rows.append(
            {
                "new_value": op["new_value"],
                "old_value": op["old_value"],
                "user_text": "\n".join(u.removeprefix(DATE_EVIDENCE) for u in user),
                "other_text": "\n".join(t for r, t, _ in span if r == Message.Role.ASSISTANT),
            }
        )
    return rows


def quality_section(
    subjects: Iterable[tuple[str, str, Subject, list[str]]],
    embed: Callable[[Sequence[str]], np.ndarray] = default_embed,
) -> dict:
    """`subjects`: (conversation id, speaker, subject, observation facts). Returns the results section."""
    rows_by_conv: dict[str, list] = defaultdict(list)
    cov_by_conv: dict[str, list] = defaultdict(list)
    out: dict[str, dict] = {}
    for conv, speaker, subject, facts in subjects:
        rows = op_value_rows(subject)
        tree = dict(tree_current(Subject.objects.select_related("head").get(pk=subject.pk)))
        cov = observation_coverage(tree, facts, embed, TAUS)
        out[f"{conv}:{speaker}"] = {"values": value_metrics(rows), "coverage": cov}
        rows_by_conv[conv].extend(rows)
        cov_by_conv[conv].append(cov)
    for conv in list(rows_by_conv):
        if len(cov_by_conv[conv]) > 1:
            out[f"{conv}:both"] = {
                "values": value_metrics(rows_by_conv[conv]),
                "coverage": pool_coverage(cov_by_conv[conv]),
            }
    if len(rows_by_conv) > 1:
        out["all"] = {
            "values": value_metrics([r for rows in rows_by_conv.values() for r in rows]),
            "coverage": pool_coverage([c for covs in cov_by_conv.values() for c in covs]),
        }
    return {
        "embedder": EMBEDDER,
        "taus": list(TAUS),
        "tree_tokens": f"path: value lines, {token_counter_name()}",
        "rows": out,
    }


__all__ = ["default_embed", "op_value_rows", "quality_section"]
