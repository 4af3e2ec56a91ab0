"""The task decorator (routing, metrics, retry policy) and the dispatch/sweep tasks, run eagerly."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Chunk, TreeVersion
from tests.workers.helpers import FailingClient, ingest_pairs, standin_client
from workers import metrics
from workers.base import ENQUEUED_AT, TENANT, enqueue_on_commit, pt_task, route_task, send
from workers.tasks import dispatch, sweep


@pt_task(name="tests.workers.echo", queue="index", soft_time_limit=5)
def echo(self, value):
    if value == "boom":
        raise ValueError("boom")
    return value


def test_decorator_sets_policy_and_route():
    assert echo.acks_late and echo.reject_on_worker_lost
    assert echo.soft_time_limit == 5 and echo.time_limit == 35
    assert echo.max_retries == 8 and echo.retry_backoff
    assert route_task("tests.workers.echo", (), {}, {}) == {"queue": "index"}
    assert route_task("workers.dispatch", (), {}, {}) == {"queue": "ingest"}
    assert route_task("someone.else", (), {}, {}) is None


def test_metrics_record_duration_outcome_tenant_and_queue_wait():
    metrics.registry.reset()
    echo.apply(args=("hi",), headers={ENQUEUED_AT: time.time() - 2.5, TENANT: "7"})
    with pytest.raises(ValueError):
        echo.apply(args=("boom",), throw=True)
    assert metrics.total("task_runs", task="tests.workers.echo", tenant="7", outcome="ok") == 1
    assert metrics.total("task_runs", task="tests.workers.echo", outcome="error") == 1
    waits = metrics.values("task_queue_wait_seconds", task="tests.workers.echo")
    assert len(waits) == 1 and 2.4 < waits[0] < 10
    assert metrics.values("task_duration_seconds", task="tests.workers.echo", outcome="ok")


@pytest.mark.django_db
def test_enqueue_happens_only_after_commit(django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr(echo, "apply_async", lambda **kw: sent.append(kw))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        enqueue_on_commit(echo, "x", tenant_id=3)
    assert sent == [] and len(callbacks) == 1
    callbacks[0]()
    assert sent[0]["args"] == ("x",) and sent[0]["headers"] == {TENANT: "3"}


def test_a_broker_failure_is_logged_not_raised(monkeypatch, caplog):
    def refuse(**kw):
        raise ConnectionError("broker down")

    monkeypatch.setattr(echo, "apply_async", refuse)
    with caplog.at_level(logging.ERROR, logger="personatree.tasks"):
        send(echo, "x")
    assert "sweep will pick the work up" in caplog.text


@pytest.mark.django_db
def test_dispatch_task_applies_ready_chunks(tenant, monkeypatch):
    monkeypatch.setattr("serving.client.get_listener_client", lambda config=None: standin_client())
    subject = ingest_pairs(tenant, "d", 9).subject
    result = dispatch.apply()
    assert result.get()["applied"] == 3
    assert TreeVersion.objects.filter(subject=subject).count() == 3


@pytest.mark.django_db
def test_dispatch_retries_with_backoff_until_the_chunk_fails(tenant, monkeypatch, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_MAX_ATTEMPTS": 3}
    client = FailingClient()
    monkeypatch.setattr("serving.client.get_listener_client", lambda config=None: client)
    ingest_pairs(tenant, "r", 3)
    from personatree_site.celery import app

    saved = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    try:
        result = dispatch.apply()  # eager: each autoretry (TransientError) runs inline, without the countdown
    finally:
        app.conf.task_eager_propagates = saved
    assert result.state == "SUCCESS"  # the last run found nothing left to claim
    chunk = Chunk.objects.get()
    assert (chunk.status, chunk.attempts) == ("failed", 3) and "engine down" in chunk.last_error
    assert client.calls == 3


@pytest.mark.django_db
def test_sweep_flushes_idle_windows_and_dispatches(tenant, monkeypatch, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "IDLE_FLUSH_SECONDS": 60}
    monkeypatch.setattr("serving.client.get_listener_client", lambda config=None: standin_client())
    from memory.models import Message

    subject = ingest_pairs(tenant, "idle", 1).subject
    Message.objects.filter(subject=subject).update(created_at=timezone.now() - timedelta(seconds=120))
    dispatched = []
    monkeypatch.setattr("workers.tasks.send", lambda task, *a, **k: dispatched.append(task.name))
    assert sweep.apply().get() == {"flushed": 1, "dispatched": True}
    assert dispatched == ["workers.dispatch"]
    assert Chunk.objects.filter(subject=subject).count() == 1
