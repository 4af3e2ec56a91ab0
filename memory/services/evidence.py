"""Which applied chunks are confirmed in the evidence index (``Chunk.indexed_at``), so that
``workers.reconcile_indexing`` re-queues the spans a lost or failed indexing task left out.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memory.models import Chunk


def span_indexed(*, subject_id: int, start_seq: int, end_seq: int) -> int:
    """Confirm the applied chunks within messages start_seq..end_seq of the subject; how many."""
    return Chunk.objects.filter(
        subject_id=subject_id,
        status=Chunk.Status.APPLIED,
        indexed_at__isnull=True,
        start_seq__gte=start_seq,
        end_seq__lte=end_seq,
    ).update(indexed_at=timezone.now())


def unindexed_spans(*, older_than_s: float, limit: int = 200) -> list[tuple[int, int, int, int]]:
    """``(tenant_id, subject_id, start_seq, end_seq)`` of applied chunks not confirmed in the index,
    untouched for ``older_than_s`` (their own on-commit task has had its chance), oldest first (the
    partial index ``chunk_unindexed``)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    rows = (
        Chunk.objects.filter(status=Chunk.Status.APPLIED, indexed_at__isnull=True, updated_at__lt=cutoff)
        .order_by("updated_at", "pk")
        .values_list("subject__tenant_id", "subject_id", "start_seq", "end_seq")[:limit]
    )
    return [(int(t), int(s), int(a), int(b)) for t, s, a, b in rows]
