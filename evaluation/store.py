"""Reads of the memory store the harness needs (op statistics, seq maps, versions as of a seq).

Everything here reads what the real pipeline wrote; nothing writes except `eval_tenant`,
which goes through the store's own service.
"""

from __future__ import annotations

from collections import defaultdict

from django.db import IntegrityError, transaction

from evaluation.metrics import ChunkOps
from memory.models import Chunk, Message, OpRecord, Subject, Tenant, TreeVersion
from memory.services import ServiceError
from memory.services.subjects import tenant_create


def eval_tenant(name: str, *, reuse: bool = False) -> tuple[Tenant, bool]:
    """The run's tenant: a fresh one, or (with `reuse`) an earlier run's, whose ingested subjects are then
    extended idempotently instead of re-ingested. No human reviewer takes part in an evaluation, so
    special-tier ops are not held for review (the held count would otherwise silently shrink the trees);
    mass deletes still are. Returns (tenant, reused)."""
    try:
        with transaction.atomic():
            return tenant_create(name=name, review_special_tier=False), False
    except (IntegrityError, ServiceError) as exc:
        # It exists: made by an earlier run, or by a run started at the same time (one per speaker),
        # whose insert can land between tenant_create's check and its own (IntegrityError).
        if reuse and getattr(exc, "code", "duplicate") == "duplicate":
            return Tenant.objects.get(name=name), True
        raise


def seq_by_key(subject: Subject) -> dict[str, int]:
    """idempotency key -> message seq (backfill keys are derived from the source position)."""
    return dict(
        Message.objects.filter(subject=subject, idempotency_key__isnull=False).values_list(
            "idempotency_key", "seq"
        )
    )


def version_as_of_seq(subject: Subject, last_seq: int) -> int:
    """The newest version written by a chunk lying wholly at or before `last_seq` (0 = empty tree).

    Versions of non-chunk writes (admin, revert) are not produced during an evaluation run; a version
    whose chunk reaches past `last_seq` would leak later dialogue and is never chosen.
    """
    number = (
        TreeVersion.objects.filter(subject=subject, chunk__isnull=False, chunk__end_seq__lte=last_seq)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    return int(number or 0)


def chunk_ops(subject: Subject, usage: dict[int, dict] | None = None) -> list[ChunkOps]:
    """Per processed chunk of `subject`: op types and gate outcomes from its OpRecords.

    `usage` (chunk id -> {"model_calls", "prompt_tokens", "completion_tokens", "failed"}) comes from the
    harness's counting client, because OpRecords carry no token counts. A chunk that failed (no
    OpRecords, status failed) is a failed call.
    """
    usage = usage or {}
    by_chunk: dict[int, list[OpRecord]] = defaultdict(list)
    for rec in OpRecord.objects.filter(subject=subject, chunk__isnull=False).order_by("id"):
        by_chunk[rec.chunk_id].append(rec)
    out = []
    for chunk in Chunk.objects.filter(subject=subject).order_by("start_seq"):
        recs = by_chunk.get(chunk.pk, [])
        u = usage.get(chunk.pk, {})
        failed = chunk.status == Chunk.Status.FAILED or (bool(u.get("failed")) and not recs)
        if chunk.status in (Chunk.Status.PENDING, Chunk.Status.PROCESSING) and not u:
            continue  # never sent to the model (e.g. a partial window at the end)
        out.append(
            ChunkOps(
                op_types=tuple(r.op_type for r in recs if r.reason_code != "PARSE_ERROR"),
                rejections=tuple(
                    r.reason_code
                    for r in recs
                    if r.status == OpRecord.Status.REJECTED and r.reason_code != "PARSE_ERROR"
                ),
                parse_errors=sum(r.reason_code == "PARSE_ERROR" for r in recs),
                model_calls=int(u.get("model_calls", 1)),
                prompt_tokens=int(u.get("prompt_tokens", 0)),
                completion_tokens=int(u.get("completion_tokens", 0)),
                failed=failed,
                extra={"pending_review": sum(r.status == OpRecord.Status.PENDING_REVIEW for r in recs)},
            )
        )
    return out
