"""Per-subject order under real concurrency: threads with their own Postgres connections."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection, connections

from memory.models import Chunk, OpRecord, TreeVersion
from tests.factories import TenantFactory
from tests.workers.helpers import WatchingClient, drain, ingest_pairs
from workers.ordering import chunks_claim

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def run_threads(n: int, target) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def body(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


@pytest.mark.parametrize("skip_locked", [True, False], ids=["skip-locked", "compare-and-set"])
def test_racing_claimants_get_each_chunk_once(skip_locked, monkeypatch):
    """Both claim paths: FOR UPDATE SKIP LOCKED (Postgres) and the portable compare-and-set (SQLite)."""
    assert connection.vendor == "postgresql"
    monkeypatch.setattr(type(connection.features), "has_select_for_update_skip_locked", skip_locked)
    tenant = TenantFactory()
    for i in range(6):
        ingest_pairs(tenant, f"race{i}", 6)  # 2 chunks per subject
    won: list = []
    lock = threading.Lock()

    def claim(_):
        for _round in range(3):
            got = chunks_claim(limit=2)
            with lock:
                won.extend(got)

    assert run_threads(6, claim) == []
    ids = Counter(c.chunk_id for c in won)
    assert all(n == 1 for n in ids.values())
    # only head-of-line chunks were claimable: one per subject
    assert len({c.subject_id for c in won}) == len(won) == 6


def test_parallel_dispatchers_apply_each_chunk_once_in_order():
    tenant = TenantFactory()
    subjects = [ingest_pairs(tenant, f"par{i}", 12).subject for i in range(8)]  # 4 chunks each
    client = WatchingClient(delay_s=0.005)
    errors = run_threads(4, lambda _i: drain(client=client, max_jobs=3, max_wait_ms=0, index=False))
    assert errors == []
    assert client.violations == []
    assert len(client.calls) > 4  # the work was really spread over several calls
    assert set(Chunk.objects.values_list("status", flat=True)) == {"applied"}
    # exactly one op batch per chunk: nothing applied twice
    batches = Counter(
        chunk for chunk, _batch in OpRecord.objects.order_by().values_list("chunk_id", "batch").distinct()
    )
    assert sorted(batches.values()) == [1] * 32
    for subject in subjects:
        starts = list(
            TreeVersion.objects.filter(subject=subject)
            .order_by("number")
            .values_list("chunk__start_seq", flat=True)
        )
        assert starts == [1, 7, 13, 19]
