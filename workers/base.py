"""The one task decorator (:func:`pt_task`: name, queue, limits, retries, metrics; ``acks_late``, so
idempotent) and the senders: a broker that is down is logged, not raised (the sweeps find the rows).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery import Task
from celery.exceptions import Retry
from celery.signals import before_task_publish
from django.db import transaction
from django.dispatch import Signal

from personatree_site.celery import app
from personatree_site.ops.logging import TENANT_TASK_HEADER as TENANT
from personatree_site.ops.logging import task_header
from workers import metrics

logger = logging.getLogger("personatree.tasks")

ENQUEUED_AT = "pt_enqueued_at"
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.1, "interval_step": 0.2, "interval_max": 0.5}


QUEUES: dict[str, str] = {}  # task name -> queue, filled by @pt_task
ONCE: set[str] = set()  # tasks asked for with send_once: they clear their queued mark when they start
QUEUED_TTL_S = 60


def route_task(name, args, kwargs, options, task=None, **_kw):
    """The Celery router (``CELERY_TASK_ROUTES``): each task goes to the queue its decorator names."""
    queue = QUEUES.get(name)
    return {"queue": queue} if queue else None


class TransientError(Exception):
    """Retry the task later (model or transport unavailable)."""


@before_task_publish.connect
def _stamp_enqueue_time(headers=None, **_kwargs) -> None:
    if headers is not None:
        headers.setdefault(ENQUEUED_AT, time.time())


class PersonaTreeTask(Task):
    abstract = True

    def __call__(self, *args, **kwargs):
        started = time.monotonic()
        tenant = str(task_header(self.request, TENANT) or kwargs.get("tenant_id") or "-")
        if (enqueued_at := task_header(self.request, ENQUEUED_AT)) is not None:
            metrics.observe(
                "task_queue_wait_seconds", max(0.0, time.time() - float(enqueued_at)), task=self.name
            )
        if self.name in ONCE:
            _clear_queued_mark(self)  # before any work: requests from now on get a task of their own
        outcome = "ok"
        try:
            return super().__call__(*args, **kwargs)
        except Retry:
            outcome = "retry"
            raise
        except Exception:
            outcome = "error"
            raise
        finally:
            elapsed = time.monotonic() - started
            metrics.observe("task_duration_seconds", elapsed, task=self.name, tenant=tenant, outcome=outcome)
            metrics.incr("task_runs", task=self.name, tenant=tenant, outcome=outcome)
            logger.info("task %s %s in %.3fs (tenant %s)", self.name, outcome, elapsed, tenant)


def when_read(setting: Callable[[], Any]) -> Any:
    """A task option read when Celery reads it, not at import: a bad ``PERSONATREE_*`` value is then the
    system check's error (``personatree.E00x``) instead of a failed Django start."""
    return property(lambda _task: setting())


def pt_task(
    *,
    name: str,
    queue: str = "ingest",
    soft_time_limit: float = 600,
    time_limit: float | None = None,
    max_retries: int = 8,
    retry_for: tuple[type[BaseException], ...] = (TransientError,),
    backoff_max: int = 300,
    backoff: int = 1,
    sent_on: tuple[Signal, ...] = (),
) -> Callable:
    """Register ``fn(self, *ids)`` as the task ``name`` with the project's policy (below).
    ``sent_on``: signals (their ``tenant_id``) that ask for the task with :func:`send_once`."""

    def decorate(fn: Callable) -> Task:
        QUEUES[name] = queue
        task = app.task(
            bind=True,
            base=PersonaTreeTask,
            name=name,
            acks_late=True,
            reject_on_worker_lost=True,
            soft_time_limit=soft_time_limit,
            time_limit=time_limit or soft_time_limit + 30,
            autoretry_for=retry_for,
            retry_backoff=backoff,  # seconds before the first retry, doubled for each next one
            retry_backoff_max=backoff_max,
            retry_jitter=True,
            max_retries=max_retries,
        )(fn)
        if sent_on:
            ONCE.add(name)

            def ask(sender, tenant_id: int | None = None, **_kwargs) -> None:
                send_once(task, tenant_id=tenant_id)

            for signal in sent_on:
                signal.connect(ask, weak=False, dispatch_uid=f"{name}:asked")
        return task

    return decorate


def send(task: Task, *args, tenant_id: int | None = None, countdown: float | None = None) -> bool:
    """Publish now (a broker failure is logged: the sweep finds the work); whether it was published or run."""
    headers = {TENANT: str(tenant_id)} if tenant_id is not None else {}
    try:
        task.apply_async(
            args=args, headers=headers, countdown=countdown, retry=True, retry_policy=PUBLISH_RETRY
        )
    except Retry:  # eager mode only: the task asked to be retried; the next dispatch/sweep does it
        logger.warning("%s%r will be retried by the next dispatch (eager mode)", task.name, args)
    except Exception:  # broker down, or an eager run that failed: never lose the caller's commit
        logger.exception(
            "could not run/publish %s%r; the periodic sweep will pick the work up", task.name, args
        )
        return False
    return True


def queued_key(task: Task) -> str:
    return f"personatree:{task.name}:queued"


def _dedup_cache():
    """The shared cache for the ``queued`` marks, or None when requests are not deduplicated."""
    from django.core.cache import caches
    from django.core.cache.backends.dummy import DummyCache
    from django.core.cache.backends.locmem import LocMemCache

    cache = caches["default"]
    if app.conf.task_always_eager or isinstance(cache, LocMemCache | DummyCache):
        return None
    return cache


def send_once(task: Task, *, tenant_id: int | None = None) -> None:
    """Send ``task`` unless one is queued and not started (its mark, cleared when it starts, expires
    after ``QUEUED_TTL_S``); with a per-process cache or in eager mode every request is sent."""
    cache = _dedup_cache()
    if cache is not None:
        try:
            if not cache.add(queued_key(task), time.time(), QUEUED_TTL_S):
                metrics.incr("dispatch_deduplicated")  # workers.dispatch is the one such task
                return
        except Exception:  # the cache is down: send (a duplicate task is harmless)
            logger.warning("task dedup cache unavailable; sending", exc_info=True)
            cache = None
    if not send(task, tenant_id=tenant_id) and cache is not None:
        _clear_queued_mark(task)  # nothing was queued: do not hold the next request back


def _clear_queued_mark(task: Task) -> None:
    if (cache := _dedup_cache()) is not None:
        try:
            cache.delete(queued_key(task))
        except Exception:  # the mark expires on its own
            logger.warning("could not clear the queued mark of %s", task.name, exc_info=True)


def enqueue_on_commit(task: Task, *args, tenant_id: int | None = None) -> None:
    """Send ``task(*args)`` once the current transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: send(task, *args, tenant_id=tenant_id))
