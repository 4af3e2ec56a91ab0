"""Over-long input never blocks a subject: turns are cut to the MemListener's caps, the chunk says so
(``Chunk.notice``), and the subject's later chunks follow. Stand-in engine, not a model."""

from __future__ import annotations

import pytest

from memory.models import Chunk, TreeVersion
from memory.services.ingest import IncomingMessage, messages_ingest
from serving.protocol import ListenerResult, ListenerTurn
from tests.workers.helpers import drain, ingest_pairs, standin_client
from workers.caps import bound_turns
from workers.dispatcher import build_jobs
from workers.ordering import chunks_claim

pytestmark = pytest.mark.django_db

CONTEXT_CHARS = 40_000  # the pretend model's context window, in characters


class ContextLimitedClient:
    """The stand-in MemListener behind a context window: a job whose turns are longer is refused
    with a non-retryable error, as llama.cpp refuses a prompt longer than ``n_ctx``."""

    def __init__(self):
        self.inner = standin_client()
        self.sizes: list[int] = []

    def run(self, jobs):
        sizes = [sum(len(t.content) for t in j.turns) for j in jobs]
        self.sizes += sizes
        ok = [j for j, n in zip(jobs, sizes, strict=True) if n <= CONTEXT_CHARS]
        answers = dict(zip([j.job_id for j in ok], self.inner.run(ok) if ok else [], strict=True))
        return [
            answers.get(j.job_id)
            or ListenerResult(job_id=j.job_id, error="prompt longer than the context window", retryable=False)
            for j in jobs
        ]


def test_a_200000_character_message_is_cut_and_the_subject_continues(tenant, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "MAX_MESSAGE_CHARS": 300_000}
    huge = "I work as a nurse in Lyon. " + "blah " * 40_000  # 200,027 characters
    assert len(huge) > 200_000
    msgs = [IncomingMessage("user", huge, "u0"), IncomingMessage("assistant", "Tell me more.", "a0")]
    for i in range(1, 3):
        msgs += [
            IncomingMessage("user", f"I like hiking {i}", f"u{i}"),
            IncomingMessage("assistant", "ok", f"a{i}"),
        ]
    subject = messages_ingest(tenant=tenant, external_id="long", messages=msgs, enqueue=False).subject
    ingest_pairs(tenant, "long", 3, start=10)  # the subject's next chunk, behind the long one
    client = ContextLimitedClient()
    report = drain(client=client, max_wait_ms=0, index=False)
    assert report.failed == 0 and report.applied == 2
    assert max(client.sizes) <= 16_000 + 100  # the chunk cap, plus the cut marks
    first, second = Chunk.objects.filter(subject=subject).order_by("start_seq")
    assert (first.status, second.status) == ("applied", "applied")
    assert "200027 -> 6000" in first.notice and second.notice == ""
    assert TreeVersion.objects.filter(subject=subject).count() == 2


def test_turns_are_cut_per_turn_then_to_the_chunk_cap_sharing_it(settings):
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_MAX_TURN_CHARS": 100,
        "MEMLISTENER_MAX_CHUNK_CHARS": 150,
    }
    turns = [
        ListenerTurn(role="user", content="a" * 500),
        ListenerTurn(role="assistant", content="short"),
        ListenerTurn(role="user", content="b" * 90),
    ]
    bounded, notice = bound_turns(turns)
    assert [len(t.content.removesuffix(" [...]")) for t in bounded] == [73, 5, 72]
    assert bounded[1] is turns[1] and bounded[0].content.startswith("aaa")
    assert "user turn 1: 500 -> 73" in notice and "user turn 3: 90 -> 72" in notice
    small = [ListenerTurn(role="user", content="fits")]
    assert bound_turns(small) == (small, "")


def test_caps_of_zero_mean_no_cap(settings):
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_MAX_TURN_CHARS": 0,
        "MEMLISTENER_MAX_CHUNK_CHARS": 0,
    }
    turns = [ListenerTurn(role="user", content="x" * 100_000)]
    assert bound_turns(turns) == (turns, "")


def test_a_normal_chunk_is_sent_whole_and_gets_no_notice(tenant):
    ingest_pairs(tenant, "n", 3)
    [job] = build_jobs(chunks_claim(limit=1))
    assert "[...]" not in " ".join(t.content for t in job.turns)
    assert Chunk.objects.get().notice == ""
