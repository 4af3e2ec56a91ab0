"""The Serve app as operated: the model loads once, in the constructor and never in the health
check; autoscaling reaches Serve; the OpenAI-compatible chat route the web tier's responder uses."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from serving import chat_compat
from serving.app import MemListenerDeployment, build_app
from serving.config import AppConfig, Autoscaling, EngineConfig
from serving.engines.base import EngineUnavailable, Prompt
from serving.engines.standin import StandInEngine

CPU_YAML = Path(__file__).resolve().parents[2] / "serving" / "config" / "cpu.yaml"


def _deployment(config: AppConfig):
    return MemListenerDeployment.func_or_class(config.model_dump(mode="json"))


@pytest.fixture
def counted_builds(monkeypatch):
    """Counts engine builds; each build waits on ``gate`` (a slow model load)."""
    state = {"builds": 0, "gate": threading.Event()}
    state["gate"].set()

    def build(config):
        state["gate"].wait(10)
        state["builds"] += 1
        return StandInEngine(mode="derived")

    monkeypatch.setattr("serving.engines.build_engine", build)
    return state


def test_the_model_loads_once_in_the_constructor_and_never_in_the_health_check(counted_builds):
    dep = _deployment(AppConfig(engine=EngineConfig(kind="standin")))
    assert counted_builds["builds"] == 1 and dep._listener is not None
    asyncio.run(dep.check_health())
    asyncio.run(dep.start())
    assert counted_builds["builds"] == 1


def test_concurrent_starts_wait_for_one_load(counted_builds):
    counted_builds["gate"].clear()  # the load blocks until released
    dep = MemListenerDeployment.func_or_class.__new__(MemListenerDeployment.func_or_class)
    dep.config = AppConfig(engine=EngineConfig(kind="standin"))
    dep._listener, dep._start_error, dep._load_lock = None, None, threading.Lock()

    async def three_starts():
        tasks = [asyncio.create_task(dep.start()) for _ in range(3)]
        await asyncio.sleep(0.2)
        assert not any(t.done() for t in tasks)  # all wait on the one load
        counted_builds["gate"].set()
        await asyncio.gather(*tasks)

    asyncio.run(three_starts())
    assert counted_builds["builds"] == 1 and dep._listener is not None


def test_a_failed_load_is_reported_by_the_health_check_without_retrying_it(monkeypatch):
    calls = []

    def broken(config):
        calls.append(1)
        raise RuntimeError("weights missing")

    monkeypatch.setattr("serving.engines.build_engine", broken)
    dep = _deployment(AppConfig(engine=EngineConfig(kind="standin")))
    for _ in range(2):
        with pytest.raises(EngineUnavailable, match="weights missing"):
            asyncio.run(dep.check_health())
    assert calls == [1]


def test_autoscaling_reaches_serve_instead_of_a_fixed_replica_count():
    (app,) = yaml.safe_load(CPU_YAML.read_text())["applications"]
    config = AppConfig.model_validate(app["args"])
    assert (
        config.autoscaling is not None and config.autoscaling.max_replicas > config.autoscaling.min_replicas
    )
    deployment = build_app(app["args"])._bound_deployment._deployment_config
    assert deployment.autoscaling_config.min_replicas == config.autoscaling.min_replicas
    assert deployment.autoscaling_config.max_replicas == config.autoscaling.max_replicas
    assert deployment.autoscaling_config.target_ongoing_requests == config.autoscaling.target_ongoing_requests
    assert AppConfig(num_replicas=3).replica_options() == {"num_replicas": 3}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"autoscaling": {"min_replicas": 3, "max_replicas": 2}}, "above max_replicas"),
        ({"autoscaling": {"target_ongoing_requests": 10}, "max_ongoing_requests": 4}, "never scale"),
        ({"autoscaling": {"max_replicas": 2, "replicas": 1}}, "Extra inputs"),
    ],
)
def test_bad_autoscaling_is_refused(args, message):
    with pytest.raises(ValidationError, match=message):
        AppConfig.model_validate(args)
    assert Autoscaling().min_replicas == 1


def _post(dep, path: str, body: bytes):
    from starlette.requests import Request

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "server": ("testserver", 8000),
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
    }
    resp = asyncio.run(dep(Request(scope, receive)))
    return resp.status_code, json.loads(resp.body)


CHAT = {
    "model": "anything",
    "messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Where?"}],
}


def test_chat_route_answers_with_the_deployments_engine():
    dep = _deployment(AppConfig(engine=EngineConfig(kind="standin")))
    status, body = _post(dep, "/memlistener/v1/chat/completions", json.dumps(CHAT).encode())
    assert status == 200, body
    assert body["object"] == "chat.completion" and body["model"] == dep._listener.engine.model_id
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert isinstance(body["choices"][0]["message"]["content"], str)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{nope", "Expecting"),
        (json.dumps({"messages": []}).encode(), "messages"),
        (json.dumps({"messages": [{"role": "system", "content": "only rules"}]}).encode(), "no user message"),
        (json.dumps({"messages": [{"role": "tool", "content": "x"}]}).encode(), "messages.0.role"),
        (
            json.dumps(
                {**CHAT, "response_format": {"type": "json_schema", "json_schema": {"schema": 3}}}
            ).encode(),
            "must be an object",
        ),
    ],
)
def test_chat_route_refuses_bad_requests_in_openai_error_shape(body, fragment):
    dep = _deployment(AppConfig(engine=EngineConfig(kind="standin")))
    status, reply = _post(dep, "/memlistener/v1/chat/completions", body)
    assert status == 400 and reply["error"]["type"] == "invalid_request_error"
    assert fragment in reply["error"]["message"]


def test_chat_route_reports_an_engine_that_did_not_load(monkeypatch):
    monkeypatch.setattr("serving.engines.build_engine", lambda c: (_ for _ in ()).throw(OSError("no GGUF")))
    dep = _deployment(AppConfig(engine=EngineConfig(kind="standin")))
    status, reply = _post(dep, "/memlistener/v1/chat/completions", json.dumps(CHAT).encode())
    assert status == 503 and "no GGUF" in reply["error"]["message"]


def test_chat_prompt_keeps_the_system_part_static_and_reads_the_schema():
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    prompt, got = chat_compat.parse(
        {**CHAT, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}
    )
    assert prompt == Prompt(
        static="Answer briefly.", dynamic="Where?", prompt_version=chat_compat.PROMPT_VERSION
    )
    assert got == schema
    multi, none = chat_compat.parse(
        {
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"},
            ]
        }
    )
    assert none is None and multi.dynamic == "user: a\n\nassistant: b\n\nuser: c"


@pytest.mark.integration
def test_the_responder_answers_through_a_live_serve_app():
    """The web tier's responder as compose and the manifests wire it: the OpenAI-compatible engine
    against the running Serve app's /v1 route."""
    pytest.importorskip("ray.serve", reason="Ray Serve is an optional extra (pip install '.[serve]')")
    from serving.engines.openai_compat import OpenAICompatEngine
    from tests.ray_serve import serve_memlistener

    config = AppConfig(engine=EngineConfig(kind="standin", standin_mode="derived"))
    with serve_memlistener(config) as url:
        engine = OpenAICompatEngine(base_url=f"{url}/v1", model="memlistener", max_retries=0, timeout_s=60)
        try:
            (gen,) = engine.generate([Prompt(static="Rules.", dynamic="Hello", prompt_version="t")], None)
        finally:
            engine.close()
    assert gen.error is None, gen.error
    assert gen.model_id.startswith("openai:standin")  # the model that answered, named by the server
