"""End to end: HTTP ingest -> Postgres -> Redis -> real Celery worker -> real Ray Serve MemListener -> versions.

The MemListener runs in Ray Serve with the stand-in engine (``standin``/``derived``: a
deterministic zero-model stand-in, clearly not a model; 150 ms per batch so a kill lands mid-batch).
Fault tests: SIGKILL the worker in the middle of a batch, restart it; restart a private
redis-server (no persistence: queued messages are lost) in the middle of a run.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from memory.models import Chunk, OpRecord, Subject, TreeVersion
from tests.workers.processes import CeleryWorker, RedisServer, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHARED_REDIS_DB2 = "redis://127.0.0.1:6379/2"


@pytest.fixture(scope="module")
def listener_url():
    pytest.importorskip("ray", reason="ray[serve] (the 'serve' extra) is not installed")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from serving.config import AppConfig, EngineConfig
    from serving.testing import serve_memlistener

    config = AppConfig(
        engine=EngineConfig(kind="standin", standin_mode="derived", standin_latency_ms=150),
        max_batch_size=16,
        batch_wait_timeout_s=0.005,
        num_cpus=0.5,
    )
    with serve_memlistener(config, num_cpus=2) as url:
        yield url


@pytest.fixture
def producer():
    """Point this process's Celery app at a broker (not eager) for the test; restore afterwards."""
    from personatree_site.celery import app

    saved = {"task_always_eager": app.conf.task_always_eager, "broker_url": app.conf.broker_url}

    def use(url: str):
        app.conf.task_always_eager = False
        app.conf.broker_url = url
        app._pool = None
        app.amqp._producer_pool = None
        return app

    yield use
    app.conf.update(saved)
    app._pool = None
    app.amqp._producer_pool = None


def flush_redis_db2():
    import redis

    redis.Redis.from_url(SHARED_REDIS_DB2).flushdb()


@pytest.fixture
def shared_broker(producer):
    flush_redis_db2()
    producer(SHARED_REDIS_DB2)
    yield SHARED_REDIS_DB2
    flush_redis_db2()


def post_pairs(client, external_id, n_pairs, start=0):
    messages = []
    for i in range(start, start + n_pairs):
        messages += [
            {
                "role": "user",
                "content": f"My favourite number today is {i} and I like {i} apples",
                "idempotency_key": f"u{i}",
            },
            {"role": "assistant", "content": f"Noted: {i}", "idempotency_key": f"a{i}"},
        ]
    resp = client.post(f"/v1/subjects/{external_id}/messages", {"messages": messages}, format="json")
    assert resp.status_code == 202, resp.content
    return resp.json()


def all_applied(expected: int):
    def check():
        return Chunk.objects.filter(status="applied").count() == expected == Chunk.objects.count()

    return check


def assert_each_chunk_applied_once_in_order(n_subjects: int, chunks_per_subject: int):
    assert set(Chunk.objects.values_list("status", flat=True)) == {"applied"}
    batches = Counter(
        OpRecord.objects.values_list("chunk_id", "batch").distinct().values_list("chunk_id", flat=True)
    )
    assert len(batches) == n_subjects * chunks_per_subject
    assert set(batches.values()) == {1}, "a chunk was applied more than once"
    for subject in Subject.objects.all():
        rows = list(
            TreeVersion.objects.filter(subject=subject)
            .order_by("number")
            .values_list("number", "chunk__start_seq")
        )
        assert [n for n, _ in rows] == list(range(1, chunks_per_subject + 1))
        assert [s for _, s in rows] == [
            1 + 6 * k for k in range(chunks_per_subject)
        ]  # strictly in chunk order


def test_messages_in_versions_out_in_order(listener_url, shared_broker, tmp_path, tenant, make_api_client):
    client, _ = make_api_client(tenant)
    worker = CeleryWorker(broker_url=shared_broker, listener_url=listener_url, workdir=tmp_path).start()
    try:
        for name in ("ana", "ben", "cy"):
            post_pairs(client, name, 6)  # two chunks each, in two calls per subject below
        for name in ("ana", "ben", "cy"):
            post_pairs(client, name, 3, start=6)
        wait_for(all_applied(9), timeout=90, what="9 chunks applied")
    finally:
        worker.stop()
    assert_each_chunk_applied_once_in_order(3, 3)
    status = client.get("/v1/subjects/ana/ingest").json()
    assert status["applied_through_seq"] == status["cursor"] == 18 and status["head_version"] == 3
    assert set(OpRecord.objects.values_list("model_id", flat=True)) == {"standin:derived"}


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
        wait_for(all_applied(24), timeout=120, what="all 24 chunks applied after restart")
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
        for i in range(4):
            post_pairs(client, f"r{i}", 6, start=6)  # accepted while the broker is down
        assert Chunk.objects.count() == 16
        time.sleep(1.0)
        redis_server.start()
        wait_for(all_applied(16), timeout=120, what="all 16 chunks applied after the Redis restart")
    finally:
        worker.stop()
        redis_server.stop()
    assert_each_chunk_applied_once_in_order(4, 4)
