"""A MemListener outage does not burn attempts; a per-chunk error still does. Stand-in engine."""

from __future__ import annotations

import pytest

from memory.models import Chunk, TreeVersion
from serving.protocol import ListenerResult
from tests.workers.helpers import FailingClient, RaisingClient, drain, ingest_pairs, standin_client
from workers.dispatcher import dispatch_round

pytestmark = pytest.mark.django_db


def _states(subjects):
    return sorted(
        Chunk.objects.filter(subject__in=subjects).values_list("subject__external_id", "status", "attempts")
    )


@pytest.mark.parametrize("down", [FailingClient, RaisingClient], ids=["retryable_results", "transport"])
def test_outage_rounds_leave_chunks_pending_with_attempts_unchanged_then_apply(tenant, settings, down):
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_MAX_ATTEMPTS": 3}
    subjects = [ingest_pairs(tenant, f"o{i}", 3).subject for i in range(3)]
    before = _states(subjects)
    assert before == [(f"o{i}", "pending", 0) for i in range(3)]
    for _ in range(7):  # more outage rounds than CHUNK_MAX_ATTEMPTS
        report = dispatch_round(client=down(), max_jobs=16, max_wait_ms=0, index=False)
        assert report.claimed == 3 and report.outage and report.transient == 3 and report.failed == 0
        assert _states(subjects) == before
    assert all(c.last_error for c in Chunk.objects.all())  # the outage is visible on the chunk
    report = drain(client=standin_client(), max_wait_ms=0, index=False)  # the outage heals
    assert report.applied == 3 and report.failed == 0
    assert {s: TreeVersion.objects.filter(subject=s).count() for s in subjects} == {s: 1 for s in subjects}


def test_drain_stops_at_an_outage(tenant):
    ingest_pairs(tenant, "d", 6)
    report = drain(client=FailingClient(), max_wait_ms=0, index=False)
    assert report.claimed == 1 and report.transient == 1
    assert Chunk.objects.filter(attempts=0, status="pending").count() == 2


class MixedClient:
    """Answers every job with the stand-in except one subject's: a non-retryable error of that job."""

    def __init__(self, bad_subject_id: int, *, retryable: bool = False):
        self.inner, self.bad, self.retryable = standin_client(), str(bad_subject_id), retryable

    def run(self, jobs):
        return [
            ListenerResult(job_id=j.job_id, error="prompt too long (test)", retryable=self.retryable)
            if j.subject_id == self.bad
            else r
            for j, r in zip(jobs, self.inner.run(jobs), strict=True)
        ]


def test_a_non_retryable_error_still_counts_even_when_the_whole_batch_fails(tenant):
    ingest_pairs(tenant, "n0", 3)
    ingest_pairs(tenant, "n1", 3)
    report = dispatch_round(
        client=FailingClient(retryable=False, message="bad request"), max_wait_ms=0, index=False
    )
    assert not report.outage and report.failed == 2
    assert set(Chunk.objects.values_list("status", "attempts")) == {("failed", 1)}


def test_a_per_chunk_error_beside_answered_jobs_counts(tenant):
    bad = ingest_pairs(tenant, "bad", 3).subject
    good = ingest_pairs(tenant, "good", 3).subject
    report = dispatch_round(client=MixedClient(bad.pk), max_wait_ms=0, index=False)
    assert not report.outage and report.applied == 1 and report.failed == 1
    assert Chunk.objects.get(subject=bad).attempts == 1
    assert Chunk.objects.get(subject=good).status == "applied"
