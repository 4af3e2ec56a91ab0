"""Ingestion workers (Celery): dispatcher, per-subject ordering, task policy and metrics.

``requeue_chunks(chunk_ids)`` is the entry point the admin's "re-queue failed chunks" action
calls: failed chunks go back to ``pending`` with a fresh attempt budget and the dispatcher is
enqueued after commit.
"""

from __future__ import annotations


def requeue_chunks(chunk_ids) -> int:
    from memory.services.ingest import chunks_requeue

    return chunks_requeue(chunk_ids=[int(i) for i in chunk_ids])


__all__ = ["requeue_chunks"]
