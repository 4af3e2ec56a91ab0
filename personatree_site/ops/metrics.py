"""Request metrics of the web process and the Prometheus text exposition.

Two series are added here, both labelled by the matched URL *pattern* (``route``, e.g.
``v1/subjects/<str:external_id>/tree``; ``unmatched`` for a 404 before routing), never by the raw
path, so their cardinality is bounded by the URLconf:

- ``personatree_http_requests_total{method, route, status}``
- ``personatree_http_request_duration_seconds{method, route}`` (histogram)

The exposition also carries everything ``workers.metrics`` counts in this process (task runs,
dispatch batches; with eager Celery the tasks run here), prometheus_client's process series and
the queue backlog gauges (:mod:`.backlog`).
With ``PROMETHEUS_MULTIPROC_DIR`` set (several gunicorn workers), prometheus_client writes every
worker's values to that directory and the exposition aggregates them (``MultiProcessCollector``).
"""

from __future__ import annotations

import os

from personatree_site.ops.backlog import BacklogCollector

try:  # comes with ray[serve]; the web image needs it installed for /metrics (docs/DEPLOY.md)
    import prometheus_client
except ImportError:  # pragma: no cover - depends on the environment
    prometheus_client = None

UNMATCHED = "unmatched"

if prometheus_client is not None:
    REQUESTS = prometheus_client.Counter(
        "personatree_http_requests", "HTTP requests served, by route pattern", ["method", "route", "status"]
    )
    LATENCY = prometheus_client.Histogram(
        "personatree_http_request_duration_seconds",
        "HTTP request latency through the whole middleware chain, by route pattern",
        ["method", "route"],
        buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    )
else:  # pragma: no cover
    REQUESTS = LATENCY = None


def available() -> bool:
    return prometheus_client is not None


def route_of(request) -> str:
    match = getattr(request, "resolver_match", None)
    return (match.route or match.view_name or UNMATCHED) if match is not None else UNMATCHED


def record_request(request, status: int, seconds: float) -> None:
    """Count one request and observe its latency (no-op without prometheus_client)."""
    if prometheus_client is None:
        return
    method = request.method if request.method in _METHODS else "other"
    route = route_of(request)
    REQUESTS.labels(method=method, route=route, status=str(status)).inc()
    LATENCY.labels(method=method, route=route).observe(seconds)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def exposition() -> tuple[bytes, str]:
    """``(body, content_type)`` of this process, or of every process in multiprocess mode, then
    the queue backlog gauges (:mod:`.backlog`, read from the database)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = prometheus_client.REGISTRY
    queues = prometheus_client.CollectorRegistry(auto_describe=False)
    queues.register(BacklogCollector())
    body = prometheus_client.generate_latest(registry) + prometheus_client.generate_latest(queues)
    return body, prometheus_client.CONTENT_TYPE_LATEST
