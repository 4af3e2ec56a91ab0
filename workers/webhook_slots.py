"""At most ``WEBHOOK_MAX_CONCURRENT_PER_TENANT`` POSTs of a tenant at once (a slow endpoint cannot hold
every webhook worker): a slot is a shared-cache key taken by ``add``, freed by its holder or after
``ttl_s``. While the shared cache fails the cap is off; with a local-memory cache it is per process.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.cache import cache

logger = logging.getLogger("personatree.webhooks")

PREFIX = "personatree:webhook-slot"


def slot_key(tenant_id: int, number: int) -> str:
    return f"{PREFIX}:{tenant_id}:{number}"


@contextmanager
def delivery_slot(tenant_id: int, *, cap: int, ttl_s: float) -> Iterator[bool]:
    """Yields whether a slot of the tenant's was taken (and frees it on exit)."""
    token = uuid.uuid4().hex
    taken: str | None = None
    try:
        for number in range(cap):
            key = slot_key(tenant_id, number)
            if cache.add(key, token, timeout=ttl_s):
                taken = key
                break
    except Exception:  # the shared cache is down: deliver without the cap
        logger.warning(
            "webhook delivery slots unavailable; tenant %s is not capped", tenant_id, exc_info=True
        )
        yield True
        return
    if taken is None:
        yield False
        return
    try:
        yield True
    finally:
        try:
            if cache.get(taken) == token:
                cache.delete(taken)
        except Exception:  # it expires after ttl_s
            logger.warning("webhook delivery slot %s not released", taken, exc_info=True)


WAITING = "personatree:webhook-waiting"


def mark_waiting(delivery_id: int, *, ttl_s: float) -> None:
    """Note that the delivery's task is alive, waiting for a slot (it re-sent itself): the sweep of
    lost deliveries leaves it alone for ``ttl_s`` instead of starting a second chain of re-sends."""
    try:
        cache.set(f"{WAITING}:{delivery_id}", 1, timeout=ttl_s)
    except Exception:  # the sweep may send it once more; the receiver de-duplicates
        logger.warning("webhook delivery %s not marked as waiting", delivery_id, exc_info=True)


def waiting(delivery_ids: list[int]) -> set[int]:
    """Those of ``delivery_ids`` whose task is waiting for a slot (see :func:`mark_waiting`)."""
    if not delivery_ids:
        return set()
    try:
        found = cache.get_many([f"{WAITING}:{pk}" for pk in delivery_ids])
    except Exception:
        return set()
    return {int(key.rsplit(":", 1)[1]) for key in found}
