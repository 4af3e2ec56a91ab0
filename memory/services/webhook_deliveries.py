"""Webhook deliveries: the signed request of each attempt (Standard Webhooks headers plus
``PersonaTree-Signature``, docs/WEBHOOKS.md), the attempt log, and the sweep of orphans. A finished
delivery stays finished (a late attempt is only logged); finishing one empties its subject's id.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from memory import conf
from memory.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

SIGNATURE_HEADER = "PersonaTree-Signature"
EVENT_HEADER = "PersonaTree-Event"
DELIVERY_HEADER = "PersonaTree-Delivery"
USER_AGENT = "PersonaTree-Webhooks/1"
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class Queued:
    """A delivery to send (by the caller, after commit)."""

    delivery_id: int
    tenant_id: int


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """``PersonaTree-Signature``: ``t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>." + body>``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def standard_key(secret: str) -> bytes:
    """The HMAC key of ``webhook-signature``: the base64 after ``whsec_``; an older secret that is not
    base64 signs with its own bytes (rotating it gives one that ready-made verifiers accept)."""
    encoded = secret.removeprefix(WebhookEndpoint.SECRET_PREFIX)
    try:
        return base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True) or secret.encode()
    except (binascii.Error, ValueError):
        return secret.encode()


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>." + body>``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    mac = hmac.new(standard_key(secret), signed, hashlib.sha256).digest()
    return f"v1,{base64.b64encode(mac).decode('ascii')}"


def event_body(delivery: WebhookDelivery) -> bytes:
    """The JSON document POSTed for ``delivery`` (the same bytes on every attempt)."""
    document = {
        "id": str(delivery.event_id),
        "type": delivery.event_type,
        "created_at": delivery.created_at.isoformat(),
        "data": {"subject": delivery.subject_external_id, **delivery.payload},
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def signed_headers(delivery: WebhookDelivery, body: bytes, timestamp: int) -> dict:
    secret, event_id = delivery.endpoint.secret, str(delivery.event_id)
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(secret, event_id, timestamp, body),
        EVENT_HEADER: delivery.event_type,
        DELIVERY_HEADER: event_id,
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }


@dataclass(frozen=True)
class Outgoing:
    url: str
    body: bytes
    headers: dict[str, str]
    tenant_id: int


def webhook_delivery_prepare(*, delivery_id: int) -> Outgoing | None:
    """The next attempt's request; None when there is none (a deactivated endpoint fails it)."""
    delivery = WebhookDelivery.objects.select_related("endpoint").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return None
    if not delivery.endpoint.is_active:
        _finish(delivery.pk, WebhookDelivery.Status.FAILED, error="endpoint deactivated")
        return None
    body = event_body(delivery)
    headers = signed_headers(delivery, body, int(timezone.now().timestamp()))
    return Outgoing(delivery.endpoint.url, body, headers, delivery.endpoint.tenant_id)


def _finish(delivery_id: int, status: str, *, error: str = "") -> int:
    """Close a pending delivery (and drop its subject id); the number of rows closed (0 or 1)."""
    changes = {"status": status, "finished_at": timezone.now(), "subject_external_id": ""}
    if error:
        changes["last_error"] = error[:MAX_ERROR_CHARS]
    pending = WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING)
    return pending.update(**changes)


def webhook_attempt_record(
    *, delivery_id: int, status_code: int | None, error: str, duration_ms: float, retryable: bool
) -> str:
    """Log one attempt and settle the delivery: ``delivered`` (2xx), ``retry`` (retryable, attempts left),
    ``failed``, or ``skipped`` (deleted meanwhile); a finished delivery keeps its status."""
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None:
            return "skipped"
        number = delivery.attempts + 1
        error = error[:MAX_ERROR_CHARS]
        WebhookAttempt.objects.create(
            delivery=delivery, number=number, status_code=status_code, error=error, duration_ms=duration_ms
        )
        if delivery.status != WebhookDelivery.Status.PENDING:
            WebhookDelivery.objects.filter(pk=delivery.pk).update(attempts=number)
            return str(delivery.status)
        if status_code is not None and 200 <= status_code < 300:
            outcome = WebhookDelivery.Status.DELIVERED
        elif retryable and number < conf.get().webhooks.max_attempts:
            outcome = "retry"
        else:
            outcome = WebhookDelivery.Status.FAILED
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            attempts=number, last_status_code=status_code, last_error=error
        )
        if outcome != "retry":
            _finish(delivery.pk, outcome)
    return str(outcome)


def retryable_status(status_code: int) -> bool:
    """Answers worth another attempt: 5xx, 429 (too many requests) and 408 (request timeout)."""
    return status_code >= 500 or status_code in (408, 429)


def webhook_deliveries_orphaned(*, idle_s: float, limit: int = 500) -> list[Queued]:
    """Pending deliveries with no attempt for ``idle_s`` seconds (task lost): returned to be sent again,
    or closed as failed when out of attempts. ``idle_s`` must exceed the longest retry wait."""
    cutoff = timezone.now() - timedelta(seconds=idle_s)
    stale = (
        WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, created_at__lt=cutoff)
        .annotate(last_attempt=Max("attempt_log__created_at"))
        .filter(Q(last_attempt__isnull=True) | Q(last_attempt__lt=cutoff))
        .order_by("pk")
        .values_list("pk", "attempts", "endpoint__tenant_id")[:limit]
    )
    resend: list[Queued] = []
    for pk, attempts, tenant_id in stale:
        if attempts >= conf.get().webhooks.max_attempts:
            _finish(pk, WebhookDelivery.Status.FAILED, error="gave up: out of attempts (task lost)")
        else:
            resend.append(Queued(pk, tenant_id))
    return resend
