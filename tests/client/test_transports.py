"""The sync and async clients' transports over ``httpx.MockTransport``: what goes on the wire,
retries on 429/503 with their waits actually slept, and timeouts (the live tests cover the rest)."""

from __future__ import annotations

import asyncio
import inspect
import json
import time

import httpx
import pytest
from personatree_client import (
    APITimeoutError,
    AsyncPersonaTree,
    Message,
    NotFoundError,
    PersonaTree,
    ResponseDecodeError,
    ServiceUnavailableError,
)

INGESTED = {
    "subject": "u",
    "subject_created": True,
    "accepted": [{"idempotency_key": "k1", "seq": 1}],
    "duplicates": [],
    "cursor": 1,
    "chunks_created": 0,
}


class Server:
    """Answers the scripted responses in order and records every request."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.times: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.times.append(time.monotonic())
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def throttled(wait: str) -> httpx.Response:
    body = {"status": 429, "code": "throttled", "detail": "Request was throttled."}
    return httpx.Response(429, json=body, headers={"Retry-After": wait})


def test_sync_client_sends_json_with_the_key_and_retries_429_after_retry_after():
    server = Server(throttled("0.3"), httpx.Response(202, json=INGESTED))
    with PersonaTree("http://pt.test/base", "pt_live_abc", transport=httpx.MockTransport(server)) as pt:
        result = pt.ingest("u", [Message("user", "hi", idempotency_key="k1")])
    assert result.cursor == 1 and len(server.requests) == 2
    assert server.times[1] - server.times[0] >= 0.3
    first = server.requests[0]
    assert str(first.url) == "http://pt.test/base/v1/subjects/u/messages" and first.method == "POST"
    assert first.headers["authorization"] == "Bearer pt_live_abc"
    assert first.headers["content-type"] == "application/json"
    assert first.headers["user-agent"].startswith("personatree-client/")
    assert json.loads(first.content) == {
        "messages": [{"role": "user", "content": "hi", "idempotency_key": "k1"}]
    }
    assert server.requests[1].content == first.content


def test_async_client_retries_503_then_raises_when_retries_run_out():
    unavailable = {"status": 503, "code": "model_unavailable", "detail": "no responder"}
    server = Server(
        *[httpx.Response(503, json=unavailable, headers={"Retry-After": "0.1"}) for _ in range(3)]
    )

    async def main():
        async with AsyncPersonaTree(
            "http://pt.test", "k", max_retries=2, transport=httpx.MockTransport(server)
        ) as pt:
            await pt.answer("u", "who am I?")

    with pytest.raises(ServiceUnavailableError) as info:
        asyncio.run(main())
    assert info.value.code == "model_unavailable" and len(server.requests) == 3
    assert all(b - a >= 0.1 for a, b in zip(server.times, server.times[1:], strict=False))


def test_a_timeout_is_retried_for_reads_but_not_for_erase():
    def timeouts(n):
        return Server(*[httpx.ReadTimeout("slow") for _ in range(n)])

    reads = timeouts(3)
    with PersonaTree("http://pt.test", "k", max_retries=2, transport=httpx.MockTransport(reads)) as pt:
        with pytest.raises(APITimeoutError):
            pt.tree("u")
    assert len(reads.requests) == 3

    erase = timeouts(1)
    with PersonaTree("http://pt.test", "k", max_retries=2, transport=httpx.MockTransport(erase)) as pt:
        with pytest.raises(APITimeoutError):
            pt.erase("u")
    assert len(erase.requests) == 1


def test_configuration_comes_from_arguments_or_the_environment(monkeypatch):
    monkeypatch.delenv("PERSONATREE_URL", raising=False)
    monkeypatch.delenv("PERSONATREE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="base_url"):
        PersonaTree(api_key="k")
    with pytest.raises(ValueError, match="api_key"):
        PersonaTree("http://pt.test")
    monkeypatch.setenv("PERSONATREE_URL", "http://env.test")
    monkeypatch.setenv("PERSONATREE_API_KEY", "env-key")
    server = Server(httpx.Response(200, json={"subject": "u", "head_version": 0, "versions": []}))
    with PersonaTree(transport=httpx.MockTransport(server)) as pt:
        assert list(pt.versions("u")) == []
    assert server.requests[0].headers["authorization"] == "Bearer env-key"
    assert server.requests[0].url.host == "env.test"


def test_methods_keep_the_operations_signature_and_doc():
    assert "idempotency_key" in (PersonaTree.ingest.__doc__ or "")
    pt = PersonaTree("http://pt.test", "k")
    assert pt.ingest.__name__ == "ingest" and pt.ingest.__doc__ == PersonaTree.ingest.__doc__
    assert list(inspect.signature(pt.ingest).parameters) == ["subject", "messages", "recreate_erased"]
    pt.close()


def subjects_page(*ids: str, cursor: str | None = None) -> httpx.Response:
    """A page of ``GET /v1/subjects`` whose ``next`` (on the server's own host) carries ``cursor``."""
    subjects = [{"external_id": i, "schema_id": "s", "schema_version": 1, "head_version": 1} for i in ids]
    next_link = f"http://internal:8000/v1/subjects?cursor={cursor}&page_size=2" if cursor else None
    return httpx.Response(200, json={"subjects": subjects, "next": next_link})


def test_a_list_method_requests_each_page_only_when_iteration_reaches_it():
    server = Server(subjects_page("a", "b", cursor="c1"), subjects_page("c", cursor="c2"), subjects_page())
    with PersonaTree("http://pt.test", "k", transport=httpx.MockTransport(server)) as pt:
        listed = pt.subjects(page_size=2)
        assert server.requests == []  # nothing is sent before iteration starts
        assert next(listed).external_id == "a" and len(server.requests) == 1
        assert next(listed).external_id == "b" and len(server.requests) == 1  # still the first page
        assert next(listed).external_id == "c" and len(server.requests) == 2
        assert list(listed) == [] and len(server.requests) == 3  # the last page is empty
    assert [r.url.params.get("cursor") for r in server.requests] == [None, "c1", "c2"]
    assert all(r.url.host == "pt.test" and r.url.params["page_size"] == "2" for r in server.requests)


def test_breaking_out_of_a_list_early_fetches_one_page():
    server = Server(subjects_page("a", "b", cursor="c1"), subjects_page("c"))
    with PersonaTree("http://pt.test", "k", transport=httpx.MockTransport(server)) as pt:
        for subject in pt.subjects(page_size=2):
            if subject.external_id == "b":
                break
    assert len(server.requests) == 1 and len(server.answers) == 1


def test_a_list_error_comes_from_the_iteration_and_bad_arguments_from_the_call():
    gone = {"type": "about:blank", "title": "Not Found", "status": 404, "detail": "no such subject"}
    server = Server(httpx.Response(404, json={**gone, "code": "not_found"}))
    with PersonaTree("http://pt.test", "k", transport=httpx.MockTransport(server)) as pt:
        with pytest.raises(ValueError, match="leaf path"):
            pt.leaf_history("u", "")  # checked at the call, nothing sent
        with pytest.raises(TypeError, match="subject must be a str"):
            pt.versions(42)
        versions = pt.versions("nobody")
        assert server.requests == []
        with pytest.raises(NotFoundError):
            next(versions)
    assert len(server.requests) == 1


def test_a_repeated_cursor_stops_the_iteration_with_a_decode_error():
    server = Server(subjects_page("a", cursor="same"), subjects_page("b", cursor="same"))
    seen = []
    with PersonaTree("http://pt.test", "k", transport=httpx.MockTransport(server)) as pt:
        with pytest.raises(ResponseDecodeError, match="repeats a cursor"):
            for subject in pt.subjects():
                seen.append(subject.external_id)
    assert seen == ["a"] and len(server.requests) == 2


def test_the_async_client_lists_with_async_for_one_page_at_a_time():
    server = Server(subjects_page("a", "b", cursor="c1"), subjects_page("c"), subjects_page("x", "y"))

    async def main():
        async with AsyncPersonaTree("http://pt.test", "k", transport=httpx.MockTransport(server)) as pt:
            listed = pt.subjects(page_size=2)
            assert server.requests == []
            first = await anext(listed)
            assert first.external_id == "a" and len(server.requests) == 1
            rest = [s.external_id async for s in listed]
            assert rest == ["b", "c"] and len(server.requests) == 2
            async for subject in pt.subjects():  # a new iteration starts from the first page again
                assert subject.external_id == "x"
                break
            assert len(server.requests) == 3

    asyncio.run(main())
    assert server.answers == []


def test_the_async_client_stops_on_a_repeated_cursor():
    server = Server(subjects_page("a", cursor="same"), subjects_page("b", cursor="same"))

    async def main():
        async with AsyncPersonaTree("http://pt.test", "k", transport=httpx.MockTransport(server)) as pt:
            return [s.external_id async for s in pt.subjects()]

    with pytest.raises(ResponseDecodeError, match="repeats a cursor"):
        asyncio.run(main())
    assert len(server.requests) == 2


def test_list_methods_keep_the_operations_signature_and_doc():
    pt = PersonaTree("http://pt.test", "k")
    assert pt.leaf_history.__name__ == "leaf_history" and "oldest first" in (pt.leaf_history.__doc__ or "")
    assert list(inspect.signature(pt.leaf_history).parameters) == ["subject", "path", "page_size"]
    pt.close()
