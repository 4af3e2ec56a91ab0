"""The queue backlog gauges: one series per queue, counted from the rows, ages from the oldest."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Chunk
from personatree_site.ops import backlog
from tests.factories import ChunkFactory, SubjectFactory, TenantFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh():
    """No reading cached by an earlier test."""
    backlog.clear()


def _age(chunk, seconds: float, field: str = "created_at") -> None:
    Chunk.objects.filter(pk=chunk.pk).update(**{field: timezone.now() - timedelta(seconds=seconds)})


def test_empty_queues_report_zero():
    assert backlog.measure() == {"ingest": (0, 0.0), "index": (0, 0.0), "webhooks": (0, 0.0)}


def test_pending_and_unindexed_chunks_are_counted_per_queue_not_per_tenant():
    for _ in range(2):  # two tenants: still one series per queue
        subject = SubjectFactory(tenant=TenantFactory())
        _age(ChunkFactory(subject=subject, status=Chunk.Status.PENDING), 120)
        ChunkFactory(subject=subject, status=Chunk.Status.PROCESSING)
        ChunkFactory(subject=subject, status=Chunk.Status.FAILED)
        _age(ChunkFactory(subject=subject, status=Chunk.Status.APPLIED), 30, "updated_at")
        ChunkFactory(subject=subject, status=Chunk.Status.APPLIED, indexed_at=timezone.now())
    values = backlog.measure()
    assert set(values) == {"ingest", "index", "webhooks"}
    assert values["ingest"][0] == 4 and 119 <= values["ingest"][1] < 180
    assert values["index"][0] == 2 and 29 <= values["index"][1] < 90
    assert values["webhooks"] == (0, 0.0)


def test_the_scrape_carries_the_gauges(probe, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "METRICS_ENABLED": True, "METRICS_TOKEN": ""}
    ChunkFactory(status=Chunk.Status.PENDING)
    text = probe.get("/metrics").content.decode()
    assert 'personatree_queue_backlog{queue="ingest"} 1.0' in text
    assert 'personatree_queue_oldest_pending_age_seconds{queue="webhooks"} 0.0' in text
    assert text.count("personatree_queue_backlog{") == 3


def test_values_are_cached_between_scrapes():
    first = backlog.current()
    ChunkFactory(status=Chunk.Status.PENDING)
    assert backlog.current() == first
    assert backlog.current(ttl_s=0)["ingest"][0] == 1


def test_a_failing_query_leaves_the_gauges_out(monkeypatch):
    def broken():
        raise RuntimeError("database down")

    monkeypatch.setattr(backlog, "measure", broken)
    assert backlog.current() is None
    assert list(backlog.BacklogCollector().collect()) == []


def test_each_gauge_query_is_served_by_its_partial_index():
    """Every scrape at Prometheus' 15-30 s interval misses the 10 s cache, so the three queries run
    each time: a scan of the chunk table would grow with every chunk ever applied (175 ms at 500k
    chunks), the partial indexes hold only the waiting rows."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if connection.vendor != "postgresql":
        pytest.skip("the plans are PostgreSQL's")
    with CaptureQueriesContext(connection) as captured:
        backlog.measure()
    expected = {"chunk_waiting", "chunk_unindexed", "webhook_delivery_pending"}
    used = set()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # tiny test tables: make the planner choose
        for query in captured.captured_queries:
            cursor.execute("EXPLAIN " + query["sql"])
            plan = "\n".join(row[0] for row in cursor.fetchall())
            found = {name for name in expected if name in plan}
            assert len(found) == 1, plan
            used |= found
    assert used == expected
