"""Multiprocess metrics for real: three gunicorn workers answer /metrics with the sum of all three,
and a Celery worker's exporter serves what its pool processes counted (workers/exporter.py)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bench.bench_ops import wait_for

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
REQUESTS = 30
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _value(text: str, series: str) -> float:
    match = re.search(rf"^{re.escape(series)} ([0-9.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


@pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is not installed (the stack extra)")
def test_every_scrape_sums_three_gunicorn_workers(tmp_path):
    port = _free_port()
    multiproc = tmp_path / "prom"
    multiproc.mkdir()
    (multiproc / "counter_stale.db").write_bytes(b"left by a previous run")  # on_starting removes it
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
        "PERSONATREE_METRICS_ENABLED": "true",
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc),
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "3",
    }
    cmd = [
        str(GUNICORN),
        "personatree_site.wsgi:application",
        "-c",
        "python:personatree_site.ops.gunicorn_conf",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/healthz", proc, seconds=120)
        with httpx.Client(base_url=base, headers={"Host": "localhost"}) as client:
            for _ in range(REQUESTS):  # 401 without a key: no database needed
                client.get("/v1/subjects/someone/tree", headers={"Connection": "close"})
            series = 'personatree_http_requests_total{method="GET",route="v1/subjects/<str:external_id>/tree",status="401"}'
            totals = {
                _value(client.get("/metrics", headers={"Connection": "close"}).text, series) for _ in range(9)
            }
        assert totals == {float(REQUESTS)}, totals  # whichever worker answers, the same sum
        assert len(list(multiproc.glob("*.db"))) >= 2  # more than one worker wrote
        assert not (multiproc / "counter_stale.db").exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def test_the_worker_exporter_serves_what_pool_processes_counted(tmp_path):
    port = _free_port()
    script = f"""
import multiprocessing, os, sys, urllib.request
import django
django.setup()
from workers import exporter, metrics

def pool_process(n):
    metrics.incr("chunks_applied", n)
    exporter._mark_dead(pid=os.getpid())

exporter.start({port}, "127.0.0.1")
ctx = multiprocessing.get_context("fork")
for n in (2, 5):
    p = ctx.Process(target=pool_process, args=(n,))
    p.start(); p.join()
    assert p.exitcode == 0
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:{port}/metrics", timeout=10).read().decode())
"""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert _value(out.stdout, "personatree_chunks_applied_total") == 7.0


def test_the_exporter_stays_off_without_a_port_or_a_directory(monkeypatch, settings):
    from workers import exporter

    started = []
    monkeypatch.setattr(exporter, "start", lambda *a: started.append(a))
    settings.PERSONATREE = {**settings.PERSONATREE, "WORKER_METRICS_PORT": 0}
    exporter._start_exporter()
    settings.PERSONATREE = {**settings.PERSONATREE, "WORKER_METRICS_PORT": 9808}
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    exporter._start_exporter()
    assert started == []
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/tmp/x")
    exporter._start_exporter()
    assert started == [(9808, "127.0.0.1")]
