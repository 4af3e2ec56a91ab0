"""Task and pipeline metrics: a ``personatree.metrics`` log line (DEBUG, every label) and Prometheus,
without :data:`NOT_EXPORTED` (a series per tenant would grow with the tenants); :data:`BUCKETS` reach
past the alerts' thresholds (a quantile above the highest finite bucket reads as that bucket).
"""

from __future__ import annotations

import logging
import threading

import prometheus_client

logger = logging.getLogger("personatree.metrics")


PREFIX = "personatree_"
NOT_EXPORTED = frozenset({"tenant"})
BUCKETS: dict[str, tuple[float, ...]] = {
    "task_duration_seconds": (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0),
    "task_queue_wait_seconds": (0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0),
    "dispatch_model_seconds": (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
    "dispatch_backend_seconds": (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
    "dispatch_batch_size": (1, 2, 4, 8, 16, 32, 64, 128),
}


class Registry:
    """The Prometheus metric of each name and its label names, fixed at first use (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prom: dict[str, object] = {}
        self._labelnames: dict[str, tuple[str, ...]] = {}

    def _prometheus(self, kind: str, name: str, labelnames: tuple[str, ...]):
        metric = self._prom.get(name)
        if metric is None:
            full, doc = PREFIX + name, name.replace("_", " ")
            try:
                if kind != "histogram":
                    metric = prometheus_client.Counter(full, doc, labelnames)
                else:
                    buckets = BUCKETS.get(name, prometheus_client.Histogram.DEFAULT_BUCKETS)
                    metric = prometheus_client.Histogram(full, doc, labelnames, buckets=buckets)
            except ValueError:  # already registered in this process (e.g. module reloaded in tests)
                metric = prometheus_client.REGISTRY._names_to_collectors.get(PREFIX + name)
            self._prom[name] = metric
        return metric

    def record(self, kind: str, name: str, value: float, labels: dict[str, str]) -> None:
        labels = {k: str(v) for k, v in labels.items()}
        with self._lock:
            names = self._labelnames.setdefault(name, tuple(sorted(labels)))
            if tuple(sorted(labels)) != names:
                labels = {k: labels.get(k, "") for k in names}
            exported = tuple(n for n in names if n not in NOT_EXPORTED)
            metric = self._prometheus(kind, name, exported)
        if metric is not None:
            child = metric.labels(**{k: labels[k] for k in exported}) if exported else metric
            if kind == "histogram":
                child.observe(value)
            else:
                child.inc(value)
        logger.debug("metric %s=%s %s", name, value, labels)


registry = Registry()


def observe(name: str, value: float, **labels: str) -> None:
    """A duration or size (histogram)."""
    registry.record("histogram", name, float(value), labels)


def incr(name: str, amount: float = 1.0, **labels: str) -> None:
    """A count (counter)."""
    registry.record("counter", name, float(amount), labels)
