"""messages_ingest / subject_flush / ingest_status / chunks_requeue on Postgres."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Chunk, Message
from memory.services import ServiceError
from memory.services.ingest import (
    IdempotencyConflict,
    IncomingMessage,
    PayloadTooLarge,
    chunks_requeue,
    ingest_status,
    messages_ingest,
    subject_flush,
    subjects_flush_idle,
)

pytestmark = pytest.mark.django_db


def conversation(n_pairs: int, *, prefix: str = "k", start: int = 0) -> list[IncomingMessage]:
    out = []
    for i in range(start, start + n_pairs):
        out.append(IncomingMessage("user", f"user says {i}", f"{prefix}-u{i}"))
        out.append(IncomingMessage("assistant", f"assistant says {i}", f"{prefix}-a{i}"))
    return out


def ingest(tenant, msgs, external_id="alice", **kw):
    return messages_ingest(tenant=tenant, external_id=external_id, messages=msgs, enqueue=False, **kw)


def test_first_sight_creates_subject_and_complete_windows_become_chunks(tenant):
    result = ingest(tenant, conversation(7))
    assert result.subject_created
    assert [seq for _, seq in result.accepted] == list(range(1, 15))
    assert result.cursor == 14 and result.duplicates == ()
    chunks = list(Chunk.objects.filter(subject=result.subject).order_by("start_seq"))
    assert [(c.start_seq, c.end_seq, c.status) for c in chunks] == [(1, 6, "pending"), (7, 12, "pending")]
    assert result.chunks_created == 2
    status = ingest_status(subject=result.subject)
    assert status["unchunked_messages"] == 2 and status["chunked_through_seq"] == 12


def test_retry_of_the_same_batch_duplicates_nothing(tenant):
    first = ingest(tenant, conversation(3))
    again = ingest(tenant, conversation(3))
    assert again.accepted == () and [seq for _, seq in again.duplicates] == [1, 2, 3, 4, 5, 6]
    assert again.cursor == first.cursor == 6
    assert Message.objects.filter(subject=first.subject).count() == 6
    assert Chunk.objects.filter(subject=first.subject).count() == 1


def test_partly_replayed_batch_appends_only_the_new_messages(tenant):
    ingest(tenant, conversation(2))
    mixed = ingest(tenant, conversation(4))
    assert [k for k, _ in mixed.duplicates] == [m.idempotency_key for m in conversation(2)]
    assert [seq for _, seq in mixed.accepted] == [5, 6, 7, 8]
    assert mixed.chunks_created == 1


def test_replayed_key_with_other_content_is_refused_and_nothing_is_written(tenant):
    ingest(tenant, conversation(1))
    batch = [IncomingMessage("user", "new text", "fresh-1"), IncomingMessage("user", "changed!", "k-u0")]
    with pytest.raises(IdempotencyConflict) as err:
        ingest(tenant, batch)
    assert err.value.field == "messages[1].idempotency_key"
    assert not Message.objects.filter(idempotency_key="fresh-1").exists()


@pytest.mark.parametrize(
    ("msg", "field", "code"),
    [
        (IncomingMessage("bot", "hi", "x"), "messages[1].role", "invalid_role"),
        (IncomingMessage("user", "   ", "x"), "messages[1].content", "empty"),
        (IncomingMessage("user", "bad \x00 byte", "x"), "messages[1].content", "invalid_text"),
        (IncomingMessage("user", "bell \x07", "x"), "messages[1].content", "invalid_text"),
        (IncomingMessage("user", "lone \ud800 surrogate", "x"), "messages[1].content", "invalid_text"),
        (IncomingMessage("user", "ok", ""), "messages[1].idempotency_key", "invalid"),
        (IncomingMessage("user", "ok", "a-0"), "messages[1].idempotency_key", "duplicate_key"),
    ],
)
def test_bad_messages_name_the_field(tenant, msg, field, code):
    with pytest.raises(ServiceError) as err:
        ingest(tenant, [IncomingMessage("user", "fine", "a-0"), msg])
    assert (err.value.field, err.value.code, err.value.http_status) == (field, code, 400)
    assert not Message.objects.exists()


def test_tabs_and_newlines_are_fine(tenant):
    assert ingest(tenant, [IncomingMessage("user", "line one\n\tline two\r\n", "t")]).accepted


def test_limits_answer_413(tenant, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "MAX_MESSAGES_PER_CALL": 3, "MAX_MESSAGE_CHARS": 10}
    with pytest.raises(PayloadTooLarge) as err:
        ingest(tenant, conversation(2))
    assert err.value.field == "messages" and err.value.http_status == 413
    with pytest.raises(PayloadTooLarge) as err:
        ingest(tenant, [IncomingMessage("user", "x" * 11, "long")])
    assert err.value.field == "messages[0].content"


def test_flush_closes_the_partial_window_and_is_idempotent(tenant):
    result = ingest(tenant, conversation(4) + [IncomingMessage("user", "unanswered", "last")])
    built = subject_flush(subject=result.subject, enqueue=False)
    assert [(c.start_seq, c.end_seq) for c in built] == [(7, 9)]
    assert subject_flush(subject=result.subject, enqueue=False) == []
    nxt = ingest(tenant, conversation(3, start=10))
    assert [
        (c.start_seq, c.end_seq) for c in Chunk.objects.filter(subject=nxt.subject).order_by("start_seq")
    ] == [
        (1, 6),
        (7, 9),
        (10, 15),
    ]


def test_system_message_is_attached_but_not_part_of_a_span(tenant):
    msgs = [IncomingMessage("system", "persona: a chef", "sys")] + conversation(6)
    result = ingest(tenant, msgs)
    chunks = list(Chunk.objects.filter(subject=result.subject).order_by("start_seq"))
    assert [(c.start_seq, c.end_seq) for c in chunks] == [(2, 7), (8, 13)]
    assert chunks[0].chunk_key != chunks[1].chunk_key


def test_idle_subjects_are_flushed_by_the_sweep_and_on_next_ingest(tenant, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "IDLE_FLUSH_SECONDS": 60}
    result = ingest(tenant, conversation(1))
    assert subjects_flush_idle() == 0  # not idle yet
    assert subjects_flush_idle(now=timezone.now() + timedelta(seconds=61)) == 1
    assert Chunk.objects.filter(subject=result.subject).count() == 1
    # late message after an idle gap: the old window is closed before appending
    other = ingest(tenant, [IncomingMessage("user", "hello", "b1")], external_id="bob")
    later = ingest(
        tenant,
        [IncomingMessage("assistant", "hi", "b2")],
        external_id="bob",
        now=timezone.now() + timedelta(seconds=61),
    )
    assert later.chunks_created == 1
    assert [(c.start_seq, c.end_seq) for c in Chunk.objects.filter(subject=other.subject)] == [(1, 1)]


def test_per_tenant_window_size(tenant):
    tenant.chunk_pairs = 1
    tenant.save()
    result = ingest(tenant, conversation(3))
    assert Chunk.objects.filter(subject=result.subject).count() == 3


def test_same_external_id_in_two_tenants_are_two_subjects(tenant, other_tenant):
    a = ingest(tenant, conversation(1))
    b = ingest(other_tenant, conversation(1))
    assert a.subject.pk != b.subject.pk and b.subject_created
    assert Message.objects.filter(subject=a.subject).count() == 2


def test_requeue_only_touches_failed_chunks(tenant):
    result = ingest(tenant, conversation(6))
    first, second = Chunk.objects.filter(subject=result.subject).order_by("start_seq")
    Chunk.objects.filter(pk=first.pk).update(status="failed", attempts=5, last_error="boom")
    status = ingest_status(subject=result.subject)
    assert status["blocked"] and status["failures"][0]["error"] == "boom"
    assert chunks_requeue(chunk_ids=[first.pk, second.pk], enqueue=False) == 1
    first.refresh_from_db()
    assert (first.status, first.attempts) == ("pending", 0)
