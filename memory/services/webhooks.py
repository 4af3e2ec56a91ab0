"""Webhooks: a tenant's endpoints, the events they are sent, and the log of every delivery attempt.

The write path of everything webhook-shaped (endpoints, deliveries, attempts); the HTTP call itself
is made by the ``workers.deliver_webhook`` task (``workers/webhooks.py``), which records each attempt
here. Payloads, the signature and the SSRF policy are documented in docs/WEBHOOKS.md.

- **Events.** ``version.applied`` (subject external id, version number, who made it, op counts by
  type), ``review.decided`` (decision and op counts) and ``subject.erased``. Never message text,
  leaf paths or values: a receiver that wants the tree reads it through the API with its own key.
- **Signature.** ``PersonaTree-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`` over
  ``f"{t}.".encode() + body`` with the endpoint's secret (:func:`signature`).
- **SSRF.** Only ``http``/``https`` URLs without credentials. A target that is not a public
  (global) address, literal or resolved at delivery time (loopback, private, link-local,
  metadata services...), is refused unless ``PERSONATREE["WEBHOOK_ALLOW_PRIVATE_TARGETS"]``.
- **Subject ids.** A delivery holds its subject's external id only while it is pending; once it
  was delivered or gave up the id is emptied (the log keeps the tombstone's keyed hash).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from memory import conf
from memory.models import (
    OpRecord,
    Subject,
    Tenant,
    Tombstone,
    TreeVersion,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)
from memory.services import ServiceError
from memory.services.webhook_subscriptions import subscribers

SIGNATURE_HEADER = "PersonaTree-Signature"
EVENT_HEADER = "PersonaTree-Event"
DELIVERY_HEADER = "PersonaTree-Delivery"
USER_AGENT = "PersonaTree-Webhooks/1"
MAX_ERROR_CHARS = 500


class WebhookUrlRefused(ServiceError):
    code = "invalid_url"
    field = "url"

    def __init__(self, message: str):
        super().__init__(message, field="url")


def allow_private_targets() -> bool:
    return conf.get().webhooks.allow_private_targets


def max_attempts() -> int:
    return conf.get().webhooks.max_attempts


def timeout_s() -> float:
    return conf.get().webhooks.timeout_s


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


#: A host name's labels once IDNA-encoded (underscores allowed: container names hold them).
_HOST_NAME = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)(\.(?!-)[a-z0-9_-]{1,63}(?<!-))*\.?")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _ascii(host: str) -> str:
    try:
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return ""


def url_check(url: str, *, resolve: bool = False) -> str:
    """``url`` if webhooks may be sent to it, else :class:`WebhookUrlRefused` (a 400 in the API).

    Registration checks the URL's form and a literal address; delivery (``resolve=True``) also
    resolves the host name and refuses it if any of its addresses is not public, so a name that
    points inside the network (now or after registration) is refused too."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebhookUrlRefused(f"Not a valid URL: {exc}.") from exc
    if parts.scheme not in ("http", "https"):
        raise WebhookUrlRefused("Webhook URLs must be http:// or https://.")
    host = parts.hostname
    if not host:
        raise WebhookUrlRefused("The webhook URL has no host.")
    if not _is_address(host) and not _HOST_NAME.fullmatch(_ascii(host)):
        raise WebhookUrlRefused("The webhook URL's host is not a valid host name.")
    if parts.username is not None or parts.password is not None:
        raise WebhookUrlRefused("Webhook URLs may not hold credentials; the signature authenticates us.")
    if allow_private_targets():
        return url
    try:
        literal = not _public(host)
    except ValueError:  # a host name, not an address
        literal = host == "localhost" or host.endswith((".localhost", ".local", ".internal"))
    if literal:
        raise WebhookUrlRefused(
            "Webhook URLs must reach a public address (loopback, private and link-local targets are "
            "refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS is set)."
        )
    if resolve:
        try:
            infos = socket.getaddrinfo(host, port or (443 if parts.scheme == "https" else 80))
        except OSError as exc:
            raise WebhookUrlRefused(f"The webhook host does not resolve: {exc}.") from exc
        if not infos or not all(_public(str(info[4][0])) for info in infos):
            raise WebhookUrlRefused("The webhook host resolves to an address that is not public.")
    return url


def _event_types(event_types) -> list[str]:
    chosen = sorted(set(event_types or ()))
    unknown = [t for t in chosen if t not in WebhookEndpoint.EVENT_TYPES]
    if not chosen or unknown:
        raise ServiceError(
            f"event_types must be a non-empty list of {', '.join(WebhookEndpoint.EVENT_TYPES)}.",
            field="event_types",
        )
    return chosen


def webhook_endpoint_create(
    *, tenant, url: str, event_types, is_active: bool = True, description: str = ""
) -> tuple[WebhookEndpoint, str]:
    """A new endpoint and its secret (the caller shows the secret once)."""
    endpoint = WebhookEndpoint.objects.create(
        tenant=tenant,
        url=url_check(url),
        event_types=_event_types(event_types),
        is_active=is_active,
        description=description[:200],
        secret=WebhookEndpoint.generate_secret(),
    )
    return endpoint, endpoint.secret


def webhook_endpoint_update(*, endpoint: WebhookEndpoint, **changes) -> WebhookEndpoint:
    """Change ``url``, ``event_types``, ``is_active`` or ``description`` (only those given)."""
    allowed = {"url", "event_types", "is_active", "description"}
    unknown = set(changes) - allowed
    if unknown:
        raise ServiceError(f"Cannot change {', '.join(sorted(unknown))}.")
    if "url" in changes:
        changes["url"] = url_check(changes["url"])
    if "event_types" in changes:
        changes["event_types"] = _event_types(changes["event_types"])
    if "description" in changes:
        changes["description"] = changes["description"][:200]
    for name, value in changes.items():
        setattr(endpoint, name, value)
    endpoint.save(update_fields=[*changes, "updated_at"])
    return endpoint


def webhook_endpoint_rotate_secret(*, endpoint: WebhookEndpoint) -> str:
    """Give the endpoint a new secret (returned, to be shown once); pending retries sign with it."""
    endpoint.secret = WebhookEndpoint.generate_secret()
    endpoint.save(update_fields=["secret", "updated_at"])
    return endpoint.secret


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    """Delete the endpoint and its delivery log; pending deliveries are not sent."""
    endpoint.delete()


# --- events -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Queued:
    """A delivery to send (by the caller, after commit)."""

    delivery_id: int
    tenant_id: int


def _emit(*, tenant_id: int, event_type: str, external_id: str, payload: dict, endpoints) -> list[Queued]:
    key = Tombstone.hash_external_id(tenant_id, external_id)
    fields = dict(event_type=event_type, subject_external_id=external_id, subject_key=key, payload=payload)
    try:
        with transaction.atomic():
            created = WebhookDelivery.objects.bulk_create(
                [WebhookDelivery(endpoint_id=e, **fields) for e in endpoints]
            )
    except IntegrityError:  # a stale snapshot named an endpoint deleted meanwhile: the others still get it
        live = WebhookEndpoint.objects.filter(pk__in=endpoints, is_active=True).values_list("pk", flat=True)
        with transaction.atomic():
            created = WebhookDelivery.objects.bulk_create(
                [WebhookDelivery(endpoint_id=e, **fields) for e in live]
            )
    return [Queued(d.pk, tenant_id) for d in created]


def _subscribed(event_type: str, tenant_id: int) -> tuple[int, ...]:
    """Ids of the tenant's active endpoints that take ``event_type``, ascending (from the snapshot of
    :mod:`memory.services.webhook_subscriptions`: no query while endpoints are unchanged). Whether the
    tenant is active is checked by the caller, with the rows it reads anyway."""
    return subscribers(event_type).get(tenant_id, ())


def webhook_event_version_applied(*, subject_id: int, version: int) -> list[Queued]:
    """Deliveries of ``version.applied`` for the subject's tenant's subscribed endpoints (no query when
    no tenant subscribes to it)."""
    if not subscribers("version.applied"):
        return []
    found = (
        TreeVersion.objects.filter(subject_id=subject_id, number=version, subject__tenant__is_active=True)
        .select_related("subject")
        .only("pk", "number", "created_by", "created_at", "subject__tenant_id", "subject__external_id")
        .first()
    )
    if found is None:  # erased since, or the tenant is inactive
        return []
    endpoints = _subscribed("version.applied", found.subject.tenant_id)
    if not endpoints:
        return []
    counts = dict(
        OpRecord.objects.filter(
            version_id=found.pk, status__in=[OpRecord.Status.APPLIED, OpRecord.Status.APPROVED]
        )
        .values_list("op_type")
        .annotate(n=Count("id"))
        .order_by()
    )
    payload = {
        "version": found.number,
        "created_by": found.created_by,
        "created_at": found.created_at.isoformat(),
        "ops": {op: counts.get(op, 0) for op in ("ADD", "UPDATE", "DELETE")},
    }
    return _emit(
        tenant_id=found.subject.tenant_id,
        event_type="version.applied",
        external_id=found.subject.external_id,
        payload=payload,
        endpoints=endpoints,
    )


def webhook_event_review_decided(
    *, subject_id: int, decision: str, approved: int, rejected: int, declined: int, version: int | None
) -> list[Queued]:
    if not subscribers("review.decided"):
        return []
    subject = (
        Subject.objects.filter(pk=subject_id, tenant__is_active=True).only("tenant_id", "external_id").first()
    )
    endpoints = _subscribed("review.decided", subject.tenant_id) if subject is not None else ()
    if not endpoints:
        return []
    payload = {
        "decision": decision,
        "ops": {"approved": approved, "rejected": rejected, "declined": declined},
        "version": version,
    }
    return _emit(
        tenant_id=subject.tenant_id,
        event_type="review.decided",
        external_id=subject.external_id,
        payload=payload,
        endpoints=endpoints,
    )


def webhook_event_subject_erased(*, tenant_id: int, external_id: str) -> list[Queued]:
    endpoints = _subscribed("subject.erased", tenant_id)
    if not endpoints or not Tenant.objects.filter(pk=tenant_id, is_active=True).exists():
        return []
    payload = {"erased_at": timezone.now().isoformat()}
    return _emit(
        tenant_id=tenant_id,
        event_type="subject.erased",
        external_id=external_id,
        payload=payload,
        endpoints=endpoints,
    )


# --- delivery -----------------------------------------------------------------------------------


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The header value: ``t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>." + body>``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def event_body(delivery: WebhookDelivery) -> bytes:
    """The JSON document POSTed for ``delivery`` (the same bytes on every attempt)."""
    document = {
        "id": str(delivery.event_id),
        "type": delivery.event_type,
        "created_at": delivery.created_at.isoformat(),
        "data": {"subject": delivery.subject_external_id, **delivery.payload},
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Outgoing:
    url: str
    body: bytes
    headers: dict[str, str]


def webhook_delivery_prepare(*, delivery_id: int, now: int | None = None) -> Outgoing | None:
    """The request for the delivery's next attempt; None when there is nothing to send (delivered,
    given up, endpoint deleted or deactivated since: such a delivery is closed as failed)."""
    delivery = WebhookDelivery.objects.select_related("endpoint").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return None
    if not delivery.endpoint.is_active:
        _finish(delivery.pk, WebhookDelivery.Status.FAILED, error="endpoint deactivated")
        return None
    body = event_body(delivery)
    timestamp = int(now if now is not None else timezone.now().timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        EVENT_HEADER: delivery.event_type,
        DELIVERY_HEADER: str(delivery.event_id),
        SIGNATURE_HEADER: signature(delivery.endpoint.secret, timestamp, body),
    }
    return Outgoing(delivery.endpoint.url, body, headers)


def _finish(delivery_id: int, status: str, *, error: str = "") -> None:
    changes = {"status": status, "finished_at": timezone.now(), "subject_external_id": ""}
    if error:
        changes["last_error"] = error[:MAX_ERROR_CHARS]
    WebhookDelivery.objects.filter(pk=delivery_id).update(**changes)


def webhook_attempt_record(
    *, delivery_id: int, status_code: int | None, error: str, duration_ms: float, retryable: bool
) -> str:
    """Log one attempt and settle the delivery: ``"delivered"`` (a 2xx), ``"retry"`` (a retryable
    failure with attempts left), ``"failed"`` (not retryable, or the last attempt) or ``"skipped"``
    (the delivery was deleted with its endpoint meanwhile)."""
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None:
            return "skipped"
        number = delivery.attempts + 1
        error = error[:MAX_ERROR_CHARS]
        WebhookAttempt.objects.create(
            delivery=delivery, number=number, status_code=status_code, error=error, duration_ms=duration_ms
        )
        ok = status_code is not None and 200 <= status_code < 300
        if ok:
            outcome = WebhookDelivery.Status.DELIVERED
        elif retryable and number < max_attempts():
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
