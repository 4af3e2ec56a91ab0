"""Per-tenant delivery slots: at most ``WEBHOOK_MAX_CONCURRENT_PER_TENANT`` POSTs of one tenant at once.

A slot is a key ``personatree:webhook-slot:<tenant>:<n>`` in the shared Django cache (Redis in
production), taken with an atomic ``add`` (``SET NX``) holding a random token and released by
deleting it when it still holds that token. Each key expires after ``ttl_s`` (longer than the
task's hard time limit), so a worker killed mid-POST frees its slot by itself. A task that finds no
free slot does not POST: it is sent again a little later (``workers.webhooks``), so one tenant's
slow endpoint holds at most that many webhook worker processes and the other tenants' deliveries
keep flowing.

While the shared cache fails, slots are not enforced (logged): deliveries go on rather than stall.
With the local-memory cache (development) the cap holds per worker process only.
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
