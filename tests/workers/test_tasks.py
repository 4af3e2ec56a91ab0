"""The task decorator (routing, metrics, retry policy) and the dispatch/sweep tasks, run eagerly."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import prometheus_client
import pytest
from django.utils import timezone

from memory.models import Chunk, TreeVersion
from tests.workers.helpers import FailingClient, ingest_pairs, standin_client
from workers import metrics
from workers.base import ENQUEUED_AT, TENANT, enqueue_on_commit, pt_task, route_task, send
from workers.dispatcher import QUEUED_KEY, dispatch
from workers.tasks import sweep


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


def test_celery_registers_every_task_through_the_module_autodiscovery_imports(monkeypatch):
    """``app.autodiscover_tasks(["workers"])`` imports ``workers.tasks``; the dispatch task lives in
    ``workers.dispatcher`` and must be registered under its old name all the same (beat, routes);
    ``memory.backfill.tasks`` registers the import task defined in ``memory.backfill.imports``."""
    import memory.backfill.tasks
    import workers.dispatcher
    import workers.tasks
    from memory.signals import chunks_ready
    from personatree_site.celery import app

    def real(task):  # a task decorated before the app was finalised is a lazy proxy, after it not
        return getattr(task, "_get_current_object", lambda: task)()

    registered = app.tasks
    assert workers.tasks.dispatch is workers.dispatcher.dispatch  # the same task object
    assert registered["workers.dispatch"] is real(workers.dispatcher.dispatch)
    assert registered["workers.sweep"] is real(workers.tasks.sweep)
    assert registered["workers.import_run"] is real(memory.backfill.tasks.import_run)
    assert {"workers.dispatch", "workers.sweep", "workers.deliver_webhook"} <= set(registered)
    sent = []
    monkeypatch.setattr(workers.dispatcher.dispatch, "apply_async", lambda **kw: sent.append(kw))
    chunks_ready.send(sender=None, tenant_id=7)  # what the services send after commit
    assert [kw["headers"] for kw in sent] == [{TENANT: "7"}]


def _sample(name: str, **labels: str) -> float:
    """This process's Prometheus sample ``personatree_<name>`` with ``labels`` (0 before any)."""
    return prometheus_client.REGISTRY.get_sample_value(metrics.PREFIX + name, labels) or 0.0


def test_metrics_record_duration_outcome_tenant_and_queue_wait(caplog):
    echo_task = {"task": "tests.workers.echo"}
    samples = {
        "ran_ok": ("task_runs_total", {**echo_task, "outcome": "ok"}),
        "ran_error": ("task_runs_total", {**echo_task, "outcome": "error"}),
        "timed_ok": ("task_duration_seconds_count", {**echo_task, "outcome": "ok"}),
        "waits": ("task_queue_wait_seconds_count", echo_task),
        "waited_s": ("task_queue_wait_seconds_sum", echo_task),
    }
    before = {key: _sample(name, **labels) for key, (name, labels) in samples.items()}
    with caplog.at_level(logging.DEBUG, logger="personatree.metrics"):
        echo.apply(args=("hi",), headers={ENQUEUED_AT: time.time() - 2.5, TENANT: "7"})
        with pytest.raises(ValueError):
            echo.apply(args=("boom",), throw=True)
    added = {key: _sample(name, **labels) - before[key] for key, (name, labels) in samples.items()}
    assert added["ran_ok"] == added["ran_error"] == added["timed_ok"] == added["waits"] == 1
    assert 2.4 < added["waited_s"] < 10
    # The tenant is never a Prometheus label: the metric's log line carries it.
    runs = [r.args[2] for r in caplog.records if r.name == "personatree.metrics" and r.args[0] == "task_runs"]
    assert {**echo_task, "tenant": "7", "outcome": "ok"} in runs


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
def test_dispatch_retries_with_backoff_during_an_outage_without_burning_attempts(
    tenant, monkeypatch, settings
):
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
    assert result.state == "FAILURE"  # retries (max_retries=8) used up; the sweep dispatches again later
    assert client.calls == 2 * (1 + dispatch.max_retries)  # each run: the lone chunk's call and a probe
    chunk = Chunk.objects.get()
    assert (chunk.status, chunk.attempts) == ("pending", 0) and "engine down" in chunk.last_error
    monkeypatch.setattr("serving.client.get_listener_client", lambda config=None: standin_client())
    assert dispatch.apply().get()["applied"] == 1  # the model is back


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


@pytest.fixture
def shared_cache(monkeypatch):
    """Dispatch deduplication switched on, with an in-process cache standing in for the shared one."""
    from django.core.cache.backends.locmem import LocMemCache

    cache = LocMemCache("dispatch-dedup-test", {})
    cache.clear()  # LocMemCache instances of one name share their storage
    monkeypatch.setattr("workers.dispatcher._dedup_cache", lambda: cache)
    yield cache
    cache.clear()


@pytest.fixture
def ingest_committed(django_capture_on_commit_callbacks):
    """``ingest_committed(tenant, external_id)``: ingest 3 pairs and run the after-commit callbacks."""

    def ingest(tenant, external_id):
        with django_capture_on_commit_callbacks(execute=True):
            ingest_pairs(tenant, external_id, 3, enqueue=True)

    return ingest


@pytest.mark.django_db
def test_dispatch_requests_are_deduplicated_while_one_is_queued(
    tenant, shared_cache, ingest_committed, monkeypatch
):
    sent = []
    monkeypatch.setattr(dispatch, "apply_async", lambda **kw: sent.append(kw))
    before = _sample("dispatch_deduplicated_total")
    for i in range(5):  # five ingest calls, each committing a chunk and asking for a dispatch
        ingest_committed(tenant, f"q{i}")
    assert len(sent) == 1 and _sample("dispatch_deduplicated_total") - before == 4
    assert shared_cache.get(QUEUED_KEY) is not None


@pytest.mark.django_db
def test_a_started_dispatch_lets_the_next_request_through_and_claims_what_was_queued(
    tenant, shared_cache, ingest_committed, monkeypatch
):
    sent = []
    monkeypatch.setattr(dispatch, "apply_async", lambda **kw: sent.append(kw))
    monkeypatch.setattr("serving.client.get_listener_client", lambda config=None: standin_client())
    ingest_committed(tenant, "a")
    ingest_committed(tenant, "b")  # deduplicated: the queued task will claim it
    assert len(sent) == 1
    assert dispatch.apply().get()["applied"] == 2  # the queued task runs (clears the mark first)
    ingest_committed(tenant, "c")  # after the mark was cleared: a task of its own
    assert len(sent) == 2


@pytest.mark.django_db
def test_a_failed_publish_does_not_hold_later_requests_back(
    tenant, shared_cache, ingest_committed, monkeypatch
):
    calls = []

    def refuse(**kw):
        calls.append(kw)
        raise ConnectionError("broker down")

    monkeypatch.setattr(dispatch, "apply_async", refuse)
    ingest_committed(tenant, "x")
    ingest_committed(tenant, "y")
    assert len(calls) == 2 and shared_cache.get(QUEUED_KEY) is None


def test_dedup_needs_a_real_broker_and_a_shared_cache(settings):
    from personatree_site.celery import app
    from workers.dispatcher import _dedup_cache

    saved = app.conf.task_always_eager
    try:
        app.conf.task_always_eager = False
        assert _dedup_cache() is None  # the default per-process cache cannot be shared with workers
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache"}}
        assert _dedup_cache() is not None
        app.conf.task_always_eager = True
        assert _dedup_cache() is None  # eager: the task runs inline, nothing is queued
    finally:
        app.conf.task_always_eager = saved
