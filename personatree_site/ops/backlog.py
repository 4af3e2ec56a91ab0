"""The backlog of each Celery queue (items, oldest age) as two gauges, read from the database (partial
indexes) at most once every :data:`TTL_S`; a failing query leaves them out (docs/DEPLOY.md).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime

logger = logging.getLogger(__name__)

QUEUES = ("ingest", "index", "webhooks")
TTL_S = 10.0
BACKLOG = "personatree_queue_backlog"
OLDEST = "personatree_queue_oldest_pending_age_seconds"

_lock = threading.Lock()
_cached: tuple[float, dict[str, tuple[int, float]]] | None = None


def _age(oldest: datetime | None, now: datetime) -> float:
    return max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0


def measure() -> dict[str, tuple[int, float]]:
    """``{queue: (items, oldest age in seconds)}`` from the database, now."""
    from django.db.models import Count, Min
    from django.utils import timezone

    from memory.models import Chunk, WebhookDelivery

    now = timezone.now()
    waiting = Chunk.objects.filter(status__in=[Chunk.Status.PENDING, Chunk.Status.PROCESSING])
    ingest = waiting.aggregate(n=Count("id"), oldest=Min("created_at"))
    unindexed = Chunk.objects.filter(status=Chunk.Status.APPLIED, indexed_at__isnull=True)
    index = unindexed.aggregate(n=Count("id"), oldest=Min("updated_at"))
    pending = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING)
    webhooks = pending.aggregate(n=Count("id"), oldest=Min("created_at"))
    return {
        queue: (row["n"], _age(row["oldest"], now))
        for queue, row in zip(QUEUES, (ingest, index, webhooks), strict=True)
    }


def current(ttl_s: float = TTL_S) -> dict[str, tuple[int, float]] | None:
    """:func:`measure` at most once per ``ttl_s`` in this process; ``None`` when it fails."""
    global _cached
    with _lock:
        if _cached is not None and time.monotonic() - _cached[0] < ttl_s:
            return _cached[1]
        try:
            values = measure()
        except Exception:  # the database is down: /readyz says so, the scrape still answers
            logger.warning("queue backlog: the database query failed", exc_info=True)
            return None
        _cached = (time.monotonic(), values)
        return values


def clear() -> None:
    global _cached
    with _lock:
        _cached = None


class BacklogCollector:
    """A prometheus_client custom collector yielding the two gauges."""

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        values = current()
        if values is None:
            return
        backlog = GaugeMetricFamily(BACKLOG, "Items waiting for a queue's workers", labels=["queue"])
        oldest = GaugeMetricFamily(OLDEST, "Age of the oldest item waiting for a queue", labels=["queue"])
        for queue, (items, age) in values.items():
            backlog.add_metric([queue], items)
            oldest.add_metric([queue], age)
        yield backlog
        yield oldest
