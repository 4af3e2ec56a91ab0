"""Client selection from a ClientConfig, and the Ray Serve HTTP client's error mapping (real local server)."""

from __future__ import annotations

import pytest

from serving.client import ClientConfig, RayServeClient, build_client
from serving.protocol import ListenerBatchResult, ListenerResult
from tests.ray_serve import free_port
from tests.serving.conftest import make_job


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError):
        ClientConfig(backend="magic")


def test_in_process_client_runs_jobs(schema, chunks):
    client = build_client(ClientConfig(backend="standin", engine={"standin_mode": "derived"}))
    results = client.run([make_job(schema, c["turns"], job_id=f"j{i}") for i, c in enumerate(chunks)])
    assert [r.job_id for r in results] == ["j0", "j1", "j2", "j3"]
    assert all(r.error is None and r.model_id == "standin:derived" for r in results)
    assert client.run([]) == []


def test_warm_up_builds_the_listener_with_a_throw_away_job(schema, chunks):
    client = build_client(ClientConfig(backend="standin", engine={"standin_mode": "derived"}))
    ran = []
    client.listener.run = lambda jobs: ran.append(jobs) or []  # type: ignore[method-assign]
    client.warm(schema.id, schema.version)
    (job,) = ran[0]
    assert (job.job_id, job.schema_id, job.schema_version, job.tree) == (
        "warm-up",
        schema.id,
        schema.version,
        {},
    )
    assert job.turns[0].role == "user" and job.turns[0].ts is not None  # a clause to date


def test_in_process_client_reports_an_engine_that_cannot_start(schema, chunks, tmp_path):
    client = build_client(ClientConfig(backend="local", engine={"model_path": str(tmp_path / "none.gguf")}))
    res = client.run([make_job(schema, chunks[0]["turns"])])[0]
    assert res.error and "unavailable" in res.error and res.retryable is True


def test_ray_client_round_trip_and_error_mapping(http_server, schema, chunks):
    jobs = [
        make_job(schema, chunks[0]["turns"], job_id="a"),
        make_job(schema, chunks[1]["turns"], job_id="b"),
    ]
    ok = ListenerBatchResult(results=[ListenerResult(job_id="a"), ListenerResult(job_id="b")]).model_dump(
        mode="json"
    )
    http_server.reply(200, ok)
    http_server.reply(503, {"error": "draining"})
    http_server.reply(422, {"error": "invalid batch"})
    http_server.reply(200, {"results": []})
    client = RayServeClient(http_server.url + "/memlistener", timeout_s=5)
    assert [r.job_id for r in client.run(jobs)] == ["a", "b"]
    assert http_server.requests[0]["json"]["jobs"][0]["job_id"] == "a"
    unavailable = client.run(jobs)
    assert all(r.retryable and "503" in r.error for r in unavailable)
    refused = client.run(jobs)
    assert all(not r.retryable and "422" in r.error for r in refused)
    mismatched = client.run(jobs)
    assert all(r.retryable and "does not match" in r.error for r in mismatched)


def test_ops_cross_the_http_boundary_typed_with_their_precheck():
    """Every op read (a non-string value included, for the store's gate to refuse) survives JSON as
    the engine's Op; a body whose op is no op at all is refused by validation, never applied."""
    from memory.engine.gate import Reason
    from memory.engine.ops import Op
    from serving.protocol import ListenerOp

    ops = [
        ListenerOp.of(Op.add("a/b", "x", confidence=0.5)),
        ListenerOp(op="UPDATE", path="a/c", value=7, precheck=Reason.VALUE_NOT_STRING, detail="not a string"),
    ]
    body = ListenerBatchResult(results=[ListenerResult(job_id="a", ops=ops)]).model_dump_json()
    back = ListenerBatchResult.model_validate_json(body).results[0]
    assert back.ops == ops and back.ops[1].to_op() == Op("UPDATE", "a/c", 7)
    assert back.accepted == ops[:1] and back.rejected[0].precheck is Reason.VALUE_NOT_STRING
    with pytest.raises(ValueError, match="NO_OP carries no path"):
        ListenerResult.model_validate({"job_id": "a", "ops": [{"op": "NO_OP", "path": "a/b"}]})


def test_ray_client_engine_down_is_retryable(schema, chunks):
    client = RayServeClient(f"http://127.0.0.1:{free_port()}/memlistener", timeout_s=2)
    res = client.run([make_job(schema, chunks[0]["turns"])])[0]
    assert res.error and "unreachable" in res.error and res.retryable is True
