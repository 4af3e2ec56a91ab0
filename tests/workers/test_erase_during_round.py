"""Erasing a subject during a dispatch round (issue 15): only the erased subject's chunk is dropped.

The erasure lands between the claim and the job build (and, in the second test, between the
model call and the apply); every other subject's chunk of the round is applied in that round and
none is left ``processing`` until its lease expires."""

from __future__ import annotations

import pytest

from memory.models import Chunk, Subject
from memory.services.subjects import subject_erase
from tests.workers.helpers import ingest_pairs, standin_client
from workers import dispatcher

pytestmark = pytest.mark.django_db


def _seed(tenant, other_tenant):
    doomed = ingest_pairs(tenant, "doomed", 3).subject
    keepers = [ingest_pairs(other_tenant, f"keep{i}", 3).subject for i in range(2)]
    return doomed, keepers


def _assert_round_left_keepers_applied(report, keepers, doomed_pk):
    assert not Subject.objects.filter(pk=doomed_pk).exists()
    assert not Chunk.objects.filter(status=Chunk.Status.PROCESSING).exists()
    for keeper in keepers:
        assert list(Chunk.objects.filter(subject=keeper).values_list("status", flat=True)) == ["applied"]
    assert report.applied == len(keepers)
    assert report.failed == 0


def test_erasure_between_claim_and_job_build_drops_only_that_subject(tenant, other_tenant, monkeypatch):
    doomed, keepers = _seed(tenant, other_tenant)
    real_gather = dispatcher.gather

    def gather_then_erase(**kwargs):
        claims = real_gather(**kwargs)
        assert doomed.pk in {c.subject_id for c in claims}
        subject_erase(subject=doomed, erased_by="test")
        return claims

    monkeypatch.setattr(dispatcher, "gather", gather_then_erase)
    report = dispatcher.dispatch_round(client=standin_client(), max_jobs=8, max_wait_ms=0, index=False)
    _assert_round_left_keepers_applied(report, keepers, doomed.pk)


def test_erasure_between_model_call_and_apply_drops_only_that_subject(tenant, other_tenant):
    doomed, keepers = _seed(tenant, other_tenant)
    inner = standin_client()

    class ErasingClient:
        def run(self, jobs):
            results = inner.run(jobs)
            subject_erase(subject=doomed, erased_by="test")
            return results

    report = dispatcher.dispatch_round(client=ErasingClient(), max_jobs=8, max_wait_ms=0, index=False)
    _assert_round_left_keepers_applied(report, keepers, doomed.pk)
