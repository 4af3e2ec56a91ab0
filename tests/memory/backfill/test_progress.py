"""Backfill progress over the model phase: the chunk-count selector, rate and ETA, the in-process
drain (--process) and following the workers (default without --process), on the stand-in engine."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memory.backfill import JsonlSource, PersonamemSource
from memory.backfill import progress as progress_mod
from memory.backfill.progress import (
    ChunkCounts,
    ModelPhaseBar,
    RateEstimator,
    backfill_chunk_counts,
    backfill_wait,
    format_eta,
)
from memory.backfill.service import backfill_run
from memory.models import Chunk
from tests.workers.helpers import standin_client
from workers.dispatcher import dispatch_round

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "backfill"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_rate_and_eta_come_from_observed_progress_only():
    clock = Clock()
    est = RateEstimator(window_s=60, clock=clock)
    est.observe(100)  # an earlier run's chunks: not progress of this one
    assert est.rate() is None and est.eta_s(50) is None
    clock.now = 10
    est.observe(100)
    assert est.rate() is None and est.eta_s(50) is None  # nothing moved: no guess
    clock.now = 20
    est.observe(120)
    assert est.rate() == pytest.approx(1.0)  # 20 chunks in 20 s
    assert est.eta_s(30) == pytest.approx(30.0)
    assert est.eta_s(0) == 0.0


def test_rate_follows_the_recent_window():
    clock = Clock()
    est = RateEstimator(window_s=30, clock=clock)
    for t, done in [(0, 0), (10, 100), (20, 200), (30, 210), (40, 220), (50, 230), (60, 240)]:
        clock.now = t
        est.observe(done)
    # The first fast minute has left the 30 s window: 1 chunk/s now (from t=30 to t=60), not 4.
    assert est.rate() == pytest.approx(1.0)
    assert est.eta_s(90) == pytest.approx(90.0)
    with pytest.raises(ValueError, match="window_s"):
        RateEstimator(window_s=0)


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, "?"), (0, "00:00"), (59.6, "01:00"), (754, "12:34"), (3723, "1:02:03")]
)
def test_eta_format(seconds, text):
    assert format_eta(seconds) == text


def test_counts_cover_only_the_runs_subjects(tenant, other_tenant):
    mine = backfill_run(tenant=tenant, histories=JsonlSource(FIXTURES / "history.jsonl"), progress=False)
    theirs = backfill_run(
        tenant=other_tenant, histories=JsonlSource(FIXTURES / "history.jsonl"), progress=False
    )
    counts = backfill_chunk_counts(tenant_id=tenant.pk, subject_ids=mine.subject_ids)
    assert counts == ChunkCounts(pending=mine.chunks)
    assert counts.total == Chunk.objects.filter(subject__tenant=tenant).count() == mine.chunks
    # Another tenant's subject ids never count, even when passed.
    assert backfill_chunk_counts(tenant_id=tenant.pk, subject_ids=theirs.subject_ids) == ChunkCounts()
    one = backfill_chunk_counts(tenant_id=tenant.pk, subject_ids=mine.subject_ids[:1])
    assert 0 < one.total < counts.total


@pytest.fixture
def shown(monkeypatch):
    """Every ChunkCounts the model-phase bar displays, in order."""
    seen: list[ChunkCounts] = []
    real_show = ModelPhaseBar.show

    def show(self, counts):
        seen.append(counts)
        real_show(self, counts)

    monkeypatch.setattr(ModelPhaseBar, "show", show)
    return seen


def _assert_progresses_to_all_applied(seen: list[ChunkCounts], total: int) -> None:
    assert len(seen) >= 3, seen  # a start, steps, an end: not a single final number
    assert seen[0].applied < total
    assert [c.done for c in seen] == sorted(c.done for c in seen)
    assert all(c.total == total for c in seen)
    assert seen[-1] == ChunkCounts(applied=total)


def test_process_progress_counts_chunks_until_all_are_applied(tenant, shown):
    # A round takes one chunk per subject (order is kept): several rounds for these histories.
    report = backfill_run(
        tenant=tenant,
        histories=PersonamemSource(FIXTURES / "personamem_tiny.jsonl"),
        process=True,
        client=standin_client(),
        progress=True,
        index=False,
    )
    total = Chunk.objects.filter(subject__tenant=tenant).count()
    assert total == report.chunks >= 3
    _assert_progresses_to_all_applied(shown, total)
    assert report.model == ChunkCounts(applied=total)


def test_waiting_follows_the_workers_until_every_chunk_is_applied(tenant, shown, settings, monkeypatch):
    """Without --process the run enqueues one dispatcher and polls the selector; here each pause
    between polls is one round of a worker (two chunks) on the stand-in engine."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    dispatches = []
    monkeypatch.setattr("memory.backfill.service.schedule_dispatch", lambda: dispatches.append(1))
    worker = standin_client()

    def worker_round(_seconds):
        dispatch_round(client=worker, max_jobs=2, max_wait_ms=0, tenant_id=tenant.pk, index=False)

    monkeypatch.setattr(progress_mod, "_sleep", worker_round)
    report = backfill_run(
        tenant=tenant, histories=JsonlSource(FIXTURES / "history.jsonl"), wait=True, poll_s=0.01
    )
    assert dispatches == [1]
    total = report.chunks
    _assert_progresses_to_all_applied(shown, total)
    assert report.model == ChunkCounts(applied=total) and not report.wait_timed_out
    assert set(Chunk.objects.values_list("status", flat=True)) == {"applied"}


def test_waiting_stops_at_the_timeout_and_reports_what_is_left(tenant, monkeypatch):
    report = backfill_run(tenant=tenant, histories=JsonlSource(FIXTURES / "history.jsonl"), progress=False)
    clock = Clock()

    def no_worker(seconds):
        clock.now += seconds

    monkeypatch.setattr(progress_mod, "_sleep", no_worker)
    result = backfill_wait(
        tenant_id=tenant.pk,
        subject_ids=report.subject_ids,
        poll_s=2,
        timeout_s=5,
        progress=False,
        clock=clock,
    )
    assert result.timed_out and result.waited_s == 6
    assert result.counts == ChunkCounts(pending=report.chunks)


def test_polling_backs_off_when_counting_is_slow(monkeypatch):
    """A count that takes 1 s makes the wait sleep 5 s (the database's share stays small); a
    fast one keeps the requested interval."""
    clock = Clock()
    slept: list[float] = []
    costs = iter([1.0, 1.0, 0.01, 0.0])

    def slow_count(**_kw):
        clock.now += next(costs)
        return ChunkCounts(pending=1) if len(slept) < 3 else ChunkCounts(applied=1)

    def sleep(seconds):
        slept.append(seconds)
        clock.now += seconds

    monkeypatch.setattr(progress_mod, "backfill_chunk_counts", slow_count)
    monkeypatch.setattr(progress_mod, "_sleep", sleep)
    result = backfill_wait(tenant_id=1, subject_ids=[1], poll_s=2, progress=False, clock=clock)
    assert slept == [5.0, 5.0, 2]
    assert result.counts == ChunkCounts(applied=1) and not result.timed_out


def test_eager_celery_does_not_wait_and_says_why(tenant):
    report = backfill_run(
        tenant=tenant, histories=JsonlSource(FIXTURES / "history.jsonl"), wait=True, progress=False
    )
    assert report.model is None and "use --process" in report.wait_skipped
    assert set(Chunk.objects.values_list("status", flat=True)) == {"pending"}


def _command(tenant, *args: str) -> str:
    out = StringIO()
    call_command("backfill", str(FIXTURES / "history.jsonl"), "--tenant", tenant.name, *args, stdout=out)
    return out.getvalue()


def test_command_reports_the_model_phase(tenant):
    assert "not waiting for the model phase" in _command(tenant, "--no-progress")
    assert "model phase" not in _command(tenant, "--no-progress", "--no-wait")
    with pytest.raises(CommandError, match="--wait-timeout must be positive"):
        _command(tenant, "--wait-timeout", "0")
