"""Fault tests, end to end (real Celery worker, real Ray Serve): SIGKILL the worker in the middle of
a batch and restart it; restart a private redis-server (no persistence: queued messages are lost)
in the middle of a run. The MemListener is the stand-in engine (``standin``/``derived``: a
deterministic zero-model stand-in, clearly not a model) sleeping 150 ms per batch, so the kill
lands while a batch is in flight.
"""

from __future__ import annotations

import time

import pytest

from memory.models import Chunk
from tests.workers.e2e import all_applied, assert_each_chunk_applied_once_in_order, post_pairs, serve_fixture
from tests.workers.processes import CeleryWorker, RedisServer, wait_for


def chunk_states() -> dict:
    """Chunk rows per status and attempts, to read a stalled run."""
    from django.db.models import Count

    return {
        (row["status"], row["attempts"]): row["n"]
        for row in Chunk.objects.values("status", "attempts").annotate(n=Count("id"))
    }


def no_batch_in_flight() -> bool:
    """No chunk is being processed, twice 1 s apart (a task already running claims pending ones in between)."""
    if Chunk.objects.filter(status="processing").exists():
        return False
    time.sleep(1.0)
    return not Chunk.objects.filter(status="processing").exists()


pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def listener_url():
    from serving.config import EngineConfig

    with serve_fixture(EngineConfig(kind="standin", standin_mode="derived", standin_latency_ms=150)) as url:
        yield url


def test_worker_killed_mid_batch_then_restarted_applies_every_chunk_once(
    listener_url, shared_broker, tmp_path, tenant, make_api_client
):
    client, _ = make_api_client(tenant)
    worker = CeleryWorker(broker_url=shared_broker, listener_url=listener_url, workdir=tmp_path).start()
    try:
        for i in range(6):
            post_pairs(client, f"k{i}", 12)  # 4 chunks per subject, 24 in all
        wait_for(
            lambda: Chunk.objects.filter(status="applied").count() >= 3, timeout=60, what="first applies"
        )
        wait_for(
            lambda: Chunk.objects.filter(status="processing").exists(),
            timeout=30,
            interval=0.005,
            what="a batch in flight",
        )
        worker.kill()
        in_flight = Chunk.objects.filter(status="processing").count()
        applied_at_kill = Chunk.objects.filter(status="applied").count()
        assert in_flight >= 1 and applied_at_kill < 24  # the kill really hit a batch in flight
        worker = CeleryWorker(broker_url=shared_broker, listener_url=listener_url, workdir=tmp_path).start()
        wait_for(
            all_applied(24), timeout=120, what="all 24 chunks applied after restart", detail=worker.log_tail
        )
    finally:
        worker.stop()
    print(f"killed with {in_flight} chunks in flight, {applied_at_kill} applied")
    assert_each_chunk_applied_once_in_order(6, 4)


def test_redis_restart_loses_nothing(listener_url, producer, tmp_path, tenant, make_api_client):
    redis_server = RedisServer(tmp_path).start()
    producer(redis_server.url)
    client, _ = make_api_client(tenant)
    worker = CeleryWorker(broker_url=redis_server.url, listener_url=listener_url, workdir=tmp_path).start()
    try:
        for i in range(4):
            post_pairs(client, f"r{i}", 6)
        redis_server.stop()  # queued and unacked messages are gone with it
        # A batch in flight goes on claiming pending chunks without the broker; wait until it is done,
        # so that what follows is (unless a task the worker had already reserved claims it) applied
        # through the worker's new connection to the restarted broker.
        wait_for(no_batch_in_flight, timeout=60, what="the in-flight batch to finish")
        for i in range(4):
            post_pairs(client, f"r{i}", 6, start=6)  # accepted while the broker is down
        assert Chunk.objects.count() == 16
        time.sleep(1.0)
        redis_server.start()
        t0 = time.monotonic()
        # Celery 5.7 can exit on a lost broker connection: its consumer closes the connection after
        # collect() has dropped the transport's URL, and kombu's Redis channel then fails reading it
        # ("'NoneType' object has no attribute 'hostname'", an AttributeError no one catches). The
        # deployments restart a worker that exits (compose ``restart: unless-stopped``); so does this
        # test. Nothing is lost either way: the chunks are rows, and the sweep sends them again.
        crashes: list[dict] = []

        def applied_under_a_supervisor() -> bool:
            crash = worker.restart_if_exited()
            if crash is not None:
                crashes.append(crash)
            return all_applied(16)()

        wait_for(
            applied_under_a_supervisor,
            timeout=120,
            what="all 16 chunks applied after the Redis restart",
            detail=lambda: f"chunks: {chunk_states()}\n{worker.log_tail()}",
        )
        print(f"all applied {time.monotonic() - t0:.1f}s after the restart; worker exits: {crashes}")
    finally:
        worker.stop()
        redis_server.stop()
    assert_each_chunk_applied_once_in_order(4, 4)
