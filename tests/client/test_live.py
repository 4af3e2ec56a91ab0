"""The client against a live server (real HTTP on 127.0.0.1): every operation, sync and async.

The server is ``api_server`` (tests/client/conftest.py): the project's Django app on the test
database, stand-in MemListener, eager Celery.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from personatree_client import (
    APIConnectionError,
    APITimeoutError,
    AsyncPersonaTree,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    IdempotencyConflictError,
    Message,
    ModelUnavailableError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PersonaTree,
    RateLimitError,
    SubjectErasedError,
)

from memory.api.throttling import ApiKeyRateThrottle
from memory.recall import runtime
from serving.engines.base import Generation

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = [
    "I work as a nurse at the city hospital.",
    "I moved to Lisbon last spring.",
    "I swim three times a week because my knee hurts when I run.",
    "My sister Ana lives in Porto.",
    "I am allergic to peanuts.",
    "I play the cello in an amateur orchestra.",
]


def conversation(n_pairs: int, tag: str = "") -> list[Message]:
    out = []
    for i in range(n_pairs):
        out.append(Message("user", f"{FACTS[i % len(FACTS)]} {tag}".strip(), idempotency_key=f"{tag}u{i}"))
        out.append(Message("assistant", f"Noted ({i}).", idempotency_key=f"{tag}a{i}"))
    return out


def test_sync_ingest_batches_status_tree_versions_export_context_erase(base_url, api_key):
    messages = conversation(12)  # 24 messages
    with PersonaTree(base_url, api_key, max_batch_messages=10) as pt:
        result = pt.ingest("ana", messages)
        assert (result.batches, len(result.accepted), result.duplicates) == (3, 24, ())
        assert result.subject == "ana" and result.subject_created and result.cursor == 24
        assert [r.seq for r in result.accepted] == list(range(1, 25))

        replay = pt.ingest("ana", messages)  # the same Message objects: duplicates, nothing stored
        assert replay.accepted == () and len(replay.duplicates) == 24 and not replay.subject_created
        assert [r.seq for r in replay.duplicates] == list(range(1, 25))

        status = pt.wait_until_applied("ana", timeout=30)
        assert status.caught_up and status.applied_through_seq == 24 and not status.blocked
        assert status.chunks["applied"] >= 4 and status.head_version >= 1
        assert pt.ingest_status("ana") == status

        tree = pt.tree("ana")
        assert tree.version == status.head_version and tree.tree, "the stand-in wrote nothing"
        assert tree.schema_id == "personatree-default"
        assert pt.tree("ana", as_of=0).tree == {}

        versions = list(pt.versions("ana"))
        assert versions[0].number == tree.version == pt.subject("ana").head_version
        assert versions[0].created_by == "chunk" and versions[0].created_at.tzinfo
        assert pt.tree("ana", as_of=datetime.now(UTC)).version == tree.version

        export = pt.export("ana")
        assert export.head_version == tree.version and export.tree == tree.tree and export.ops
        # One item a page: a paginating server answers many pages, which the client follows.
        assert list(pt.versions("ana", page_size=1)) == versions and len(versions) > 1
        assert pt.export("ana", page_size=1) == export

        leaf, value = next(iter(tree.tree.items()))
        context = pt.context("ana", "What do I do for work?", mode="fast")
        assert context.mode_used == "fast" and context.version == tree.version
        assert leaf in context.context.paths and value in context.context.text

        erased = pt.erase("ana")
        assert erased.erased and erased.counts
        with pytest.raises(NotFoundError):
            pt.tree("ana")
        with pytest.raises(SubjectErasedError) as info:
            pt.ingest("ana", messages[:2])
        assert info.value.status == 409 and info.value.field == "external_id"
        again = pt.ingest("ana", messages[:2], recreate_erased=True)
        assert again.subject_created and [r.seq for r in again.accepted] == [1, 2]


def test_async_client_same_operations(base_url, api_key):
    async def main():
        async with AsyncPersonaTree(base_url, api_key, max_batch_messages=7) as pt:
            result = await pt.ingest("bo", conversation(8, "b"))
            assert result.batches == 3 and result.cursor == 16
            status = await pt.wait_until_applied("bo", timeout=30)
            assert status.caught_up
            tree, export = await asyncio.gather(pt.tree("bo"), pt.export("bo"))
            versions = [v async for v in pt.versions("bo", page_size=1)]
            assert tree.tree and versions[0].number == tree.version == export.head_version
            assert [v.number for v in versions] == list(range(tree.version, 0, -1))
            context = await pt.context("bo", "Where do I live?", mode="fast", token_budget=500)
            assert context.token_budget == 500 and context.version == tree.version
            with pytest.raises(NotFoundError):
                await anext(pt.versions("nobody"))
            with pytest.raises(BadRequestError) as info:
                await pt.context("bo", "q", mode="fast", as_of="2024-13-01T00:00")
            assert info.value.field == "as_of"
            erased = await pt.erase("bo")
            assert erased.erased

    asyncio.run(main())


def test_errors_are_mapped_from_the_servers_json(base_url, make_key, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "ANSWER_MODE": "model"}  # 503 below: no responder
    key = make_key()
    with PersonaTree(base_url, key, max_batch_messages=2) as pt:
        with pytest.raises(BadRequestError) as info:
            pt.ingest("c", [{"role": "robot", "content": "hi", "idempotency_key": "k"}])
        err = info.value
        assert (err.status, err.code, err.field) == (400, "invalid_role", "messages[0].role")

        with pytest.raises(BadRequestError) as info:
            pt.ingest("c", [])
        assert info.value.code == "empty" and info.value.field == "messages"

        with pytest.raises(PayloadTooLargeError) as info:
            pt.ingest("c", [Message("user", "x" * 20_001)])
        assert info.value.status == 413 and info.value.field == "messages[0].content"

        first = pt.ingest(
            "c", [Message("user", "one", idempotency_key="k1"), Message("user", "two", idempotency_key="k2")]
        )
        assert first.cursor == 2
        batch = [Message("user", f"new {i}", idempotency_key=f"n{i}") for i in range(3)]
        batch.append(Message("user", "two but different", idempotency_key="k2"))
        with pytest.raises(IdempotencyConflictError) as info:
            pt.ingest("c", batch)  # batches [n0, n1] stored, then [n2, k2] refused whole
        err = info.value
        assert err.field == "messages[3].idempotency_key"
        assert [r.idempotency_key for r in err.partial.accepted] == ["n0", "n1"]
        assert pt.ingest_status("c").cursor == 4

        with pytest.raises(NotFoundError) as info:
            pt.ingest_status("nobody")
        assert info.value.code == "not_found"
        # RFC 9457 problem details, and the request id the server logged the request under.
        assert info.value.type == "https://personatree.dev/problems/not_found"
        assert info.value.instance == "/v1/subjects/nobody/ingest" and info.value.title == "Not found"
        assert info.value.request_id and len(info.value.request_id) == 32
        with pytest.raises(BadRequestError) as info:
            pt.tree("c", as_of="month 13")
        assert info.value.field == "as_of"
        with pytest.raises(BadRequestError) as info:
            pt.tree("bad\x00id")
        assert info.value.field == "external_id"
        with pytest.raises(ModelUnavailableError) as info:  # RESPONDER_BACKEND=none
            PersonaTree(base_url, key, max_retries=0).answer("c", "Who am I?", mode="fast")
        assert info.value.status == 503 and info.value.code == "model_unavailable"
        started = time.monotonic()
        with pytest.raises(ModelUnavailableError):  # default retries stay bounded (no 3 x 30 s waits)
            pt.answer("c", "Who am I?", mode="fast")
        assert time.monotonic() - started < 6

    with pytest.raises(AuthenticationError) as info:
        PersonaTree(base_url, "pt_live_nope_nope").tree("c")
    assert info.value.status == 401
    with pytest.raises(PermissionDeniedError) as info:
        PersonaTree(base_url, make_key(scopes=["read"])).ingest("c", [Message("user", "hi")])
    assert info.value.status == 403 and "ingest" in info.value.message


class EchoResponder:
    model_id = "echo"

    def generate(self, prompts, json_schema=None):
        return [Generation(text=f"echo: {p.dynamic[-60:]}", model_id=self.model_id) for p in prompts]


def test_answer_returns_the_responders_text(base_url, api_key, monkeypatch, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "ANSWER_MODE": "model"}  # the default asks no model
    monkeypatch.setattr(runtime, "responder_engine", lambda: (EchoResponder(), ""))
    with PersonaTree(base_url, api_key) as pt:
        pt.ingest("d", conversation(3, "d"))
        pt.wait_until_applied("d")
        answer = pt.answer("d", "What do I do for work?", mode="fast", timeout=20)
        assert answer.answer.startswith("echo: ") and answer.model and answer.mode_used == "fast"
        assert answer.context.text and answer.version >= 1


def test_429_from_the_server_is_retried_after_its_retry_after(base_url, api_key, monkeypatch):
    """One request per second: the second call is throttled (DRF sends ``Retry-After: 0``, the
    wait rounded down); the client backs off and the call succeeds within its retries."""
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "1/s"})
    with PersonaTree(base_url, api_key, max_retries=4) as pt:
        pt.ingest("e", [Message("user", "hello")])
        started = time.monotonic()
        assert pt.ingest_status("e").cursor == 1
        assert time.monotonic() - started > 0.2  # it did wait

    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "1/min"})
    with PersonaTree(base_url, api_key, max_retries=3, max_retry_wait=5) as pt:
        with pytest.raises(RateLimitError) as info:  # Retry-After ~60 s > max_retry_wait: raised at once
            started = time.monotonic()
            pt.ingest_status("e")
        assert time.monotonic() - started < 2
        assert info.value.status == 429 and info.value.code == "throttled" and info.value.retry_after > 5


def test_timeouts_and_refused_connections(api_server):
    """A listening socket that never answers times out; a closed port is a connection error."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        with PersonaTree(f"http://127.0.0.1:{port}", "k", timeout=0.3, max_retries=1) as pt:
            started = time.monotonic()
            with pytest.raises(APITimeoutError):
                list(pt.versions("x"))
            assert 0.5 <= time.monotonic() - started < 5  # two attempts of 0.3 s and one backoff

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with PersonaTree(f"http://127.0.0.1:{port}", "k", max_retries=0) as pt:
        with pytest.raises(APIConnectionError):
            list(pt.versions("x"))


def test_one_client_shared_by_threads(base_url, api_key):
    errors = []

    def worker(n):
        try:
            pt.ingest(f"t{n}", conversation(4, f"t{n}"))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    with PersonaTree(base_url, api_key) as pt:
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert [pt.ingest_status(f"t{n}").cursor for n in range(4)] == [8, 8, 8, 8]


def test_the_readme_example_runs(base_url, api_key, capsys):
    """The five lines README.md shows, run as written against this server."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    code = readme.split("## Python client", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert '"http://127.0.0.1:8008"' in code and '"pt_live_..."' in code
    code = code.replace('"http://127.0.0.1:8008"', repr(base_url)).replace('"pt_live_..."', repr(api_key))
    exec(compile(code, "README.md", "exec"), {})
    assert "Lisbon" in capsys.readouterr().out  # the stand-in put the sentence in the tree


def test_subject_list_and_single_leaves(base_url, make_key):
    key = make_key(scopes=("ingest", "read", "write"))
    city = "identity/location/current_city"
    with PersonaTree(base_url, key) as pt:
        for name in ("cy", "ab", "bx"):
            pt.ingest(name, conversation(1, name))
        listed = list(pt.subjects(page_size=2))  # two pages, read as the iteration reaches them
        assert [s.external_id for s in listed] == ["ab", "bx", "cy"]
        assert all(s.schema_id == "personatree-default" and s.created_at.tzinfo for s in listed)

        empty = pt.leaf("ab", city)
        assert (empty.value, empty.status, empty.op_id) == (None, None, None) and empty.budget > 0
        written = pt.set_leaf("ab", city, "Lisbon", base_version=empty.version)
        assert (written.value, written.status) == ("Lisbon", "applied") and written.op_id
        assert pt.leaf("ab", city).value == "Lisbon" and pt.tree("ab").tree[city] == "Lisbon"
        assert pt.set_leaf("ab", city, "Lisbon").status == "unchanged"
        with pytest.raises(ConflictError):
            pt.set_leaf("ab", city, "Porto", base_version=empty.version)  # the subject moved on
        assert pt.delete_leaf("ab", city).value is None
        with pytest.raises(NotFoundError) as info:
            pt.delete_leaf("ab", city)
        assert info.value.code == "leaf_empty"
        with pytest.raises(NotFoundError):
            pt.leaf("ab", "identity/no/such_leaf")
    with PersonaTree(base_url, make_key(scopes=("read",))) as other:
        assert list(other.subjects()) == []  # another tenant's key sees none of them
