"""The model phase of a backfill (the workers' share, far longer than storing the messages): its
chunks by status, rate and ETA; ``backfill_wait`` polls until none is pending or processing. Waiting
only observes: interrupting it leaves the workers going.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count
from tqdm import tqdm

from memory.models import Chunk

SUBJECTS_PER_QUERY = 2000  # keeps `subject_id IN (...)` well under the databases' parameter limits
# Between polls the wait sleeps at least this many times what the last count took: a count that
# grows with the run (~0.1-0.4 s per 100k chunks measured on Postgres, loaded 2-core host) never
# takes more than a sixth of the database's time for one session.
POLL_COST_FACTOR = 5.0


@dataclass(frozen=True)
class ChunkCounts:
    """Chunks of a set of subjects by status (``failed``: gave up after CHUNK_MAX_ATTEMPTS)."""

    pending: int = 0
    processing: int = 0
    applied: int = 0
    failed: int = 0

    @property
    def total(self) -> int:
        return self.pending + self.processing + self.applied + self.failed

    @property
    def done(self) -> int:
        """Chunks no worker will touch again."""
        return self.applied + self.failed

    @property
    def remaining(self) -> int:
        return self.pending + self.processing


def backfill_chunk_counts(
    *, tenant_id: int, subject_ids: Sequence[int], since: datetime | None = None
) -> ChunkCounts:
    """Chunk counts by status of a backfill's subjects (``since``: of the chunks cut from then on)."""
    counts: Counter[str] = Counter()
    ids = list(dict.fromkeys(subject_ids))
    for start in range(0, len(ids), SUBJECTS_PER_QUERY):
        chunks = Chunk.objects.filter(
            subject__tenant_id=tenant_id, subject_id__in=ids[start : start + SUBJECTS_PER_QUERY]
        )
        if since is not None:
            chunks = chunks.filter(created_at__gte=since)
        counts.update(dict(chunks.values_list("status").annotate(n=Count("id")).order_by()))
    return ChunkCounts(**{s: counts[s] for s in ("pending", "processing", "applied", "failed")})


class RateEstimator:
    """Chunks per second over the last ``window_s`` seconds of observations, and the ETA it gives;
    measured only: no progress yet, no rate and no ETA (None), never a guess."""

    def __init__(self, *, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        self.window_s = window_s
        self.clock = clock
        self._samples: deque[tuple[float, int]] = deque()

    def observe(self, done: int) -> None:
        now = self.clock()
        self._samples.append((now, done))
        # Keep one sample at or before the window's start, so the window is always spanned.
        while len(self._samples) > 2 and self._samples[1][0] <= now - self.window_s:
            self._samples.popleft()

    def rate(self) -> float | None:
        if len(self._samples) < 2:
            return None
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        if t1 <= t0 or d1 <= d0:
            return None
        return (d1 - d0) / (t1 - t0)

    def eta_s(self, remaining: int) -> float | None:
        if remaining <= 0:
            return 0.0
        rate = self.rate()
        return remaining / rate if rate else None


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class ModelPhaseBar:
    """A tqdm bar of chunks done out of the run's chunks, with pending / failed, rate and ETA."""

    FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} chunks [{elapsed}{postfix}]"

    def __init__(self, *, enabled: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.estimator = RateEstimator(clock=clock)
        self.bar = tqdm(
            total=0, desc="model", disable=not enabled, dynamic_ncols=True, bar_format=self.FORMAT
        )

    def show(self, counts: ChunkCounts) -> None:
        self.estimator.observe(counts.done)
        rate = self.estimator.rate()
        self.bar.total = counts.total
        self.bar.n = counts.done
        self.bar.set_postfix(
            applied=counts.applied,
            pending=counts.remaining,
            failed=counts.failed,
            rate=f"{rate:.2f}/s" if rate else "?",
            eta=format_eta(self.estimator.eta_s(counts.remaining)),
        )  # set_postfix refreshes the bar

    def close(self) -> None:
        self.bar.close()


def _sleep(seconds: float) -> None:
    """Between polls (tests replace it with a step of the workers)."""
    time.sleep(seconds)


@dataclass(frozen=True)
class WaitResult:
    counts: ChunkCounts
    waited_s: float
    timed_out: bool


def backfill_wait(
    *,
    tenant_id: int,
    subject_ids: Sequence[int],
    poll_s: float = 2.0,
    timeout_s: float | None = None,
    progress: bool = True,
    clock: Callable[[], float] = time.monotonic,
) -> WaitResult:
    """Poll the run's chunk counts until none is pending or processing (or ``timeout_s`` passes);
    every ``poll_s`` seconds, or ``POLL_COST_FACTOR`` times the last count's duration if longer."""
    started = clock()
    bar = ModelPhaseBar(enabled=progress, clock=clock)
    try:
        while True:
            polled = clock()
            counts = backfill_chunk_counts(tenant_id=tenant_id, subject_ids=subject_ids)
            cost = clock() - polled
            bar.show(counts)
            if counts.remaining == 0:
                return WaitResult(counts, clock() - started, timed_out=False)
            if timeout_s is not None and clock() - started >= timeout_s:
                return WaitResult(counts, clock() - started, timed_out=True)
            _sleep(max(poll_s, POLL_COST_FACTOR * cost))
    finally:
        bar.close()
