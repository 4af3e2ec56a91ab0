"""Dispatcher rounds in-process on Postgres, with the stand-in MemListener (not a model)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Chunk, OpRecord, TreeVersion
from memory.services.ingest import chunks_requeue
from memory.services.tree import Actor, leaf_edit
from serving.protocol import ListenerResult
from tests.workers.helpers import (
    FailingClient,
    RaisingClient,
    WatchingClient,
    drain,
    ingest_pairs,
    standin_client,
)
from workers.dispatcher import apply_batch, build_jobs, dispatch_round
from workers.ordering import chunks_claim, ready_chunks

pytestmark = pytest.mark.django_db


def applied_in_order(subject) -> list[tuple[int, int]]:
    """(version number, chunk start_seq) of the subject's chunk-made versions."""
    return list(
        TreeVersion.objects.filter(subject=subject, chunk__isnull=False)
        .order_by("number")
        .values_list("number", "chunk__start_seq")
    )


def test_drain_applies_every_chunk_once_in_order(tenant):
    subjects = [ingest_pairs(tenant, f"s{i}", 12).subject for i in range(3)]
    client = WatchingClient()
    report = drain(client=client, max_jobs=16, max_wait_ms=0, index=False)
    assert report.applied == 12 and report.failed == 0
    assert client.violations == []
    for subject in subjects:
        assert set(Chunk.objects.filter(subject=subject).values_list("status", flat=True)) == {"applied"}
        rows = applied_in_order(subject)
        assert [start for _, start in rows] == sorted(start for _, start in rows)
        assert [n for n, _ in rows] == list(range(1, len(rows) + 1))
        subject.refresh_from_db()
        assert subject.head_version == len(rows) >= 1
    # every op record points at the chunk and model that produced it
    assert not OpRecord.objects.filter(chunk__isnull=True).exists()
    assert set(OpRecord.objects.values_list("model_id", flat=True)) == {"standin:derived"}


def test_one_round_batches_one_chunk_per_subject(tenant):
    for i in range(5):
        ingest_pairs(tenant, f"b{i}", 6)  # two chunks each
    client = WatchingClient()
    report = dispatch_round(client=client, max_jobs=3, max_wait_ms=0, index=False)
    assert report.claimed == 3 and len(client.calls[0]) == 3
    report = dispatch_round(client=client, max_jobs=16, max_wait_ms=0, index=False)
    assert report.claimed == 5  # next: the 2 untouched subjects' first and the 3 others' second chunks
    assert client.violations == []


def test_gather_waits_for_more_subjects_up_to_max_wait(tenant):
    ingest_pairs(tenant, "w0", 3)
    sleeps = []

    def fake_sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 1:
            ingest_pairs(tenant, "w1", 3)  # arrives while the dispatcher waits

    report = dispatch_round(
        client=standin_client(), max_jobs=4, max_wait_ms=50, index=False, sleep=fake_sleep
    )
    assert report.claimed == 2 and sleeps


class OneFailsClient:
    """The stand-in MemListener, except that jobs of one subject get a retryable error: a problem of
    that chunk (the other jobs of the batch got answers), not an outage."""

    def __init__(self, subject_id: int):
        self.inner, self.subject_id = standin_client(), str(subject_id)

    def run(self, jobs):
        return [
            ListenerResult(job_id=j.job_id, error="engine down (test)", retryable=True)
            if j.subject_id == self.subject_id
            else r
            for j, r in zip(jobs, self.inner.run(jobs), strict=True)
        ]


def test_retryable_errors_fail_the_chunk_after_max_attempts_and_block_the_subject(tenant, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_MAX_ATTEMPTS": 3}
    subject = ingest_pairs(tenant, "f", 6).subject
    first, second = Chunk.objects.filter(subject=subject).order_by("start_seq")
    client = OneFailsClient(subject.pk)
    for expected_attempts in (1, 2, 3):
        ingest_pairs(tenant, f"ok{expected_attempts}", 3)  # another subject answered in the same batch
        report = dispatch_round(client=client, max_wait_ms=0, index=False)
        assert report.claimed == 2 and report.transient == 1 and not report.outage
        first.refresh_from_db()
        assert first.attempts == expected_attempts
    assert first.status == "failed" and "engine down" in first.last_error
    second.refresh_from_db()
    assert second.status == "pending" and second.attempts == 0  # never ran out of order
    assert dispatch_round(client=standin_client(), max_wait_ms=0, index=False).claimed == 0  # blocked
    assert chunks_requeue(chunk_ids=[first.pk]) == 1
    drain(client=standin_client(), max_wait_ms=0, index=False)
    assert list(Chunk.objects.filter(subject=subject).values_list("status", flat=True)) == [
        "applied",
        "applied",
    ]


def test_non_retryable_error_fails_at_once(tenant):
    subject = ingest_pairs(tenant, "nr", 3).subject
    dispatch_round(
        client=FailingClient(retryable=False, message="prompt too long"), max_wait_ms=0, index=False
    )
    chunk = Chunk.objects.get(subject=subject)
    assert (chunk.status, chunk.attempts, chunk.last_error) == ("failed", 1, "prompt too long")


def test_transport_exception_is_a_retryable_error_of_every_job(tenant):
    ingest_pairs(tenant, "t0", 3)
    ingest_pairs(tenant, "t1", 3)
    report = dispatch_round(client=RaisingClient(), max_wait_ms=0, index=False)
    assert report.claimed == 2 and report.transient == 2
    assert set(Chunk.objects.values_list("status", flat=True)) == {"pending"}
    assert "connection refused" in Chunk.objects.first().last_error


@pytest.mark.parametrize("first", ["old", "new"])
def test_expired_lease_is_reclaimed_and_the_chunk_is_applied_once(tenant, settings, first):
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_LEASE_SECONDS": 30}
    subject = ingest_pairs(tenant, "l", 3).subject
    [old] = chunks_claim(limit=5)
    assert chunks_claim(limit=5) == []  # leased
    later = timezone.now() + timedelta(seconds=31)
    assert ready_chunks(now=later).count() == 1
    [new] = chunks_claim(limit=5, now=later)
    assert (new.chunk_id, new.token) == (old.chunk_id, old.token + 1)
    client = standin_client()
    from workers.dispatcher import RoundReport

    reports = {}
    for claim in (old, new) if first == "old" else (new, old):
        jobs = build_jobs([claim])
        reports[claim.token] = RoundReport()
        apply_batch([claim], jobs, client.run(jobs), index=False, report=reports[claim.token])
    winner, loser = (old, new) if first == "old" else (new, old)
    assert reports[winner.token].applied == 1 and reports[loser.token].replayed == 1
    assert TreeVersion.objects.filter(subject=subject).count() == 1
    assert OpRecord.objects.filter(subject=subject).values("batch").order_by().distinct().count() == 1
    # the stale holder cannot fail or re-queue the chunk either
    from workers.ordering import chunk_release

    assert chunk_release(old, error="late error") == ""
    assert Chunk.objects.get(pk=old.chunk_id).status == "applied"


def test_version_conflict_requeues_without_failing(tenant):
    subject = ingest_pairs(tenant, "vc", 3).subject
    [claim] = chunks_claim(limit=1)
    jobs = build_jobs([claim])
    leaf_edit(subject=subject, path=_any_leaf(), value="set by a moderator", actor=Actor.system("test"))
    from workers.dispatcher import RoundReport

    report = RoundReport()
    apply_batch([claim], jobs, standin_client().run(jobs), index=False, report=report)
    assert report.conflicts == 1
    chunk = Chunk.objects.get(pk=claim.chunk_id)
    assert chunk.status == "pending" and chunk.last_error == ""
    assert drain(client=standin_client(), max_wait_ms=0, index=False).applied == 1


def _any_leaf() -> str:
    from memory.engine.schema import default_schema

    return default_schema().paths[0]


def test_system_turn_is_sent_first_with_every_chunk(tenant):
    from memory.services.ingest import IncomingMessage, messages_ingest

    msgs = [IncomingMessage("system", "Persona: retired pilot", "sys")]
    for i in range(6):
        msgs += [IncomingMessage("user", f"u{i}", f"u{i}"), IncomingMessage("assistant", f"a{i}", f"a{i}")]
    messages_ingest(tenant=tenant, external_id="sys", messages=msgs, enqueue=False)
    claims = chunks_claim(limit=1)
    jobs = build_jobs(claims)
    assert [(t.role, t.content) for t in jobs[0].turns][:2] == [
        ("system", "Persona: retired pilot"),
        ("user", "u0"),
    ]
    assert len(jobs[0].turns) == 7


class NulClient:
    """The stand-in MemListener, except that the second job's op value holds a NUL, which
    PostgreSQL refuses: a real database error in the middle of the batch write."""

    def __init__(self):
        self.inner = standin_client()

    def run(self, jobs):
        results = self.inner.run(jobs)
        bad = results[1]
        return [
            *results[:1],
            bad.model_copy(update={"ops": [bad.ops[0].model_copy(update={"value": "bad \x00 value"})]}),
            *results[2:],
        ]


@pytest.mark.django_db(transaction=True)
def test_a_database_error_fails_its_chunk_only_and_the_batch_lands(tenant):
    subjects = [ingest_pairs(tenant, f"db{i}", 3).subject for i in range(3)]
    report = dispatch_round(client=NulClient(), max_jobs=3, max_wait_ms=0, index=False)
    assert report.claimed == 3 and report.applied == 2 and report.retried == 1 and report.failed == 0
    versions = [TreeVersion.objects.filter(subject=s).count() for s in subjects]
    assert sorted(versions) == [0, 1, 1]
    [bad] = Chunk.objects.filter(status="pending")
    assert bad.last_error.startswith("apply failed") and bad.attempts == 1
    assert OpRecord.objects.order_by().values("chunk_id").distinct().count() == 2
    assert drain(client=standin_client(), max_wait_ms=0, index=False).applied == 1  # the retry lands


def test_a_batch_round_applies_with_a_constant_number_of_statements(tenant):
    """Claim (one UPDATE ... SKIP LOCKED ... RETURNING), build (heads and messages), apply (SAVEPOINT,
    lock, write, RELEASE; BEGIN/COMMIT on their own): the same 6 statements for 1 subject or 12."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for n, prefix in ((1, "one"), (12, "many")):
        for i in range(n):
            ingest_pairs(tenant, f"{prefix}{i}", 3)
        with CaptureQueriesContext(connection) as captured:
            report = dispatch_round(client=standin_client(), max_jobs=16, max_wait_ms=0, index=False)
        assert report.applied == n
        counts.append(len(captured.captured_queries))
    assert counts == [6, 6]


def test_the_one_statement_claim_takes_exactly_the_ready_chunks(tenant, other_tenant, settings):
    """The PostgreSQL claim SQL and ``ready_chunks`` agree: head of line only, expired leases, failed
    chunks blocking their subject, the tenant filter and excluded subjects."""
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_LEASE_SECONDS": 30}
    subjects = {
        name: ingest_pairs(tenant, name, 6).subject for name in ("fresh", "leased", "expired", "blocked")
    }
    ingest_pairs(other_tenant, "elsewhere", 3)
    ingest_pairs(tenant, "excluded", 3)
    first = {
        name: Chunk.objects.filter(subject=s).order_by("start_seq").first() for name, s in subjects.items()
    }
    Chunk.objects.filter(pk=first["leased"].pk).update(status="processing", attempts=1)
    Chunk.objects.filter(pk=first["expired"].pk).update(
        status="processing", attempts=1, updated_at=timezone.now() - timedelta(seconds=60)
    )
    Chunk.objects.filter(pk=first["blocked"].pk).update(status="failed", attempts=5)
    excluded = Chunk.objects.get(subject__external_id="excluded").subject_id
    expected = set(
        ready_chunks(tenant_id=tenant.pk, exclude_subjects={excluded}).values_list("pk", flat=True)
    )
    claims = chunks_claim(limit=16, tenant_id=tenant.pk, exclude_subjects={excluded})
    assert {c.chunk_id for c in claims} == expected == {first["fresh"].pk, first["expired"].pk}
    assert {c.chunk_id: c.token for c in claims} == {first["fresh"].pk: 1, first["expired"].pk: 2}
    assert chunks_claim(limit=16, tenant_id=tenant.pk, exclude_subjects={excluded}) == []
