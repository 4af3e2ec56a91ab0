"""Ingestion workers (Celery): dispatcher, per-subject ordering, task policy and metrics.

``requeue_chunks(chunk_ids)`` is the entry point the admin's "re-queue failed chunks" action
calls: failed chunks go back to ``pending`` with a fresh attempt budget and the dispatcher is
enqueued after commit.

``when_read(setting)`` makes a ``@pt_task`` option (a limit, ``max_retries``) read the settings when
Celery reads it rather than when the task's module is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def requeue_chunks(chunk_ids) -> int:
    from memory.services.ingest import chunks_requeue

    return chunks_requeue(chunk_ids=[int(i) for i in chunk_ids])


def when_read(setting: Callable[[], Any]) -> Any:
    """A task option that reads the settings whenever Celery reads it (a property of the task class:
    at worker start, on each retry), not when the module is imported: a bad ``PERSONATREE_*`` value
    is then reported by the system check (``personatree.E00x``) instead of failing Django's start."""
    return property(lambda _task: setting())


__all__ = ["requeue_chunks", "when_read"]
