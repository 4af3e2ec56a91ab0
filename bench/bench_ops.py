"""Operations benchmark: the cost of one Prometheus scrape, as production serves it.

- ``ops.metrics_scrape_ms``: median wall time of ``GET /metrics`` over HTTP (loopback) from gunicorn
  with three workers in multiprocess mode (``-c python:personatree_site.ops.gunicorn_conf``, the
  web image's command), over 200 scrapes. The multiprocess directory holds what production's holds
  at its largest: the three web workers' request series (one GET and one POST per v1 route, each
  request on a new connection so the workers share them; 401s, no key) plus one Celery worker
  process's series (``task_duration_seconds``/``task_runs`` observed for 20 tenants x 4 tasks x 2
  outcomes, exported as 8 series without the tenant label; chunk counters, dispatch histograms).
  The backlog gauges read a migrated, empty SQLite database, cached 10 s per web worker: these
  back-to-back scrapes mostly hit the cache, which a scrape every 15-30 s misses; the read is
  three lookups in partial indexes (``personatree_site/ops/backlog.py``; about 2 ms of CPU on
  PostgreSQL with 500k chunks, most of it the ORM's), and the max includes one.
- ``ops.metrics_scrape_worker_ms``: the same for a Celery worker container's exporter
  (``workers/exporter.py``): its HTTP server over two pool processes' files holding those series.

The scraper is one ``httpx.Client`` for every request, as Prometheus keeps one HTTP client per
target: building a client per request (``httpx.get``) costs more than the scrape itself (an SSL
context with the CA bundle, about 20 ms idle), a cost of this script, not of the server. Each scrape
still opens a new TCP connection (gunicorn's sync workers and the exporter close it after the
response). httpx's own log line per request is off.

Notes give p90, max, the body size, the 1-minute load average (the host is shared) and, for the
web, the median of ``GET /healthz`` on the same server: the floor of any request on this host.
"""

from __future__ import annotations

import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

logging.getLogger("httpx").setLevel(logging.WARNING)  # Django's test settings log every request at INFO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCRAPES = 200
TARGET_MS = 20.0
WEB_WORKERS = 3
TENANTS = 20
TASKS = ("workers.dispatch", "workers.index", "workers.sweep", "workers.flush_evidence")
OUTCOMES = ("ok", "error")
CLIENT = httpx.Client(timeout=30)  # the scraper: one client for every request (module docstring)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(work: Path, multiproc: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.local",
        "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
        "PERSONATREE_DATA_DIR": str(work),
        "PERSONATREE_METRICS_ENABLED": "true",
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc),
    }


def _worker_series(env: dict[str, str], pools: int = 1) -> None:
    """``pools`` processes write a Celery worker's series to the multiprocess directory."""
    script = (
        "import django; django.setup()\n"
        "from workers import metrics\n"
        f"for tenant in range({TENANTS}):\n"
        f"    for task in {TASKS!r}:\n"
        f"        for outcome in {OUTCOMES!r}:\n"
        "            metrics.observe('task_duration_seconds', 0.05, task=task, tenant=str(tenant), outcome=outcome)\n"
        "            metrics.incr('task_runs', task=task, tenant=str(tenant), outcome=outcome)\n"
        "metrics.incr('chunks_applied', 5); metrics.incr('chunks_failed', 1)\n"
        "for name in ('dispatch_model_seconds', 'dispatch_backend_seconds', 'dispatch_batch_size'):\n"
        "    metrics.observe(name, 1.0)\n"
    )
    for _ in range(pools):
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=300)


def wait_for(url: str, proc: subprocess.Popen | None = None, seconds: float = 300) -> None:
    """Until ``url`` answers 200; raises with the server's stderr when ``proc`` exits first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(proc.communicate()[1][-3000:])
        try:
            if CLIENT.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer in {seconds:.0f} s")


def _scrape(url: str) -> tuple[float, float, float, int]:
    """(p50, p90, max ms, body bytes) of SCRAPES scrapes by :data:`CLIENT`, after a warm-up."""
    for _ in range(10):
        CLIENT.get(url)
    samples, size = [], 0
    for _ in range(SCRAPES):
        started = time.perf_counter()
        resp = CLIENT.get(url)
        samples.append((time.perf_counter() - started) * 1000)
        assert resp.status_code == 200, resp.status_code
        size = len(resp.content)
    return statistics.median(samples), statistics.quantiles(samples, n=10)[-1], max(samples), size


def _row(p50: float, p90: float, worst: float, size: int, what: str, target) -> dict:
    return {
        "value": round(p50, 3),
        "unit": "ms",
        "target": target,
        "note": f"median of {SCRAPES} HTTP GET /metrics on loopback (p90 {p90:.2f} ms, max {worst:.1f} ms), "
        f"body {size / 1024:.0f} KiB, {what}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
    }


def _web(work: Path) -> dict:
    multiproc = work / "web-prom"
    multiproc.mkdir()
    env = _env(work, multiproc)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True
    )
    port = _free_port()
    env = {**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": str(WEB_WORKERS)}
    gunicorn = Path(sys.executable).with_name("gunicorn")
    cmd = [
        str(gunicorn),
        "personatree_site.wsgi:application",
        "-c",
        "python:personatree_site.ops.gunicorn_conf",
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/healthz", proc)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.test")
        import django

        django.setup()  # to read the URLconf (this process serves nothing)
        from memory.api.urls import urlpatterns

        requests = 0
        for pattern in urlpatterns:
            path = "/v1/" + str(pattern.pattern).replace("<str:external_id>", "bench-user")
            for method in ("GET", "POST"):
                CLIENT.request(method, base + path, headers={"Host": "localhost"})
                requests += 1
        _worker_series(env)
        files = len(list(multiproc.glob("*.db")))
        result = _scrape(f"{base}/metrics")
        floor = _scrape(f"{base}/healthz")[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    what = (
        f"{WEB_WORKERS} gunicorn workers in multiprocess mode ({files} files), request series of {requests} "
        f"API requests (every v1 route) and a Celery worker's task runs for {TENANTS} tenants "
        f"({len(TASKS) * len(OUTCOMES)} series: no tenant label), backlog gauges from SQLite; GET /healthz (no work) takes {floor:.2f} ms here"
    )
    return _row(*result, what, f"<= {TARGET_MS:g}")


def _worker(work: Path) -> dict:
    multiproc = work / "worker-prom"
    multiproc.mkdir()
    env = _env(work, multiproc)
    port = _free_port()
    serve = (
        "import django, time; django.setup()\n"
        "from workers import exporter\n"
        f"exporter.start({port}, '127.0.0.1')\n"
        "time.sleep(3600)\n"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", serve], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/metrics", server)
        _worker_series(env, pools=2)
        result = _scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        server.terminate()
        server.communicate(timeout=30)
    return _row(*result, "a Celery worker's exporter over 2 pool processes' task series", None)


def run() -> dict[str, dict]:
    with tempfile.TemporaryDirectory(prefix="bench-ops-") as tmp:
        work = Path(tmp)
        return {"ops.metrics_scrape_ms": _web(work), "ops.metrics_scrape_worker_ms": _worker(work)}


if __name__ == "__main__":
    for name, row in run().items():
        print(f"{name}: {row['value']} {row['unit']} (target {row['target']}) — {row['note']}")
