"""Test doubles around the real MemListener with the zero-latency stand-in engine (not a model), and
``drain``: the dispatcher's rounds run in process until nothing is ready."""

from __future__ import annotations

import threading
import time

from memory.services.ingest import IncomingMessage, messages_ingest, subject_flush
from serving.config import EngineConfig
from serving.listener import InProcessClient
from serving.protocol import ListenerResult
from workers.dispatcher import RoundReport, dispatch_round


def standin_client(mode: str = "derived") -> InProcessClient:
    return InProcessClient(EngineConfig(kind="standin", standin_mode=mode))


class WatchingClient:
    """Delegates to the stand-in MemListener; records every job and fails if one subject is ever
    in two concurrent calls, or a subject's jobs arrive out of chunk order."""

    def __init__(self, delay_s: float = 0.0, mode: str = "derived"):
        self.inner = standin_client(mode)
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.in_flight: set[str] = set()
        self.violations: list[str] = []
        self.calls: list[list[str]] = []

    def run(self, jobs):
        subjects = [j.subject_id for j in jobs]
        with self.lock:
            self.calls.append([j.job_id for j in jobs])
            if len(set(subjects)) != len(subjects):
                self.violations.append(f"one batch holds a subject twice: {subjects}")
            for s in subjects:
                if s in self.in_flight:
                    self.violations.append(f"subject {s} in two concurrent calls")
                self.in_flight.add(s)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            return self.inner.run(jobs)
        finally:
            with self.lock:
                self.in_flight.difference_update(subjects)


class FailingClient:
    """Every job fails with the given error (what the real client returns when the model is down)."""

    def __init__(self, *, retryable: bool = True, message: str = "engine down (test)"):
        self.retryable = retryable
        self.message = message
        self.calls = 0

    def run(self, jobs):
        self.calls += 1
        return [ListenerResult(job_id=j.job_id, error=self.message, retryable=self.retryable) for j in jobs]


class RaisingClient:
    def run(self, jobs):
        raise ConnectionError("connection refused (test)")


def ingest_pairs(tenant, external_id: str, n_pairs: int, *, start: int = 0, enqueue: bool = False):
    msgs = []
    for i in range(start, start + n_pairs):
        msgs.append(IncomingMessage("user", f"I like hobby number {i} a lot", f"{external_id}-u{i}"))
        msgs.append(IncomingMessage("assistant", f"Tell me more about hobby {i}", f"{external_id}-a{i}"))
    return messages_ingest(tenant=tenant, external_id=external_id, messages=msgs, enqueue=enqueue)


def ingest_closed(tenant, external_id: str, turns):
    """Ingest ``turns`` (``(role, content)`` pairs) and close the subject's window, a partial one
    too, so that every turn is in a pending chunk; returns the subject."""
    msgs = [IncomingMessage(role, content, f"{external_id}-{i}") for i, (role, content) in enumerate(turns)]
    subject = messages_ingest(tenant=tenant, external_id=external_id, messages=msgs, enqueue=False).subject
    subject_flush(subject=subject, enqueue=False)
    return subject


def drain(
    *, client, max_rounds: int | None = None, tenant_id: int | None = None, index: bool = True, **kwargs
) -> RoundReport:
    """Run ``dispatch_round`` until nothing is ready (synchronous, in process) and sum the reports; stop
    early on an outage, as the Celery task and the backfill do."""
    total = RoundReport()
    rounds = 0
    while max_rounds is None or rounds < max_rounds:
        report = dispatch_round(client=client, tenant_id=tenant_id, index=index, **kwargs)
        rounds += 1
        if not report.claimed:
            break
        for name in (
            "claimed",
            "applied",
            "versions",
            "retried",
            "failed",
            "conflicts",
            "replayed",
            "transient",
        ):
            setattr(total, name, getattr(total, name) + getattr(report, name))
        total.model_s += report.model_s
        total.backend_s += report.backend_s
        total.chunk_ids += report.chunk_ids
        if report.outage:
            break  # the model is unavailable: let the caller back off
    return total
