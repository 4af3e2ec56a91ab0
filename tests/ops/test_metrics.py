"""/metrics: off unless enabled, bearer token when set, request series per route pattern."""

from __future__ import annotations

import pytest

TOKEN = "metrics-token-123"


@pytest.fixture
def metrics_on(settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "METRICS_ENABLED": True, "METRICS_TOKEN": ""}
    return settings.PERSONATREE


def test_metrics_are_off_by_default_outside_local(probe, settings):
    assert settings.PERSONATREE["METRICS_ENABLED"] is False  # test settings inherit base.py
    resp = probe.get("/metrics")
    assert resp.status_code == 404
    assert resp.json()["code"] == "not_found"


def test_an_api_call_shows_up_per_route(probe, api_client, metrics_on):
    assert api_client.get("/v1/subjects/no-such-user/tree").status_code == 404
    resp = probe.get("/metrics")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/plain")
    text = resp.content.decode()
    series = 'personatree_http_requests_total{method="GET",route="v1/subjects/<str:external_id>/tree",status="404"}'
    assert series in text
    bucket = 'personatree_http_request_duration_seconds_bucket{le="0.015",route="v1/subjects/<str:external_id>/tree"}'
    assert bucket in text  # by route only: the latency histogram has no method label
    assert "no-such-user" not in text  # the pattern, never the raw path


def test_worker_series_are_exposed(probe, metrics_on):
    from workers import metrics

    metrics.incr("chunks_applied", 2)
    text = probe.get("/metrics").content.decode()
    assert "personatree_chunks_applied_total" in text


def test_token_is_required_when_set(probe, metrics_on, settings):
    settings.PERSONATREE = {**metrics_on, "METRICS_TOKEN": TOKEN}
    resp = probe.get("/metrics")
    assert resp.status_code == 401
    assert resp["WWW-Authenticate"].startswith("Bearer")
    assert TOKEN not in resp.content.decode()
    assert probe.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    ok = probe.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert ok.status_code == 200
    assert TOKEN not in ok.content.decode()


def test_metrics_do_not_leak_settings(probe, metrics_on, settings):
    text = probe.get("/metrics").content.decode()
    for value in (settings.SECRET_KEY, settings.DATABASES["default"].get("PASSWORD") or "\0", "postgres://"):
        assert value not in text


def test_ops_requests_are_not_counted(probe, metrics_on):
    for _ in range(3):
        probe.get("/healthz")
    assert 'route="healthz"' not in probe.get("/metrics").content.decode()


def _write(path, *values: tuple) -> None:
    """One process's multiprocess file: ``(metric, sample, labels, value)`` each."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    db = MmapedDict(str(path))
    for metric, sample, labels, value in values:
        db.write_value(mmap_key(metric, sample, list(labels), list(labels.values()), "help"), value, 0.0)
    db.close()


def _two_processes(directory, scale: float) -> None:
    """Two web workers' files: a counter, a histogram and two kinds of gauges."""
    hist, route = "personatree_http_request_duration_seconds", {"route": "v1/keys"}
    for pid, hits in ((1, 3.0 * scale), (2, 5.0 * scale)):
        counter = "personatree_http_requests"
        _write(
            directory / f"counter_{pid}.db", (counter, counter + "_total", {"method": "GET", **route}, hits)
        )
        _write(
            directory / f"histogram_{pid}.db",
            (hist, hist + "_bucket", {"le": "0.015", **route}, hits - 1),
            (hist, hist + "_bucket", {"le": "+Inf", **route}, 1.0),  # per bucket, not cumulative
            (hist, hist + "_sum", route, hits / 100),
        )
        _write(directory / f"gauge_livesum_{pid}.db", ("workers_up", "workers_up", {}, 1.0))
        _write(directory / f"gauge_all_{pid}.db", ("rss_bytes", "rss_bytes", {"kind": "web"}, 10.0 * pid))


def test_the_multiprocess_collector_sums_like_prometheus_client(tmp_path):
    """The web's registry sums every process's file like the library, with fresh values each scrape."""
    import prometheus_client
    from prometheus_client.multiprocess import MultiProcessCollector

    from personatree_site.ops.metrics import multiprocess_registry

    library = prometheus_client.CollectorRegistry()
    MultiProcessCollector(library, path=str(tmp_path))
    ours = multiprocess_registry(str(tmp_path))
    _two_processes(tmp_path, 1.0)
    text = prometheus_client.generate_latest(ours).decode()
    assert text == prometheus_client.generate_latest(library).decode()
    for line in (
        'personatree_http_requests_total{method="GET",route="v1/keys"} 8.0',
        'personatree_http_request_duration_seconds_bucket{le="0.015",route="v1/keys"} 6.0',
        'personatree_http_request_duration_seconds_count{route="v1/keys"} 8.0',
        "workers_up 2.0",
        'rss_bytes{kind="web",pid="2"} 20.0',
    ):
        assert line in text.splitlines(), line
    _two_processes(tmp_path, 2.0)  # the workers counted on: the next scrape reads the files again
    again = prometheus_client.generate_latest(ours).decode()
    assert again == prometheus_client.generate_latest(library).decode()
    assert 'personatree_http_requests_total{method="GET",route="v1/keys"} 16.0' in again.splitlines()


@pytest.mark.slow
def test_multiprocess_mode_aggregates_every_process(tmp_path):
    """With PROMETHEUS_MULTIPROC_DIR set (gunicorn workers), a scrape sums what every process wrote."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = (
        "import django, sys; django.setup()\n"
        "from django.conf import settings\n"
        "from django.test import Client\n"
        "settings.PERSONATREE = {**settings.PERSONATREE, 'METRICS_ENABLED': True}\n"
        "c = Client(HTTP_HOST='localhost')\n"
        "c.get('/v1/subjects/x/tree')\n"
        "sys.stdout.write(c.get('/metrics').content.decode())\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
    }
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=120
        )
        for _ in range(2)
    ]
    assert all(p.returncode == 0 for p in outputs), outputs[-1].stderr[-2000:]
    series = 'personatree_http_requests_total{method="GET",route="v1/subjects/<str:external_id>/tree",status="401"}'
    line = next(li for li in outputs[1].stdout.splitlines() if li.startswith(series))
    assert float(line.rsplit(" ", 1)[1]) == 2.0  # the first process's request is counted too
