"""Erasure bookkeeping outside the database: the evidence vectors' purge, reconciled.

``subject_erase`` leaves a :class:`~memory.models.Tombstone` with the subject's pk and no
``vectors_purged_at``; ``subject_erased`` (on commit) queues ``workers.erase_subject_vectors``.
That task, and the periodic ``workers.reconcile_erasures`` for every purge that did not complete
(Milvus unreachable past the task's retries, the task lost with the broker, a worker killed),
record the purge here once the index confirmed it. Deleting a subject's vectors is idempotent,
so a purge done twice is harmless.
"""

from __future__ import annotations

from django.utils import timezone

from memory.models import Tombstone


def pending_vector_purges(*, limit: int = 100) -> list[tuple[int, int]]:
    """``(tenant_id, subject_pk)`` of erased subjects whose vectors' purge is not recorded, oldest first."""
    rows = (
        Tombstone.objects.filter(vectors_purged_at__isnull=True, subject_pk__isnull=False)
        .order_by("erased_at", "pk")
        .values_list("tenant_id", "subject_pk")[:limit]
    )
    return [(int(t), int(s)) for t, s in rows]


def vectors_purged(*, tenant_id: int, subject_id: int) -> int:
    """Record that the index holds no vector of the erased subject any more; returns tombstones updated."""
    return Tombstone.objects.filter(
        tenant_id=tenant_id, subject_pk=subject_id, vectors_purged_at__isnull=True
    ).update(vectors_purged_at=timezone.now())
