"""Webhook deliveries: the store's signals become delivery rows, and a task POSTs each one.

Receivers (connected at import; ``workers.apps`` imports this module): ``version_applied``,
``review_decided`` and ``subject_erased`` are sent after the writing transaction committed; each
receiver records one delivery per subscribed active endpoint of the subject's tenant
(:mod:`memory.services.webhooks`) and sends ``workers.deliver_webhook(delivery_id)`` for it. A
receiver never raises into the write that sent the signal: a failure is logged.

``workers.deliver_webhook`` POSTs the signed event with httpx (no redirects followed, timeout
``WEBHOOK_TIMEOUT_S``), records the attempt, and on a 5xx/408/429 answer, a timeout or a
connection error raises :class:`WebhookRetry`, which Celery's autoretry retries with exponential
backoff and jitter (``retry_backoff`` of ``BACKOFF_S``, capped at ``BACKOFF_MAX_S``) until ``WEBHOOK_MAX_ATTEMPTS``
attempts were made; the attempt count kept in the database decides when it gives up, so a
redelivered task (``acks_late``) never exceeds it. Any other answer ends the delivery. Receivers
must de-duplicate on the event id (``PersonaTree-Delivery``): a worker that dies after the POST
sends it again.
"""

from __future__ import annotations

import logging
import time

import httpx
from django.dispatch import receiver

from memory import conf
from memory.services import webhooks as service
from memory.signals import review_decided, subject_erased, version_applied
from workers.base import pt_task, send, when_read

logger = logging.getLogger("personatree.webhooks")

#: Retry n waits up to BACKOFF_S * 2**(n-1) seconds (full jitter), at most BACKOFF_MAX_S: with the
#: default 6 attempts a receiver may be down for several minutes without losing an event.
BACKOFF_S = 30
BACKOFF_MAX_S = 600


class WebhookRetry(Exception):
    """The receiver failed in a way worth another attempt (5xx, timeout, connection error)."""


def _max_retries() -> int:
    return conf.get().webhooks.max_attempts - 1


@pt_task(
    name="workers.deliver_webhook",
    queue="index",
    soft_time_limit=120,
    max_retries=when_read(_max_retries),  # read when retrying, not at import (see when_read)
    retry_for=(WebhookRetry,),
    backoff=BACKOFF_S,
    backoff_max=BACKOFF_MAX_S,
)
def deliver_webhook(self, delivery_id: int) -> str:
    """POST delivery ``delivery_id`` once; returns ``delivered``, ``failed`` or ``skipped`` (nothing
    to send: delivered already, given up, or its endpoint deleted or deactivated)."""
    outgoing = service.webhook_delivery_prepare(delivery_id=int(delivery_id))
    if outgoing is None:
        return "skipped"
    status_code: int | None = None
    error, retryable = "", False
    started = time.monotonic()
    try:
        service.url_check(outgoing.url, resolve=True)
        # Streamed and closed unread: only the status matters, and a receiver's body can be any size.
        with httpx.stream(
            "POST",
            outgoing.url,
            content=outgoing.body,
            headers=outgoing.headers,
            timeout=service.timeout_s(),
            follow_redirects=False,
        ) as response:
            status_code = response.status_code
            retryable = service.retryable_status(status_code)
            error = "" if response.is_success else f"HTTP {status_code}"
    except service.WebhookUrlRefused as exc:
        error = f"refused: {exc.message}"
    except httpx.TimeoutException as exc:
        error, retryable = f"timeout: {type(exc).__name__}", True
    except httpx.TransportError as exc:
        error, retryable = f"connection error: {type(exc).__name__}: {exc}", True
    duration_ms = (time.monotonic() - started) * 1000
    outcome = service.webhook_attempt_record(
        delivery_id=int(delivery_id),
        status_code=status_code,
        error=error,
        duration_ms=duration_ms,
        retryable=retryable,
    )
    if outcome == "retry":
        raise WebhookRetry(f"delivery {delivery_id}: {error}")
    return outcome


def _deliver(queued) -> None:
    for item in queued:
        send(deliver_webhook, item.delivery_id, tenant_id=item.tenant_id)


@receiver(version_applied, dispatch_uid="workers.webhooks.version_applied")
def _on_version_applied(sender, subject_id: int, version: int, **_kwargs) -> None:
    try:
        _deliver(service.webhook_event_version_applied(subject_id=subject_id, version=version))
    except Exception:
        logger.exception("webhooks: version.applied of subject %s v%s not queued", subject_id, version)


@receiver(review_decided, dispatch_uid="workers.webhooks.review_decided")
def _on_review_decided(sender, subject_id: int, **kwargs) -> None:
    try:
        _deliver(
            service.webhook_event_review_decided(
                subject_id=subject_id,
                decision=kwargs["decision"],
                approved=kwargs.get("approved", 0),
                rejected=kwargs.get("rejected", 0),
                declined=kwargs.get("declined", 0),
                version=kwargs.get("version"),
            )
        )
    except Exception:
        logger.exception("webhooks: review.decided of subject %s not queued", subject_id)


@receiver(subject_erased, dispatch_uid="workers.webhooks.subject_erased")
def _on_subject_erased(sender, tenant_id: int, external_id: str, **_kwargs) -> None:
    try:
        _deliver(service.webhook_event_subject_erased(tenant_id=tenant_id, external_id=external_id))
    except Exception:
        logger.exception("webhooks: subject.erased for tenant %s not queued", tenant_id)
