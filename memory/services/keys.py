"""API keys: create, revoke, rotate. Each change writes an :class:`~memory.models.AuditEvent` in the
same transaction (actor, action, the key's prefix and scopes; never the raw key or its hash)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from memory.models import ApiKey, AuditEvent, Tenant
from memory.services import ServiceError
from memory.services.tree import Actor


class KeyRevoked(ServiceError):
    code = "key_revoked"
    http_status = 409


def audit(*, tenant_id: int, action: str, object_id: str, actor: Actor, **detail) -> AuditEvent:
    """Record one change that is not a tree change (keys here, webhook endpoints too)."""
    return AuditEvent.objects.create(
        tenant_id=tenant_id,
        action=action,
        object_id=object_id,
        actor_kind=actor.kind,
        actor_name=actor.name,
        detail=detail,
    )


def api_key_create(
    *, tenant: Tenant, scopes: Iterable[str], actor: Actor, name: str = ""
) -> tuple[ApiKey, str]:
    """Create a key; returns ``(api_key, raw_key)``. The raw key is never stored and cannot be shown again."""
    scopes = sorted(set(scopes))
    if unknown := sorted(set(scopes) - set(ApiKey.SCOPES)):
        raise ServiceError(
            f"Unknown scope(s): {', '.join(unknown)}; known: {', '.join(ApiKey.SCOPES)}.", field="scopes"
        )
    if not scopes:
        raise ServiceError("An API key needs at least one scope.", field="scopes")
    raw, prefix, hashed = ApiKey.generate()
    with transaction.atomic():
        key = ApiKey.objects.create(tenant=tenant, name=name, prefix=prefix, hashed=hashed, scopes=scopes)
        audit(
            tenant_id=tenant.pk, action="key.created", object_id=prefix, actor=actor, scopes=scopes, name=name
        )
    return key, raw


def api_keys_revoke(*, keys: Iterable[ApiKey], actor: Actor) -> int:
    """Revoke the keys not revoked yet (idempotent; a revoked key stays listed, so what it did
    stays attributable). Returns how many were revoked now."""
    ids = [key.pk for key in keys]
    with transaction.atomic():
        live = list(
            ApiKey.objects.select_for_update()
            .filter(pk__in=ids, revoked_at__isnull=True)
            .values_list("pk", "tenant_id", "prefix")
        )
        ApiKey.objects.filter(pk__in=[pk for pk, _, _ in live]).update(revoked_at=timezone.now())
        for _, tenant_id, prefix in live:
            audit(tenant_id=tenant_id, action="key.revoked", object_id=prefix, actor=actor)
    return len(live)


def api_key_rotate(*, key: ApiKey, scopes: Iterable[str], actor: Actor) -> tuple[ApiKey, str]:
    """A new key like ``key`` with ``scopes``, ``key`` revoked with it (if revoked: :class:`KeyRevoked`)."""
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().get(pk=key.pk)
        if locked.revoked_at is not None:
            raise KeyRevoked("A revoked key cannot be rotated; create a new one.")
        new, raw = api_key_create(tenant=locked.tenant, scopes=scopes, name=locked.name, actor=actor)
        ApiKey.objects.filter(pk=locked.pk).update(revoked_at=timezone.now())
        audit(
            tenant_id=locked.tenant_id,
            action="key.rotated",
            object_id=locked.prefix,
            actor=actor,
            new=new.prefix,
        )
    return new, raw
