"""Task and pipeline metrics: a logger line, an in-process registry and Prometheus.

Every observation goes to three places:

- the ``personatree.metrics`` logger (DEBUG; one line per observation);
- an in-process registry (:func:`snapshot`, used by tests and ``bench/bench_ingest.py``);
- ``prometheus_client`` histograms/counters (a dependency).

Label names are fixed per metric at first use (Prometheus requires that). Prometheus never gets the
labels in :data:`NOT_EXPORTED` (``tenant``): one series per tenant would grow every scrape with the
number of tenants (a histogram is 11 to 17 lines a series). The in-process registry and the log line keep
them; per-tenant questions are answered by the logs (every line carries the tenant id).

A histogram's buckets come from :data:`BUCKETS` (prometheus_client's default ladder, 5 ms to 10 s,
otherwise): a quantile above the highest finite bucket reads as that bucket, so the MemListener's
batch time must reach past the 60 s of its alert (``docker/prometheus/alerts.yml``), and a batch
size is a count, not seconds.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from dataclasses import dataclass, field

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


@dataclass
class Series:
    count: int = 0
    total: float = 0.0
    max: float = 0.0
    values: list[float] = field(default_factory=list)

    def add(self, value: float, keep: int) -> None:
        self.count += 1
        self.total += value
        self.max = max(self.max, value)
        if len(self.values) < keep:
            self.values.append(value)


class Registry:
    """Thread-safe in-process store of observations, keyed by (name, sorted labels)."""

    KEEP = 100_000  # raw values kept per series (for medians in benchmarks)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._series: dict[tuple, Series] = defaultdict(Series)
        self._prom: dict[str, object] = {}
        self._labelnames: dict[str, tuple[str, ...]] = {}

    def _prometheus(self, kind: str, name: str, labelnames: tuple[str, ...]):
        metric = self._prom.get(name)
        if metric is None:
            full, doc = PREFIX + name, name.replace("_", " ")
            try:
                if kind != "histogram":
                    metric = prometheus_client.Counter(full, doc, labelnames)
                elif name in BUCKETS:
                    metric = prometheus_client.Histogram(full, doc, labelnames, buckets=BUCKETS[name])
                else:
                    metric = prometheus_client.Histogram(full, doc, labelnames)
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
            self._series[(name, tuple(sorted(labels.items())))].add(value, self.KEEP)
            exported = tuple(n for n in names if n not in NOT_EXPORTED)
            metric = self._prometheus(kind, name, exported)
        if metric is not None:
            child = metric.labels(**{k: labels[k] for k in exported}) if exported else metric
            if kind == "histogram":
                child.observe(value)
            else:
                child.inc(value)
        logger.debug("metric %s=%s %s", name, value, labels)

    def snapshot(self) -> dict[str, list[dict]]:
        """``{name: [{"labels": {...}, "count", "total", "max", "values"}]}`` (a copy)."""
        out: dict[str, list[dict]] = defaultdict(list)
        with self._lock:
            for (name, labels), series in self._series.items():
                out[name].append(
                    {
                        "labels": dict(labels),
                        "count": series.count,
                        "total": series.total,
                        "max": series.max,
                        "values": list(series.values),
                    }
                )
        return dict(out)

    def reset(self) -> None:
        with self._lock:
            self._series.clear()


registry = Registry()


def observe(name: str, value: float, **labels: str) -> None:
    """A duration or size (histogram)."""
    registry.record("histogram", name, float(value), labels)


def incr(name: str, amount: float = 1.0, **labels: str) -> None:
    """A count (counter)."""
    registry.record("counter", name, float(amount), labels)


def snapshot() -> dict[str, list[dict]]:
    return registry.snapshot()


def values(name: str, **labels: str) -> list[float]:
    """Raw observed values of ``name`` across series whose labels include ``labels``."""
    found: list[float] = []
    for series in registry.snapshot().get(name, []):
        if all(series["labels"].get(k) == str(v) for k, v in labels.items()):
            found.extend(series["values"])
    return found


def total(name: str, **labels: str) -> float:
    return sum(
        s["total"]
        for s in registry.snapshot().get(name, [])
        if all(s["labels"].get(k) == str(v) for k, v in labels.items())
    )
