"""OpenTelemetry tracing (the ``otel`` extra): one API request is one span tree, down to the Celery
task it started (eager here, so a child of the request's span), and httpx calls (the MemListener's
transport) carry the trace to the next service. No external id in any span. Off by default."""

from __future__ import annotations

import http.server
import threading

import pytest

from personatree_site.ops import tracing
from serving.client import reset_listener_clients
from tests.factories import TenantFactory

pytest.importorskip("opentelemetry.instrumentation.django")
from opentelemetry.trace import SpanKind  # noqa: E402

from tests.tracing import in_memory_provider  # noqa: E402

EXTERNAL_ID = "traced-user-5c1d"


@pytest.fixture
def spans(settings):
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_BACKEND": "standin",
        "MEMLISTENER_STANDIN_MODE": "derived",
    }
    reset_listener_clients()
    provider, exporter = in_memory_provider()
    assert not tracing.installed()  # off by default: PERSONATREE_OTEL is not set in the tests
    assert tracing.install(tracer_provider=provider, force=True)
    exporter.tracer = provider.get_tracer("tests")  # for spans of the test's own
    try:
        yield exporter
    finally:
        tracing.uninstall()
        reset_listener_clients()


def _root(span, by_id):
    while span.parent is not None:
        span = by_id[span.parent.span_id]
    return span


def test_one_api_request_is_one_span_tree_down_to_the_celery_task(transactional_db, spans, make_api_client):
    client, _ = make_api_client(TenantFactory(), scopes=["ingest"])
    messages = [
        {
            "role": ["user", "assistant"][i % 2],
            "content": f"turn {i}: I work as a baker.",
            "idempotency_key": f"k{i}",
        }
        for i in range(6)  # three pairs: one chunk, dispatched by an eager task after the commit
    ]
    response = client.post(f"/v1/subjects/{EXTERNAL_ID}/messages", {"messages": messages}, format="json")
    assert response.status_code == 202 and response.json()["chunks_created"] == 1

    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    (server,) = [s for s in finished if s.kind == SpanKind.SERVER]
    assert server.name == "POST v1/subjects/<str:external_id>/messages"
    tasks = [s for s in finished if s.name == "run/workers.dispatch"]
    assert len(tasks) == 1 and tasks[0].kind == SpanKind.CONSUMER
    assert tasks[0].context.trace_id == server.context.trace_id and _root(tasks[0], by_id) is server
    for span in finished:
        assert all(EXTERNAL_ID not in str(value) for value in span.attributes.values()), span.name
    assert server.attributes["http.route"] == "v1/subjects/<str:external_id>/messages"


def test_probes_are_not_traced(spans, client):
    assert client.get("/healthz").status_code == 200
    assert not [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]


class _Echo(http.server.BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_GET(self):  # noqa: N802 - the stdlib's name
        _Echo.received.append(dict(self.headers))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_httpx_calls_are_spans_that_pass_the_trace_on(spans):
    import httpx
    from opentelemetry import trace

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with spans.tracer.start_as_current_span("caller") as caller:
            with httpx.Client() as http_client:  # how serving.client.RayServeClient calls the MemListener
                assert (
                    http_client.get(f"http://127.0.0.1:{server.server_port}/memlistener").status_code == 200
                )
            trace_id = caller.get_span_context().trace_id
    finally:
        server.shutdown()
        server.server_close()
    (call,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.CLIENT]
    assert call.context.trace_id == trace_id
    traceparent = {k.lower(): v for k, v in _Echo.received[-1].items()}["traceparent"]
    assert traceparent.split("-")[1] == trace.format_trace_id(trace_id)
