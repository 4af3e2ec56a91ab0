"""Celery tasks of the ingestion pipeline. Thin: no payloads, ids only, the work is in services.

- ``workers.dispatch``: run dispatcher rounds (cross-subject batches) until nothing is ready or
  the time budget is spent, then re-enqueue itself. A batch whose every job failed with a
  retryable model/transport error raises :class:`TransientError` -> retried with backoff (so is
  a database ``OperationalError``: connection lost, SQLite "database is locked").
- ``workers.sweep`` (periodic, see ``CELERY_BEAT_SCHEDULE``): closes windows of idle subjects
  and re-dispatches when chunks are ready (pending ones whose task was lost with the broker,
  or ones whose lease expired with a dead worker).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db import OperationalError

from memory.services.ingest import subjects_flush_idle
from workers.base import TransientError, pt_task, send
from workers.dispatcher import dispatch_round
from workers.ordering import ready_chunks

DISPATCH_BUDGET_S = 60.0


def _model_timeout() -> float:
    return float(settings.PERSONATREE.get("MEMLISTENER_TIMEOUT_S", 300.0))


@pt_task(
    name="workers.dispatch",
    queue="ingest",
    soft_time_limit=_model_timeout() + DISPATCH_BUDGET_S + 60,
    retry_for=(TransientError, OperationalError),
)
def dispatch(self) -> dict:
    from serving.client import get_listener_client

    client = get_listener_client()
    started = time.monotonic()
    totals = {"rounds": 0, "applied": 0, "failed": 0}
    while True:
        report = dispatch_round(client=client)
        if not report.claimed:
            return totals
        totals["rounds"] += 1
        totals["applied"] += report.applied
        totals["failed"] += report.failed
        if report.transient == report.claimed:
            raise TransientError(f"memlistener unavailable for all {report.claimed} jobs of the batch")
        if time.monotonic() - started > DISPATCH_BUDGET_S:
            send(dispatch)  # continue in a fresh task; this one returns
            return totals


@pt_task(name="workers.sweep", queue="ingest", soft_time_limit=120, retry_for=(OperationalError,))
def sweep(self) -> dict:
    flushed = subjects_flush_idle()
    ready = ready_chunks().exists()
    if ready:
        send(dispatch)
    return {"flushed": flushed, "dispatched": ready}
