"""Celery tasks of the ingestion pipeline besides the dispatcher. Thin: no payloads, ids only, the
work is in services.

- ``workers.dispatch`` lives in :mod:`workers.dispatcher` with the rounds it runs (``chunks_ready``
  asks for it, :func:`workers.base.send_once`); it is imported here so
  that Celery's autodiscovery (``app.autodiscover_tasks(["workers"])`` imports ``workers.tasks``)
  registers it.
- ``workers.sweep`` (periodic, see ``CELERY_BEAT_SCHEDULE``): closes windows of idle subjects
  and re-dispatches when chunks are ready (pending ones whose task was lost with the broker,
  or ones whose lease expired with a dead worker).
"""

from __future__ import annotations

from django.db import OperationalError

from memory.services.ingest import subjects_flush_idle
from workers.base import pt_task, send
from workers.dispatcher import dispatch
from workers.ordering import ready_chunks
from workers.schema_migrations import schema_migrate  # noqa: F401  (registers workers.schema_migrate)

__all__ = ["dispatch", "sweep"]


@pt_task(name="workers.sweep", queue="ingest", soft_time_limit=120, retry_for=(OperationalError,))
def sweep(self) -> dict:
    flushed = subjects_flush_idle()
    ready = ready_chunks().exists()
    if ready:
        send(dispatch)
    return {"flushed": flushed, "dispatched": ready}
