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
    PersonaTree,
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
    body = {"error": {"code": "throttled", "message": "Request was throttled."}}
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
    unavailable = {"error": {"code": "model_unavailable", "message": "no responder"}}
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
        assert pt.versions("u").versions == ()
    assert server.requests[0].headers["authorization"] == "Bearer env-key"
    assert server.requests[0].url.host == "env.test"


def test_methods_keep_the_operations_signature_and_doc():
    assert "idempotency_key" in (PersonaTree.ingest.__doc__ or "")
    pt = PersonaTree("http://pt.test", "k")
    assert pt.ingest.__name__ == "ingest" and pt.ingest.__doc__ == PersonaTree.ingest.__doc__
    assert list(inspect.signature(pt.ingest).parameters) == ["subject", "messages", "recreate_erased"]
    pt.close()
