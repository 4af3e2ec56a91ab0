"""The MemListener deployment continues the caller's trace (issue 17, tracing API -> Celery ->
Ray Serve): a ``traceparent`` header on a batch or chat request makes the deployment's server span
a child of the caller's span; without tracing on, no span and no OpenTelemetry import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from serving import tracing

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.trace import SpanKind  # noqa: E402

from tests.tracing import serving_spans  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def exporter():
    with serving_spans() as exporter:
        yield exporter


def test_off_by_default_no_span():
    assert not tracing.enabled() and not tracing.install()  # PERSONATREE_OTEL is not set in the tests
    with tracing.server_span({"traceparent": TRACEPARENT}, "memlistener.batch") as span:
        assert span is None


def test_server_span_is_a_child_of_the_callers_span(exporter):
    with tracing.server_span({"Traceparent": TRACEPARENT}, "memlistener.batch", jobs=2) as span:
        assert span is not None
    (done,) = exporter.get_finished_spans()
    assert done.kind == SpanKind.SERVER and done.name == "memlistener.batch"
    assert f"{done.context.trace_id:032x}" == TRACE_ID
    assert f"{done.parent.span_id:016x}" == PARENT_ID and done.parent.is_remote
    assert done.attributes["jobs"] == 2


def test_without_a_traceparent_the_span_starts_a_trace(exporter):
    with tracing.server_span({}, "memlistener.chat"):
        pass
    (done,) = exporter.get_finished_spans()
    assert done.parent is None


_SCRIPT = r"""
import asyncio, json, sys
from ray.serve import batching
from starlette.requests import Request
from memory.engine.schema import default_schema
from serving import tracing
from serving.app import MemListenerDeployment
from serving.config import AppConfig, EngineConfig
from serving.protocol import ListenerBatch
from tests.serving.conftest import make_job
from tests.tracing import in_memory_provider

batching._BatchQueue._warn_if_max_batch_size_exceeds_max_ongoing_requests = lambda self: None
provider, exporter = in_memory_provider()
tracing.install(tracer_provider=provider, force=True)

config = AppConfig(engine=EngineConfig(kind="standin", standin_mode="derived"), batch_wait_timeout_s=0.0)
dep = MemListenerDeployment.func_or_class(config.model_dump(mode="json"))
turns = [{"role": "user", "content": "I work as a nurse in Lyon."}]
body = ListenerBatch(jobs=[make_job(default_schema(), turns, job_id="j0")]).model_dump_json().encode()

async def receive():
    return {"type": "http.request", "body": body, "more_body": False}

scope = {"type": "http", "method": "POST", "path": "/memlistener", "query_string": b"",
         "headers": [(b"content-type", b"application/json"), (b"traceparent", sys.argv[1].encode())]}
response = asyncio.run(dep(Request(scope, receive)))
spans = [{"name": s.name, "trace": f"{s.context.trace_id:032x}", "parent": f"{s.parent.span_id:016x}",
          "jobs": s.attributes.get("memlistener.jobs"), "errors": s.attributes.get("memlistener.errors")}
         for s in exporter.get_finished_spans()]
print(json.dumps({"status": response.status_code, "spans": spans}))
"""


def test_the_deployment_continues_the_trace_of_a_batch_request():
    pytest.importorskip("ray.serve", reason="Ray Serve is an optional extra (pip install '.[serve]')")
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, TRACEPARENT], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == 200
    assert result["spans"] == [
        {"name": "memlistener.batch", "trace": TRACE_ID, "parent": PARENT_ID, "jobs": 1, "errors": 0}
    ]
