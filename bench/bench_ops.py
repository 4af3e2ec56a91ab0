"""Operations benchmark: the cost of one Prometheus scrape of the web process.

- ``ops.metrics_scrape_ms``: median wall time of ``GET /metrics`` through the Django test client
  (the whole middleware chain and URLconf; no network), over 200 scrapes, with metrics enabled and
  no token, on a production-shaped web process: request series for every v1 route (one GET and
  one POST each, unauthenticated: 401, no database query) plus prometheus_client's process and GC
  series. A production web process holds no worker series (Celery runs in the workers).
- ``ops.metrics_scrape_ms_with_task_series``: the same after adding what an eager-Celery (dev)
  web process also holds from ``workers.metrics``: ``task_duration_seconds``/``task_runs`` for
  20 tenants x 4 tasks x 2 outcomes (the tenant label makes these grow with tenants).

Notes give p90, the body size and the 1-minute load average (the host is shared). No database.
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCRAPES = 200
TARGET_MS = 20.0
TENANTS = 20
TASKS = ("workers.dispatch", "workers.index", "workers.sweep", "workers.flush_evidence")
OUTCOMES = ("ok", "error")


def _setup():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.test")
    import django

    django.setup()
    from django.conf import settings

    settings.PERSONATREE = {**settings.PERSONATREE, "METRICS_ENABLED": True, "METRICS_TOKEN": ""}
    logging.getLogger("django.request").setLevel(logging.ERROR)  # the 401s of the fill are expected


def _fill_requests(client) -> int:
    """One GET and one POST per v1 route (401 without a key); returns the requests made."""
    from memory.api.urls import urlpatterns

    made = 0
    for pattern in urlpatterns:
        path = "/v1/" + str(pattern.pattern).replace("<str:external_id>", "bench-user")
        client.get(path)
        client.post(path)
        made += 2
    return made


def _fill_tasks() -> int:
    from workers import metrics

    for tenant in range(TENANTS):
        for task in TASKS:
            for outcome in OUTCOMES:
                metrics.observe("task_duration_seconds", 0.05, task=task, tenant=str(tenant), outcome=outcome)
                metrics.incr("task_runs", task=task, tenant=str(tenant), outcome=outcome)
    return TENANTS * len(TASKS) * len(OUTCOMES)


def _scrape(client) -> tuple[float, float, int]:
    """(p50 ms, p90 ms, body bytes) of SCRAPES scrapes after a short warm-up."""
    for _ in range(10):
        client.get("/metrics")
    samples = []
    size = 0
    for _ in range(SCRAPES):
        started = time.perf_counter()
        resp = client.get("/metrics")
        samples.append((time.perf_counter() - started) * 1000)
        assert resp.status_code == 200, resp.status_code
        size = len(resp.content)
    return statistics.median(samples), statistics.quantiles(samples, n=10)[-1], size


def _row(p50: float, p90: float, size: int, what: str, target) -> dict:
    return {
        "value": round(p50, 3),
        "unit": "ms",
        "target": target,
        "note": f"median of {SCRAPES} GET /metrics via the Django test client (p90 {p90:.2f} ms), "
        f"body {size / 1024:.0f} KiB, {what}; load average {os.getloadavg()[0]:.2f} "
        f"on {os.cpu_count()} cores",
    }


def run() -> dict[str, dict]:
    _setup()
    from django.test import Client

    client = Client(HTTP_HOST="localhost")
    requests = _fill_requests(client)
    web = _scrape(client)
    series = _fill_tasks()
    dev = _scrape(client)
    return {
        "ops.metrics_scrape_ms": _row(
            *web, f"request series of {requests} API requests (every v1 route)", f"<= {TARGET_MS:g}"
        ),
        "ops.metrics_scrape_ms_with_task_series": _row(
            *dev, f"plus {series} worker task series (eager Celery, dev only)", None
        ),
    }


if __name__ == "__main__":
    for name, row in run().items():
        print(f"{name}: {row['value']} {row['unit']} (target {row['target']}) — {row['note']}")
