"""Webhooks: a tenant's endpoints and the events they are sent (docs/WEBHOOKS.md).

Signatures and attempts are :mod:`~memory.services.webhook_deliveries`', the SSRF policy
:mod:`~memory.services.webhook_targets`', the HTTP call the ``workers.deliver_webhook`` task's.
Events carry counts and ids, never message text, paths or values; every endpoint change writes an
:class:`~memory.models.AuditEvent` naming the endpoint by public id and host, never its secret or URL.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from memory import conf
from memory.models import (
    Chunk,
    OpRecord,
    Subject,
    Tenant,
    Tombstone,
    TreeVersion,
    WebhookDelivery,
    WebhookEndpoint,
)
from memory.services import ServiceError
from memory.services.chunk_errors import safe_chunk_error
from memory.services.keys import audit
from memory.services.tree import Actor
from memory.services.webhook_deliveries import Queued
from memory.services.webhook_subscriptions import subscribers
from memory.services.webhook_targets import url_check


class WebhookEndpointLimit(ServiceError):
    code = "webhook_endpoint_limit"
    http_status = 409


def _event_types(event_types) -> list[str]:
    chosen = sorted(set(event_types or ()))
    unknown = [t for t in chosen if t not in WebhookEndpoint.EVENT_TYPES]
    if not chosen or unknown:
        raise ServiceError(
            f"event_types must be a non-empty list of {', '.join(WebhookEndpoint.EVENT_TYPES)}.",
            field="event_types",
        )
    return chosen


def _audit(endpoint: WebhookEndpoint, action: str, actor: Actor, **detail) -> None:
    audit(
        tenant_id=endpoint.tenant_id,
        action=f"webhook.{action}",
        object_id=str(endpoint.public_id),
        actor=actor,
        host=urlsplit(endpoint.url).hostname or "",
        **detail,
    )


def webhook_endpoint_create(
    *, tenant, url: str, event_types, actor: Actor, is_active: bool = True, description: str = ""
) -> tuple[WebhookEndpoint, str]:
    """A new endpoint and its secret (shown once); :class:`WebhookEndpointLimit` (409) over the cap."""
    checked_url, chosen = url_check(url), _event_types(event_types)
    cap = conf.get().webhooks.max_endpoints_per_tenant
    with transaction.atomic():
        # One creation at a time per tenant: the count below cannot be raced past the cap.
        list(Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk", flat=True))
        if WebhookEndpoint.objects.filter(tenant=tenant).count() >= cap:
            raise WebhookEndpointLimit(
                f"A tenant may register at most {cap} webhook endpoints; delete one first.", field="url"
            )
        endpoint = WebhookEndpoint.objects.create(
            tenant=tenant,
            url=checked_url,
            event_types=chosen,
            is_active=is_active,
            description=description[:200],
            secret=WebhookEndpoint.generate_secret(),
        )
        _audit(endpoint, "created", actor, event_types=chosen, is_active=is_active)
    return endpoint, endpoint.secret


def webhook_endpoint_update(*, endpoint: WebhookEndpoint, actor: Actor, **changes) -> WebhookEndpoint:
    """Change ``url``, ``event_types``, ``is_active`` or ``description`` (those given), audited."""
    if unknown := set(changes) - {"url", "event_types", "is_active", "description"}:
        raise ServiceError(f"Cannot change {', '.join(sorted(unknown))}.")
    if "url" in changes:
        changes["url"] = url_check(changes["url"])
    if "event_types" in changes:
        changes["event_types"] = _event_types(changes["event_types"])
    if "description" in changes:
        changes["description"] = changes["description"][:200]
    for name, value in changes.items():
        setattr(endpoint, name, value)
    shown = {name: changes[name] for name in ("event_types", "is_active") if name in changes}
    with transaction.atomic():
        endpoint.save(update_fields=[*changes, "updated_at"])
        _audit(endpoint, "updated", actor, fields=sorted(changes), **shown)
    return endpoint


def webhook_endpoint_rotate_secret(*, endpoint: WebhookEndpoint, actor: Actor) -> str:
    """Give the endpoint a new secret (returned, to be shown once); pending retries sign with it."""
    endpoint.secret = WebhookEndpoint.generate_secret()
    with transaction.atomic():
        endpoint.save(update_fields=["secret", "updated_at"])
        _audit(endpoint, "secret_rotated", actor)
    return endpoint.secret


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor) -> None:
    """Delete the endpoint and its delivery log; pending deliveries are not sent."""
    with transaction.atomic():
        _audit(endpoint, "deleted", actor)
        endpoint.delete()


def _emit(event_type: str, tenant_id: int, external_id: str, payload: Callable[[], dict]) -> list[Queued]:
    """One event's deliveries to the tenant's endpoints that take it (``payload`` built only if any)."""
    endpoints = subscribers(event_type).get(tenant_id, ())
    if not endpoints:
        return []
    key = Tombstone.hash_external_id(tenant_id, external_id)
    fields = dict(event_type=event_type, subject_external_id=external_id, subject_key=key, payload=payload())

    def create(ids) -> list[WebhookDelivery]:
        with transaction.atomic():
            return WebhookDelivery.objects.bulk_create(
                [WebhookDelivery(endpoint_id=e, **fields) for e in ids]
            )

    try:
        created = create(endpoints)
    except IntegrityError:  # a stale snapshot named an endpoint deleted meanwhile: the others still get it
        created = create(
            WebhookEndpoint.objects.filter(pk__in=endpoints, is_active=True).values_list("pk", flat=True)
        )
    return [Queued(d.pk, tenant_id) for d in created]


def webhook_event_version_applied(*, subject_id: int, version: int) -> list[Queued]:
    """Deliveries of ``version.applied`` (no query when no tenant subscribes to it)."""
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

    def payload() -> dict:
        applied = OpRecord.objects.filter(
            version_id=found.pk, status__in=[OpRecord.Status.APPLIED, OpRecord.Status.APPROVED]
        )
        counts = dict(applied.values_list("op_type").annotate(n=Count("id")).order_by())
        ops = {op: counts.get(op, 0) for op in ("ADD", "UPDATE", "DELETE")}
        return {
            "version": found.number,
            "created_by": found.created_by,
            "created_at": found.created_at.isoformat(),
            "ops": ops,
        }

    return _emit("version.applied", found.subject.tenant_id, found.subject.external_id, payload)


def webhook_event_review_decided(
    *, subject_id: int, decision: str, approved: int, rejected: int, declined: int, version: int | None
) -> list[Queued]:
    if not subscribers("review.decided"):
        return []
    subject = (
        Subject.objects.filter(pk=subject_id, tenant__is_active=True).only("tenant_id", "external_id").first()
    )
    if subject is None:
        return []
    ops = {"approved": approved, "rejected": rejected, "declined": declined}
    payload = {"decision": decision, "ops": ops, "version": version}
    return _emit("review.decided", subject.tenant_id, subject.external_id, lambda: payload)


def webhook_event_subject_erased(*, tenant_id: int, external_id: str) -> list[Queued]:
    if not subscribers("subject.erased").get(tenant_id):
        return []
    if not Tenant.objects.filter(pk=tenant_id, is_active=True).exists():
        return []
    return _emit("subject.erased", tenant_id, external_id, lambda: {"erased_at": timezone.now().isoformat()})


def webhook_event_ingest_failed(*, chunk_id: int) -> list[Queued]:
    """``ingest.failed`` for a chunk given up for good, its reason masked (:func:`safe_chunk_error`)."""
    if not subscribers("ingest.failed"):
        return []
    chunk = (
        Chunk.objects.filter(pk=chunk_id, status=Chunk.Status.FAILED, subject__tenant__is_active=True)
        .select_related("subject")
        .only(
            "pk",
            "start_seq",
            "end_seq",
            "attempts",
            "last_error",
            "subject__tenant_id",
            "subject__external_id",
        )
        .first()
    )
    if chunk is None:
        return []
    payload = {
        "chunk": chunk.pk,
        "from_seq": chunk.start_seq,
        "to_seq": chunk.end_seq,
        "attempts": chunk.attempts,
        "error": safe_chunk_error(chunk.last_error),
    }
    return _emit("ingest.failed", chunk.subject.tenant_id, chunk.subject.external_id, lambda: payload)
