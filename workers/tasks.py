"""Celery tasks of the ingestion pipeline. Thin: no payloads, ids only, the work is in services.

- ``workers.dispatch``: run dispatcher rounds (cross-subject batches) until nothing is ready or
  the time budget is spent, then re-enqueue itself. A batch whose every job failed with a
  retryable model/transport error raises :class:`TransientError` -> retried with backoff (so is
  a database ``OperationalError``: connection lost, SQLite "database is locked").
- ``workers.sweep`` (periodic, see ``CELERY_BEAT_SCHEDULE``): closes windows of idle subjects
  and re-dispatches when chunks are ready (pending ones whose task was lost with the broker,
  or ones whose lease expired with a dead worker).

Deduplication: every ingest call asks for a dispatch (:func:`dispatch_soon`, after commit). While a
``workers.dispatch`` is queued and has not started, further requests are dropped: that task claims
whatever is ready when it starts, and it clears the ``queued`` mark in the shared cache before its
first claim, so a chunk committed after that mark was cleared asks for (and gets) a new task. At
most one dispatch waits in the queue, however fast messages arrive. The mark expires after
``DISPATCH_QUEUED_TTL_S`` (a task lost with the broker holds requests back that long at most; the
sweep, which does not deduplicate, re-dispatches sooner). Only with a cache that all processes
share (production: Redis) and a real broker; with the per-process default cache or in eager mode
every request is sent.
"""

from __future__ import annotations

import logging
import time

from django.db import OperationalError
from django.dispatch import receiver

from memory import conf
from memory.services.ingest import subjects_flush_idle
from memory.signals import chunks_ready
from workers import metrics
from workers.base import TransientError, pt_task, send
from workers.dispatcher import dispatch_round
from workers.ordering import ready_chunks

DISPATCH_BUDGET_S = 60.0

logger = logging.getLogger("personatree.tasks")


DISPATCH_QUEUED_KEY = "personatree:workers.dispatch:queued"
DISPATCH_QUEUED_TTL_S = 60


def _dedup_cache():
    """The shared cache for the ``queued`` mark, or None when dispatch requests are not deduplicated."""
    from celery import current_app
    from django.core.cache import caches
    from django.core.cache.backends.dummy import DummyCache
    from django.core.cache.backends.locmem import LocMemCache

    cache = caches["default"]
    if current_app.conf.task_always_eager or isinstance(cache, LocMemCache | DummyCache):
        return None
    return cache


def dispatch_soon(*, tenant_id: int | None = None) -> None:
    """Send ``workers.dispatch`` unless one is already queued and not started (see the module docstring).
    Call it after the commit that made chunks ready (``memory.services.ingest.schedule_dispatch``)."""
    cache = _dedup_cache()
    if cache is not None:
        try:
            if not cache.add(DISPATCH_QUEUED_KEY, time.time(), DISPATCH_QUEUED_TTL_S):
                metrics.incr("dispatch_deduplicated")
                return
        except Exception:  # the cache is down: send (a duplicate dispatch is harmless)
            logger.warning("dispatch dedup cache unavailable; sending", exc_info=True)
            cache = None
    if not send(dispatch, tenant_id=tenant_id) and cache is not None:
        _clear_queued_mark()  # nothing was queued: do not hold the next request back


@receiver(chunks_ready, dispatch_uid="workers.tasks.chunks_ready")
def _dispatch_when_chunks_are_ready(sender, tenant_id: int | None = None, **_kwargs) -> None:
    dispatch_soon(tenant_id=tenant_id)


def _clear_queued_mark() -> None:
    cache = _dedup_cache()
    if cache is not None:
        try:
            cache.delete(DISPATCH_QUEUED_KEY)
        except Exception:  # the mark expires on its own
            logger.warning("could not clear the dispatch mark", exc_info=True)


def _model_timeout() -> float:
    return conf.get().listener.timeout_s


@pt_task(
    name="workers.dispatch",
    queue="ingest",
    soft_time_limit=_model_timeout() + DISPATCH_BUDGET_S + 60,
    retry_for=(TransientError, OperationalError),
)
def dispatch(self) -> dict:
    from serving.client import get_listener_client

    _clear_queued_mark()  # before the first claim: requests from now on get a task of their own
    client = get_listener_client(conf.listener_client_config())
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
            dispatch_soon()  # continue in a fresh task; this one returns
            return totals


@pt_task(name="workers.sweep", queue="ingest", soft_time_limit=120, retry_for=(OperationalError,))
def sweep(self) -> dict:
    flushed = subjects_flush_idle()
    ready = ready_chunks().exists()
    if ready:
        send(dispatch)
    return {"flushed": flushed, "dispatched": ready}
