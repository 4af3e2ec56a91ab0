"""Webhook deliveries: the store's signals become delivery rows after commit (never raising into it),
and ``workers.deliver_webhook`` POSTs each while it holds a tenant slot, retrying with backoff up
to ``WEBHOOK_MAX_ATTEMPTS`` counted in the database (docs/WEBHOOKS.md, docs/RELIABILITY.md).
"""

from __future__ import annotations

import logging
import random
import time

import httpx
from celery.exceptions import SoftTimeLimitExceeded
from django.dispatch import receiver

from memory import conf
from memory.services import webhook_deliveries as deliveries
from memory.services import webhooks as service
from memory.services.webhook_targets import WebhookUrlRefused, target_resolve
from memory.signals import chunk_failed, review_decided, subject_erased, version_applied
from workers import webhook_http
from workers.base import pt_task, send, when_read
from workers.webhook_slots import delivery_slot, mark_waiting, waiting

logger = logging.getLogger("personatree.webhooks")

QUEUE = "webhooks"
#: Retry n waits up to BACKOFF_S * 2**(n-1) seconds (full jitter), at most BACKOFF_MAX_S: with the
#: default 6 attempts a receiver may be down for several minutes without losing an event.
BACKOFF_S = 30
BACKOFF_MAX_S = 600
SOFT_TIME_LIMIT_S = 120
#: A delivery without a free slot of its tenant is sent again after this long (plus jitter).
SLOT_WAIT_S = 5.0
#: A pending delivery with no attempt for this long lost its task (longer than any retry wait plus
#: the task's hard time limit).
ORPHAN_AFTER_S = BACKOFF_MAX_S + SOFT_TIME_LIMIT_S + 180


class WebhookRetry(Exception):
    """The receiver failed in a way worth another attempt (5xx, timeout, connection error)."""


def _attempt(outgoing) -> tuple[int | None, str, bool]:
    """POST once: ``(status code or None, error, retryable)``; never raises but for interpreter exits."""
    try:
        target = target_resolve(outgoing.url, resolve=True)
        status_code = webhook_http.post(
            target, body=outgoing.body, headers=outgoing.headers, timeout_s=conf.get().webhooks.timeout_s
        )
    except WebhookUrlRefused as exc:
        return None, f"refused: {exc.message}", False
    except (httpx.InvalidURL, httpx.UnsupportedProtocol, UnicodeError) as exc:
        return None, f"invalid URL: {type(exc).__name__}", False
    except httpx.TimeoutException as exc:
        return None, f"timeout: {type(exc).__name__}", True
    except httpx.TransportError as exc:  # the OS message may name the address: the type only
        return None, f"connection error: {type(exc).__name__}", True
    except SoftTimeLimitExceeded:
        return None, "time limit: the attempt outlived the task's soft time limit", True
    except Exception as exc:
        logger.exception("webhook attempt failed unexpectedly")
        return None, f"error: {type(exc).__name__}", True
    ok = 200 <= status_code < 300
    return status_code, "" if ok else f"HTTP {status_code}", deliveries.retryable_status(status_code)


@pt_task(
    name="workers.deliver_webhook",
    queue=QUEUE,
    soft_time_limit=SOFT_TIME_LIMIT_S,
    max_retries=when_read(lambda: conf.get().webhooks.max_attempts - 1),  # read when retrying
    retry_for=(WebhookRetry,),
    backoff=BACKOFF_S,
    backoff_max=BACKOFF_MAX_S,
)
def deliver_webhook(self, delivery_id: int) -> str:
    """POST the delivery once: ``delivered``, ``failed``, ``deferred`` (no free slot of its tenant: sent
    again shortly) or ``skipped`` (nothing to send)."""
    outgoing = deliveries.webhook_delivery_prepare(delivery_id=int(delivery_id))
    if outgoing is None:
        return "skipped"
    cap = conf.get().webhooks.max_concurrent_per_tenant
    with delivery_slot(outgoing.tenant_id, cap=cap, ttl_s=SOFT_TIME_LIMIT_S + 60) as held:
        if not held:
            if not self.request.is_eager:  # eager (development): the sweep sends it again
                wait = SLOT_WAIT_S * (1 + random.random())  # noqa: S311  (jitter, not a secret)
                send(deliver_webhook, int(delivery_id), tenant_id=outgoing.tenant_id, countdown=wait)
                mark_waiting(int(delivery_id), ttl_s=ORPHAN_AFTER_S)
            return "deferred"
        started = time.monotonic()
        status_code, error, retryable = _attempt(outgoing)
        duration_ms = (time.monotonic() - started) * 1000
    outcome = deliveries.webhook_attempt_record(
        delivery_id=int(delivery_id),
        status_code=status_code,
        error=error,
        duration_ms=duration_ms,
        retryable=retryable,
    )
    if outcome == "retry":
        raise WebhookRetry(f"delivery {delivery_id}: {error}")
    return outcome


@pt_task(name="workers.sweep_webhooks", queue=QUEUE, soft_time_limit=60)
def sweep_webhooks(self) -> dict:
    """Send again deliveries whose task was lost (not those waiting for a slot); close spent ones."""
    orphans = deliveries.webhook_deliveries_orphaned(idle_s=ORPHAN_AFTER_S)
    alive = waiting([item.delivery_id for item in orphans])
    queued = [item for item in orphans if item.delivery_id not in alive]
    _deliver(queued)
    return {"resent": len(queued)}


def _deliver(queued) -> None:
    for item in queued:
        send(deliver_webhook, item.delivery_id, tenant_id=item.tenant_id)


def _queue_event(make, what: str, **kwargs) -> None:
    """Queue one event's deliveries after the store's commit; a failure is logged, never raised."""
    try:
        _deliver(make(**kwargs))
    except Exception:
        logger.exception("webhooks: %s not queued", what)


@receiver(version_applied, dispatch_uid="workers.webhooks.version_applied")
def _on_version_applied(sender, subject_id: int, version: int, **_kwargs) -> None:
    what = f"version.applied of subject {subject_id} v{version}"
    _queue_event(service.webhook_event_version_applied, what, subject_id=subject_id, version=version)


@receiver(review_decided, dispatch_uid="workers.webhooks.review_decided")
def _on_review_decided(sender, subject_id: int, decision: str, version=None, **kwargs) -> None:
    counts = {n: kwargs.get(n, 0) for n in ("approved", "rejected", "declined")}
    what = f"review.decided of subject {subject_id}"
    make = service.webhook_event_review_decided
    _queue_event(make, what, subject_id=subject_id, decision=decision, version=version, **counts)


@receiver(subject_erased, dispatch_uid="workers.webhooks.subject_erased")
def _on_subject_erased(sender, tenant_id: int, external_id: str, **_kwargs) -> None:
    what = f"subject.erased for tenant {tenant_id}"
    _queue_event(service.webhook_event_subject_erased, what, tenant_id=tenant_id, external_id=external_id)


@receiver(chunk_failed, dispatch_uid="workers.webhooks.chunk_failed")
def _on_chunk_failed(sender, chunk_id: int, **_kwargs) -> None:
    _queue_event(service.webhook_event_ingest_failed, f"ingest.failed of chunk {chunk_id}", chunk_id=chunk_id)
