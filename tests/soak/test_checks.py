"""The soak's end checks find what they count: a clean run is all zeros, and each kind of damage
(a chunk lost, applied twice, left pending, a head that is not the replay of its log, a message
not stored) is counted where it is. Stand-in engine, dispatcher in process, PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from memory.models import Chunk, Message, OpRecord, Subject, TreeVersion
from tests.soak.chaos import _messages
from tests.soak.checks import soak_checks
from tests.workers.helpers import drain, standin_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def applied(tenant):
    from memory.services.ingest import messages_ingest

    for external_id in ("a", "b"):
        for call in range(3):
            messages_ingest(
                tenant=tenant, external_id=external_id, messages=_messages(external_id, call), enqueue=False
            )
    report = drain(client=standin_client(), max_wait_ms=0, index=False)
    assert report.applied == 6
    return {"a": 3, "b": 3}


def _counts(result):
    return {k: result[k] for k in ("lost", "double_applied", "stuck", "head_mismatch")}


def test_a_clean_run_is_all_zeros(applied):
    result = soak_checks(applied)
    assert _counts(result) == {"lost": 0, "double_applied": 0, "stuck": 0, "head_mismatch": 0}
    assert result["chunks"] == result["applied"] == result["versions"] == 6


def test_a_second_apply_of_a_chunk_is_double(applied):
    record = OpRecord.objects.filter(chunk__isnull=False).first()
    record.pk, record.batch = None, uuid.uuid4()
    record.save()
    assert _counts(soak_checks(applied))["double_applied"] == 1


def test_a_missing_chunk_and_a_missing_subject_are_lost(applied):
    Chunk.objects.filter(subject__external_id="a", start_seq=7).delete()
    assert _counts(soak_checks(applied))["lost"] == 1
    assert _counts(soak_checks({**applied, "c": 2}))["lost"] == 3


def test_a_chunk_not_applied_is_stuck(applied):
    Chunk.objects.filter(subject__external_id="b", start_seq=13).update(status="failed")
    assert _counts(soak_checks(applied))["stuck"] == 1


def test_a_head_that_is_not_the_replay_of_its_log_is_a_mismatch(applied):
    subject = Subject.objects.get(external_id="a")
    head = TreeVersion.objects.get(pk=subject.head_id)
    head.snapshot = {**head.snapshot, "identity/name": "Nobody"}
    head.save()
    assert _counts(soak_checks(applied))["head_mismatch"] == 1


def test_an_accepted_message_not_stored_is_lost(applied):
    # (a message stored twice cannot be: (subject, idempotency_key) is unique in the database)
    Message.objects.filter(subject__external_id="b").order_by("-seq").first().delete()
    assert _counts(soak_checks(applied))["lost"] == 1


def test_a_poison_chunk_failed_alone_is_quarantined_and_one_applied_is_not(applied):
    poisoned = frozenset({("b", 2)})
    chunk = Chunk.objects.filter(subject__external_id="b", start_seq=13)
    chunk.update(status="failed", last_error="poison chunk: memlistener HTTP 500")
    result = soak_checks(applied, poisoned=poisoned)
    assert (result["quarantined"], result["stuck"], result["poison_expected"]) == (1, 0, 1)
    chunk.update(status="applied", last_error="")
    result = soak_checks(applied, poisoned=poisoned)
    assert (result["quarantined"], result["stuck"]) == (0, 1)
