"""Request metrics of the web process, labelled by the URL *pattern* (never the raw path), and the
Prometheus exposition: these, ``workers.metrics``' and the queue backlog (:mod:`.backlog`), over all
gunicorn workers with ``PROMETHEUS_MULTIPROC_DIR`` (docs/DEPLOY.md).
"""

from __future__ import annotations

import os

import prometheus_client
from prometheus_client.multiprocess import MultiProcessCollector

from personatree_site.ops.backlog import BacklogCollector

UNMATCHED = "unmatched"
# Upper bounds in seconds: 15 ms (fast-mode context over HTTP), 50 ms, 100 ms (deep context,
# search), then the slow tail up to LLM answers; past 10 s is +Inf (gunicorn's timeout is 60 s).
LATENCY_BUCKETS = (0.005, 0.015, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

REQUESTS = prometheus_client.Counter(
    "personatree_http_requests", "HTTP requests served, by route pattern", ["method", "route", "status"]
)
LATENCY = prometheus_client.Histogram(
    "personatree_http_request_duration_seconds",
    "HTTP request latency through the whole middleware chain, by route pattern",
    ["route"],
    buckets=LATENCY_BUCKETS,
)


def record_request(request, status: int, seconds: float) -> None:
    """Count one request and observe its latency."""
    method = request.method if request.method in _METHODS else "other"
    match = getattr(request, "resolver_match", None)
    route = (match.route or match.view_name or UNMATCHED) if match is not None else UNMATCHED
    REQUESTS.labels(method=method, route=route, status=str(status)).inc()
    LATENCY.labels(route=route).observe(seconds)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def multiprocess_registry(path: str | None = None):
    """A registry summing every process that writes to ``path`` (default ``PROMETHEUS_MULTIPROC_DIR``)."""
    registry = prometheus_client.CollectorRegistry()
    MultiProcessCollector(registry, path=path)
    return registry


def exposition() -> tuple[bytes, str]:
    """``(body, content_type)`` of this process (every process in multiprocess mode) and the backlog."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = multiprocess_registry()
    else:
        registry = prometheus_client.REGISTRY
    queues = prometheus_client.CollectorRegistry(auto_describe=False)
    queues.register(BacklogCollector())
    body = prometheus_client.generate_latest(registry) + prometheus_client.generate_latest(queues)
    return body, prometheus_client.CONTENT_TYPE_LATEST
