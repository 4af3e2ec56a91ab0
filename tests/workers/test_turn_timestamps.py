"""Every turn a job carries says when it was said (issue 23, step 5): the message's ``ts``, or when the
message was received if the client sent none; the batch is still read in one query."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import Message
from memory.services.ingest import IncomingMessage, messages_ingest
from serving.protocol import ListenerJob, ListenerTurn
from workers.caps import bound_turns
from workers.dispatcher import build_jobs
from workers.ordering import _messages, chunks_claim

pytestmark = pytest.mark.django_db

SESSION = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _ingest(tenant, external_id: str, *, ts: datetime | None, system: bool = False) -> None:
    msgs = (
        [IncomingMessage("system", "You are Ana's assistant.", f"{external_id}-s", ts=ts)] if system else []
    )
    for i in range(3):
        when = ts + timedelta(minutes=i) if ts else None
        msgs.append(
            IncomingMessage(
                "user", f"I went to a support group yesterday {i}", f"{external_id}-u{i}", ts=when
            )
        )
        msgs.append(IncomingMessage("assistant", f"How was it {i}?", f"{external_id}-a{i}", ts=when))
    messages_ingest(tenant=tenant, external_id=external_id, messages=msgs)


def test_turns_carry_their_message_ts_and_the_batch_is_one_query(tenant):
    _ingest(tenant, "dated", ts=SESSION, system=True)
    _ingest(tenant, "other", ts=SESSION - timedelta(days=30))
    claims = chunks_claim(limit=5)
    with CaptureQueriesContext(connection) as captured:
        jobs = build_jobs(claims)
    assert len(captured.captured_queries) == (1 if connection.vendor == "postgresql" else 2)
    by_subject = {j.subject_id: j for j in jobs}
    assert len(by_subject) == 2
    for job in jobs:
        stored = {m.content: m.ts for m in Message.objects.filter(subject_id=int(job.subject_id))}
        assert job.turns and all(t.ts is not None for t in job.turns)
        for turn in job.turns:
            content = turn.content
            assert turn.ts == stored[content], content
    dated = next(j for j in jobs if any(t.role == "system" for t in j.turns))
    assert dated.turns[0].role == "system" and dated.turns[0].ts == SESSION
    assert [t.ts for t in dated.turns[1:3]] == [SESSION, SESSION]


def test_a_message_without_ts_is_dated_when_it_was_received(tenant):
    before = datetime.now(UTC)
    _ingest(tenant, "undated", ts=None)
    [job] = build_jobs(chunks_claim(limit=1))
    received = {m.content: m.created_at for m in Message.objects.all()}
    assert all(m.ts is None for m in Message.objects.all())
    for turn in job.turns:
        assert turn.ts == received[turn.content]
        assert turn.ts is not None and turn.ts >= before - timedelta(seconds=5)


def test_a_cut_turn_keeps_its_ts(settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "MEMLISTENER_MAX_TURN_CHARS": 10}
    turns = [
        ListenerTurn(role="user", content="x" * 50, ts=SESSION),
        ListenerTurn(role="assistant", content="short", ts=SESSION),
    ]
    bounded, notice = bound_turns(turns)
    assert notice and bounded[0].content.endswith("[...]")
    assert [t.ts for t in bounded] == [SESSION, SESSION]


def test_listener_turn_ts_is_json_and_optional():
    offset = datetime(2023, 5, 8, 8, 56, tzinfo=timezone(timedelta(hours=-5)))
    turn = ListenerTurn(role="user", content="hi", ts=offset)
    again = ListenerTurn.model_validate_json(turn.model_dump_json())
    assert again == turn and again.ts == offset and again.ts.utcoffset() == timedelta(hours=-5)
    assert ListenerTurn(role="user", content="hi").ts is None
    assert (
        ListenerTurn.model_validate({"role": "user", "content": "hi", "ts": "2023-05-08T13:56:00Z"}).ts
        == SESSION
    )
    with pytest.raises(ValueError):
        ListenerTurn.model_validate({"role": "user", "content": "hi", "when": "2023-05-08"})
    job = ListenerJob(
        job_id="1:1", subject_id="1", base_version=0, schema_id="s", schema_version=1, tree={}, turns=[turn]
    )
    assert ListenerJob.model_validate_json(job.model_dump_json()).turns[0].ts == offset


def test_message_rows_from_json_agg_read_their_timestamp():
    assert _messages([[3, "user", "hi", "2023-05-08T13:56:00+00:00"]]) == [(3, "user", "hi", SESSION)]
    assert _messages([(3, "user", "hi", SESSION)]) == [(3, "user", "hi", SESSION)]
