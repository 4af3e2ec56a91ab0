"""Which endpoints take which event, without a query per event: a per-process snapshot, dropped by an
endpoint save or delete here, elsewhere by a version token in the shared cache (renewed after the
commit: unlike a TTL it never drops a new endpoint's events), and after :data:`MAX_AGE_S`. Inside
a transaction, or while the cache fails (:data:`RETRY_S`), the rows are read per event.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models.signals import post_delete, post_save

from memory.models import WebhookEndpoint

logger = logging.getLogger(__name__)

TOKEN_KEY = "personatree:webhook-endpoints:version"
MAX_AGE_S = 60.0
RETRY_S = 30.0

Subscribers = dict[int, tuple[int, ...]]

_lock = threading.Lock()
_snapshot: tuple[str, float, dict[str, Subscribers]] | None = None  # (token, loaded at, by event)
_cache_failed_at: float | None = None


def subscribers(event_type: str) -> Subscribers:
    """``{tenant_id: endpoint ids}`` of the active endpoints that take ``event_type`` (any tenant)."""
    global _snapshot
    if connection.in_atomic_block:
        return _load().get(event_type, {})
    token = _token()
    if token is None:
        return _load().get(event_type, {})
    current = _snapshot
    if current is None or current[0] != token or time.monotonic() - current[1] > MAX_AGE_S:
        current = (token, time.monotonic(), _load())
        with _lock:
            _snapshot = current
    return current[2].get(event_type, {})


def invalidate() -> None:
    """Forget this process's snapshot (the next event reads the rows)."""
    global _snapshot
    with _lock:
        _snapshot = None


def _load() -> dict[str, Subscribers]:
    by_event: dict[str, dict[int, list[int]]] = {}
    rows = WebhookEndpoint.objects.filter(is_active=True).order_by("pk")
    for pk, tenant_id, event_types in rows.values_list("pk", "tenant_id", "event_types"):
        for event_type in set(event_types or ()):
            by_event.setdefault(event_type, {}).setdefault(tenant_id, []).append(pk)
    return {event: {t: tuple(ids) for t, ids in tenants.items()} for event, tenants in by_event.items()}


def _token() -> str | None:
    """The shared version token (created if missing), or None while the shared cache fails."""
    global _cache_failed_at
    if _cache_failed_at is not None and time.monotonic() - _cache_failed_at < RETRY_S:
        return None
    try:
        token = cache.get(TOKEN_KEY)
        if token is None:
            cache.add(TOKEN_KEY, uuid.uuid4().hex, timeout=None)
            token = cache.get(TOKEN_KEY)
    except Exception:  # the shared cache is down: read the rows per event for a while
        _cache_failed_at = time.monotonic()
        logger.warning(
            "webhook endpoint version token unavailable; reading endpoints per event", exc_info=True
        )
        return None
    _cache_failed_at = None
    return token


def _bump() -> None:
    invalidate()
    try:
        cache.set(TOKEN_KEY, uuid.uuid4().hex, timeout=None)
    except Exception:  # other processes catch up within MAX_AGE_S
        logger.warning("webhook endpoint version token not updated", exc_info=True)


def _endpoint_changed(sender, **_kwargs) -> None:
    invalidate()
    transaction.on_commit(_bump)


post_save.connect(_endpoint_changed, sender=WebhookEndpoint, dispatch_uid="webhook_subscriptions.save")
post_delete.connect(_endpoint_changed, sender=WebhookEndpoint, dispatch_uid="webhook_subscriptions.delete")
