"""Redis down (issue 15): the API keeps answering.

The rate limit's counters live in the Django cache (Redis in production). With the cache
unreachable every API call used to be a 500; now the throttle falls back to a per-process
counter (and logs it), so reads and ingest still answer and the limit still holds per process.
An erasure needs the broker (it queues the purge of the subject's vectors): with the broker down
it is a JSON 503 with ``Retry-After`` and nothing is erased, so nothing is half done.
"""

from __future__ import annotations

import logging

import pytest

from memory.api import throttling
from memory.models import Message, Subject, Tombstone
from memory.services.ingest import IncomingMessage, messages_ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def redis_down(settings, closed_port):
    """The Django cache on a Redis URL nothing listens on; the throttle's state reset around the test."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port}/0",
        }
    }
    throttling.reset_fallback()
    yield
    throttling.reset_fallback()


def _messages(n: int = 1, prefix: str = "m") -> dict:
    return {
        "messages": [
            {"role": "user", "content": f"I live in Lyon, note {i}", "idempotency_key": f"{prefix}-{i}"}
            for i in range(n)
        ]
    }


def test_reads_and_ingest_answer_with_the_cache_down(redis_down, subject, api_client, caplog):
    with caplog.at_level(logging.WARNING, logger="personatree.throttle"):
        ingest = api_client.post(f"/v1/subjects/{subject.external_id}/messages", _messages(), format="json")
        tree = api_client.get(f"/v1/subjects/{subject.external_id}/tree")
        status = api_client.get(f"/v1/subjects/{subject.external_id}/ingest")
    assert ingest.status_code == 202, ingest.content[:300]
    assert tree.status_code == 200, tree.content[:300]
    assert status.status_code == 200, status.content[:300]
    assert Message.objects.filter(subject=subject).count() == 1  # the accepted message is stored
    warnings = [r for r in caplog.records if r.name == "personatree.throttle"]
    assert len(warnings) == 1, "one warning per outage, not one per request"
    assert "per-process" in warnings[0].getMessage()


def test_the_limit_still_holds_per_process_with_the_cache_down(redis_down, subject, api_client, monkeypatch):
    # DRF reads the rates once, into the class (an override of the setting would not reach it).
    monkeypatch.setattr(throttling.ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "3/min"})
    codes = [api_client.get(f"/v1/subjects/{subject.external_id}/tree").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    last = api_client.get(f"/v1/subjects/{subject.external_id}/tree")
    assert last["Content-Type"] == "application/problem+json"
    assert last.json()["code"] == "throttled" and "Retry-After" in last


def test_the_shared_cache_is_used_again_once_it_is_back(
    redis_down, settings, subject, api_client, monkeypatch
):
    assert api_client.get(f"/v1/subjects/{subject.external_id}/tree").status_code == 200
    assert throttling.shared_cache_down()
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    monkeypatch.setattr(throttling, "RETRY_SHARED_AFTER_S", 0.0)
    assert api_client.get(f"/v1/subjects/{subject.external_id}/tree").status_code == 200
    assert not throttling.shared_cache_down()


@pytest.fixture
def broker_down(settings, closed_port, personatree):
    """Celery not eager, its broker on a closed port; evidence indexing on (erasure queues a purge)."""
    from personatree_site.celery import app

    saved = {"task_always_eager": app.conf.task_always_eager, "broker_url": app.conf.broker_url}
    url = f"redis://127.0.0.1:{closed_port}/0"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = url
    personatree["EVIDENCE_INDEXING"] = True
    personatree["READYZ_TIMEOUT_S"] = 0.5
    app.conf.task_always_eager = False
    app.conf.broker_url = url
    app._pool = None
    yield url
    app.conf.update(saved)
    app._pool = None


def test_erasure_with_the_broker_down_is_a_503_and_erases_nothing(broker_down, tenant, make_api_client):
    messages_ingest(
        tenant=tenant,
        external_id="erase-me",
        messages=[IncomingMessage("user", "I live in Lyon", "k1")],
        enqueue=False,
    )
    client, _ = make_api_client(tenant, scopes=["erase"])
    response = client.delete("/v1/subjects/erase-me")
    assert response.status_code == 503, response.content[:300]
    assert response["Content-Type"] == "application/problem+json"
    assert int(response["Retry-After"]) > 0
    error = response.json()
    assert error["code"] == "broker_unavailable"
    assert "127.0.0.1" not in response.content.decode() and "redis://" not in response.content.decode()
    assert Subject.objects.filter(tenant=tenant, external_id="erase-me").exists()
    assert not Tombstone.objects.filter(tenant=tenant).exists()


def test_ingest_with_the_broker_and_the_cache_down_is_accepted_and_kept(
    broker_down, redis_down, tenant, api_client
):
    """Ingest needs neither: the messages and their chunk are committed, the failed publish is
    logged, and the chunk stays pending for the sweep once the broker is back."""
    body = {
        "messages": [
            {"role": role, "content": f"{role} turn {i}", "idempotency_key": f"b-{role}-{i}"}
            for i in range(3)
            for role in ("user", "assistant")
        ]
    }
    response = api_client.post("/v1/subjects/during-outage/messages", body, format="json")
    assert response.status_code == 202, response.content[:300]
    assert response.json()["chunks_created"] == 1
    subject = Subject.objects.get(tenant=tenant, external_id="during-outage")
    assert Message.objects.filter(subject=subject).count() == 6
    assert list(subject.chunks.values_list("status", flat=True)) == ["pending"]


def test_production_bounds_how_long_a_dead_redis_holds_a_request(tmp_path):
    """A Redis host that drops packets (no refusal) would hold the throttle's first request of
    every retry window for the system's connect timeout; production sets 1 s unless the URL says."""
    import json
    import os
    import subprocess
    import sys

    from django.core.management.utils import get_random_secret_key

    from tests.deploy.conftest import ROOT

    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env = {
        **base,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.production",
        "DJANGO_SECRET_KEY": get_random_secret_key(),
        "DJANGO_ALLOWED_HOSTS": "memory.example.com",
        "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/db",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "PERSONATREE_DATA_DIR": str(tmp_path),
    }
    code = "import json; from django.conf import settings; print(json.dumps(settings.CACHES['default']))"

    def caches(**extra):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)

    default = caches(CACHE_URL="redis://redis:6379/1")
    assert default["OPTIONS"] == {"socket_connect_timeout": 1.0, "socket_timeout": 1.0}
    own = caches(CACHE_URL="redis://redis:6379/1?socket_connect_timeout=3")
    assert own["OPTIONS"]["socket_connect_timeout"] == 3 and own["OPTIONS"]["socket_timeout"] == 1.0
