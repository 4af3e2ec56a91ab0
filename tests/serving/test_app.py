"""The real Ray Serve MemListener app: HTTP batches, @serve.batch grouping, bad bodies, health."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from serving.app import MemListenerDeployment
from serving.client import RayServeClient
from serving.config import AppConfig, EngineConfig
from serving.engines.base import EngineUnavailable
from serving.facts import FactStep
from tests.serving.conftest import make_job


def app_config(**engine) -> AppConfig:
    return AppConfig(engine=EngineConfig(**engine), max_batch_size=8, batch_wait_timeout_s=0.2)


@pytest.fixture(scope="module")
def serve_url():
    pytest.importorskip("ray.serve", reason="Ray Serve is an optional extra (pip install '.[serve]')")
    from tests.ray_serve import serve_memlistener

    with serve_memlistener(app_config(kind="standin", standin_mode="derived")) as url:
        yield url


@pytest.mark.integration
def test_batch_over_http_returns_gated_ops_per_job(serve_url, schema, chunks):
    jobs = [make_job(schema, c["turns"], job_id=f"j{i}") for i, c in enumerate(chunks)]
    results = RayServeClient(serve_url, timeout_s=60).run(jobs)
    assert [r.job_id for r in results] == [j.job_id for j in jobs]
    for r in results:
        assert r.error is None and r.model_id == "standin:derived" and r.prompt_version
        # the stand-in writes a user sentence: a fact is applied, "Thanks, bye." refused as small talk
        judged = [o for o in r.ops if o.precheck in (None, "SMALL_TALK")]
        assert len(judged) == 1 and judged[0].path in schema.paths
        assert r.prompt_tokens > 0 and r.latency_ms >= 0


@pytest.mark.integration
def test_concurrent_requests_are_all_answered(serve_url, schema, chunks):
    client = RayServeClient(serve_url, timeout_s=60)

    def one(i):
        return client.run([make_job(schema, chunks[i % 4]["turns"], job_id=f"c{i}")])[0]

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(one, range(6)))
    assert [r.job_id for r in results] == [f"c{i}" for i in range(6)]
    assert all(r.error is None for r in results)


@pytest.mark.integration
def test_bad_bodies_get_clear_errors(serve_url):
    with httpx.Client(timeout=30) as http:
        invalid = http.post(serve_url, json={"jobs": [{"job_id": "x"}]})
        assert invalid.status_code == 422 and invalid.json()["error"] == "invalid batch"
        assert any("subject_id" in json.dumps(d) for d in invalid.json()["detail"])
        not_json = http.post(serve_url, content=b"{nope", headers={"Content-Type": "application/json"})
        assert not_json.status_code == 400


def _deployment(config: AppConfig):
    return MemListenerDeployment.func_or_class(config.model_dump(mode="json"))


def test_health_fails_when_the_engine_is_dead():
    dep = _deployment(app_config(kind="standin"))
    asyncio.run(dep.check_health())
    dep._listener.engine.check_health = _raise_unavailable
    with pytest.raises(EngineUnavailable):
        asyncio.run(dep.check_health())


def test_health_fails_when_the_engine_cannot_start(tmp_path):
    dep = _deployment(app_config(kind="recorded", recording_path=str(tmp_path / "absent.jsonl")))
    with pytest.raises(EngineUnavailable, match="failed to start"):
        asyncio.run(dep.check_health())


def _raise_unavailable():
    raise EngineUnavailable("engine process died")


@pytest.mark.parametrize("name", ["cpu.yaml", "gpu.yaml"])
def test_serve_config_files_validate(name):
    import yaml

    from serving.app import build_app

    path = Path(__file__).resolve().parents[2] / "serving" / "config" / name
    conf = yaml.safe_load(path.read_text())
    assert conf["http_options"]["host"] == "127.0.0.1"
    (app,) = conf["applications"]
    assert app["import_path"] == "serving.app:build_app"
    AppConfig.model_validate(app["args"])
    build_app(app["args"])  # builds the bound application without starting anything


def test_the_app_builds_its_listener_with_the_yaml_settings():
    """One factory for every path: max_ops (validated in the YAML) reaches the Ray app's listener."""
    dep = _deployment(AppConfig(engine=EngineConfig(kind="standin", max_ops=4), lenient_gate=True))
    asyncio.run(dep.start())
    assert dep._listener.max_ops == 4 and dep._listener.policy.lenient and dep._listener.policy.grounding
    assert dep._listener.pointing is None  # the stand-in emits full-enum JSON
    dep = _deployment(AppConfig(engine=EngineConfig(kind="extractive", max_ops=5)))
    asyncio.run(dep.start())
    assert isinstance(dep._listener.pointing, FactStep) and dep._listener.max_ops == 5
