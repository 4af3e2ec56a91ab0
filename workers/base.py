"""The one task decorator (:func:`pt_task`: name, queue, limits, retries; ``acks_late``, so
idempotent), the metrics every task reports (Celery's run signals) and the senders: a broker that
is down is logged, not raised (the sweeps find the rows).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from celery import Task
from celery.exceptions import Retry
from celery.signals import before_task_publish, task_postrun, task_prerun
from django.db import transaction

from personatree_site.celery import app
from personatree_site.ops.logging import TENANT_TASK_HEADER as TENANT
from personatree_site.ops.logging import task_header
from workers import metrics

logger = logging.getLogger("personatree.tasks")

ENQUEUED_AT = "pt_enqueued_at"
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.1, "interval_step": 0.2, "interval_max": 0.5}
OUTCOMES = {"SUCCESS": "ok", "RETRY": "retry"}  # any other end state is an error

QUEUES: dict[str, str] = {}  # task name -> queue, filled by @pt_task
_running: dict[str, tuple[float, str]] = {}  # task id -> (monotonic start, tenant)


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


@task_prerun.connect
def _task_started(task_id=None, task=None, kwargs=None, **_kw) -> None:
    if task is None or task.name not in QUEUES:
        return
    tenant = str(task_header(task.request, TENANT) or (kwargs or {}).get("tenant_id") or "-")
    if (enqueued_at := task_header(task.request, ENQUEUED_AT)) is not None:
        metrics.observe("task_queue_wait_seconds", max(0.0, time.time() - float(enqueued_at)), task=task.name)
    _running[task_id] = (time.monotonic(), tenant)


@task_postrun.connect
def _task_finished(task_id=None, task=None, state=None, **_kw) -> None:
    if (started := _running.pop(task_id, None)) is None:
        return
    elapsed, tenant = time.monotonic() - started[0], started[1]
    outcome = OUTCOMES.get(state, "error")
    metrics.observe("task_duration_seconds", elapsed, task=task.name, tenant=tenant, outcome=outcome)
    metrics.incr("task_runs", task=task.name, tenant=tenant, outcome=outcome)
    logger.info("task %s %s in %.3fs (tenant %s)", task.name, outcome, elapsed, tenant)


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
) -> Callable:
    """Register ``fn(self, *ids)`` as the task ``name`` with the project's policy (below)."""

    def decorate(fn: Callable) -> Task:
        QUEUES[name] = queue
        return app.task(
            bind=True,
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

    return decorate


@dataclass
class Published:
    sent: bool = True


@contextmanager
def publishing(task: Task, args: tuple = ()) -> Iterator[Published]:
    """Around one ``apply_async``: a broker failure, or an eager run that failed, is logged and
    ``sent`` is False (the sweep finds the work); the caller's commit is never lost."""
    outcome = Published()
    try:
        yield outcome
    except Retry:  # eager mode only: the task asked to be retried; the next dispatch/sweep does it
        logger.warning("%s%r will be retried by the next dispatch (eager mode)", task.name, args)
    except Exception:
        logger.exception(
            "could not run/publish %s%r; the periodic sweep will pick the work up", task.name, args
        )
        outcome.sent = False


def publish_options(tenant_id: int | None) -> dict[str, Any]:
    """``apply_async``'s options: the tenant header and a short publish retry."""
    headers = {TENANT: str(tenant_id)} if tenant_id is not None else {}
    return {"headers": headers, "retry": True, "retry_policy": PUBLISH_RETRY}


def send(task: Task, *args, tenant_id: int | None = None, countdown: float | None = None) -> bool:
    """Publish now; whether it was published or run."""
    with publishing(task, args) as published:
        task.apply_async(args=args, countdown=countdown, **publish_options(tenant_id))
    return published.sent


def enqueue_on_commit(task: Task, *args, tenant_id: int | None = None) -> None:
    """Send ``task(*args)`` once the current transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: send(task, *args, tenant_id=tenant_id))
