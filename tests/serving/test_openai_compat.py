"""OpenAI-compatible engine against a real local HTTP server (127.0.0.1) scripted per test."""

from __future__ import annotations

import pytest

from serving.config import EngineConfig
from serving.engines.openai_compat import OpenAICompatEngine
from serving.listener import MemListener
from serving.output_schema import op_list_schema
from serving.prompt import build_prompt
from serving.protocol import ListenerOp
from tests.serving.conftest import make_job

# The shape of a chat completion as vLLM's OpenAI server returns it (content is an example op list).
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "served-model",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": '{"ops": [{"op": "ADD", "path": "identity/occupation/current_role", "value": "Nurse"}]}',
            },
        }
    ],
    "usage": {"prompt_tokens": 4400, "completion_tokens": 21, "total_tokens": 4421},
}


def engine_for(server, **kw):
    return OpenAICompatEngine(base_url=server.url + "/v1", model="served-model", api_key="k", **kw)


def first_generation(engine, schema, chunks):
    """What ``engine`` answers for the prompt of the first test chunk."""
    return engine.generate([build_prompt(schema, {}, chunks[0]["turns"])], None)[0]


def error_body(message: str, kind: str, code: str | None = None) -> dict:
    """An OpenAI-style error answer (``code`` defaults to ``kind``)."""
    return {"error": {"message": message, "type": kind, "code": code or kind}}


SLOW_DOWN = error_body("slow down", "rate_limit")


def test_completion_flows_through_the_gate_and_sends_the_schema(http_server, schema, chunks):
    http_server.reply(200, COMPLETION)
    job = make_job(schema, chunks[0]["turns"])
    res = MemListener(engine_for(http_server)).run([job])[0]
    assert res.error is None
    assert res.ops == [ListenerOp(op="ADD", path="identity/occupation/current_role", value="Nurse")]
    assert (res.prompt_tokens, res.completion_tokens, res.model_id) == (4400, 21, "openai:served-model")
    sent = http_server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["json"]["response_format"]["json_schema"]["schema"] == op_list_schema(schema)
    assert [m["role"] for m in sent["json"]["messages"]] == ["system", "user"]


def test_auth_failure_is_not_retryable_and_not_retried(http_server, schema, chunks):
    http_server.reply(401, error_body("bad key", "invalid_request_error", "invalid_api_key"))
    gen = first_generation(engine_for(http_server, max_retries=2), schema, chunks)
    assert gen.error and "credentials" in gen.error and gen.retryable is False
    assert len(http_server.requests) == 1


def test_rate_limit_is_retried_then_reported_retryable(http_server, schema, chunks):
    for _ in range(2):
        http_server.reply(429, SLOW_DOWN)
    gen = first_generation(engine_for(http_server, max_retries=1), schema, chunks)
    assert gen.error and "rate limit" in gen.error and gen.retryable is True
    assert len(http_server.requests) == 2


def test_rate_limit_then_success(http_server, schema, chunks):
    http_server.reply(429, SLOW_DOWN)
    http_server.reply(200, COMPLETION)
    gen = first_generation(engine_for(http_server, max_retries=2), schema, chunks)
    assert gen.error is None and "Nurse" in gen.text


def test_exhausted_quota_is_not_retryable(http_server, schema, chunks):
    http_server.reply(429, error_body("quota", "insufficient_quota"))
    gen = first_generation(engine_for(http_server, max_retries=0), schema, chunks)
    assert gen.error and "quota" in gen.error and gen.retryable is False


def test_timeout_is_retryable(http_server, schema, chunks):
    http_server.reply(200, COMPLETION, delay_s=1.5)
    engine = engine_for(http_server, max_retries=0, timeout_s=0.3)
    gen = first_generation(engine, schema, chunks)
    assert gen.error and "timed out" in gen.error and gen.retryable is True


def test_unreachable_endpoint_is_retryable(schema, chunks):
    from tests.ray_serve import free_port

    engine = OpenAICompatEngine(
        base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", max_retries=0, timeout_s=2
    )
    gen = first_generation(engine, schema, chunks)
    assert gen.error and "unreachable" in gen.error and gen.retryable is True


def test_concurrent_batch_keeps_order(http_server, schema, chunks):
    for _ in range(3):
        body = {
            **COMPLETION,
            "choices": [{**COMPLETION["choices"][0], "message": {"role": "assistant", "content": "NO_OP()"}}],
        }
        http_server.reply(200, body)
    jobs = [make_job(schema, c["turns"], job_id=f"j{i}") for i, c in enumerate(chunks[:3])]
    results = MemListener(engine_for(http_server)).run(jobs)
    assert [r.job_id for r in results] == ["j0", "j1", "j2"] and all(r.error is None for r in results)


def test_missing_configuration_is_a_clear_error():
    with pytest.raises(ValueError, match="base_url and model"):
        OpenAICompatEngine(base_url="", model="")


def test_the_engine_config_reaches_the_client():
    config = EngineConfig(
        kind="openai", base_url="http://x/v1", model="m", timeout_s=5, max_retries=1, max_tokens=9
    )
    engine = OpenAICompatEngine.from_config(config)
    assert (engine.model_id, engine.max_tokens) == ("openai:m", 9)
    assert (engine._client.timeout, engine._client.max_retries) == (5.0, 1)
