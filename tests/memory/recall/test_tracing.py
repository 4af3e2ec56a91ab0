"""With tracing on, every Milvus call of the evidence index is a client span inside the current
trace (issue 17: API -> Celery -> Ray Serve -> Milvus); with it off, no span."""

from __future__ import annotations

import pytest

from memory.recall.index import EvidenceRow, Scope
from memory.recall.search import search_many
from serving import tracing

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.trace import SpanKind  # noqa: E402

from tests.tracing import serving_spans  # noqa: E402

TEXTS = ["user: my cat is called Pixel\nassistant: cute", "user: I swim on Mondays\nassistant: nice"]


def _rows(embedder):
    vecs = embedder.embed(TEXTS)
    return [
        EvidenceRow(1, 10, 2 * i + 1, 2 * i + 2, t, vecs[i], ts_ms=1000, session="s1")
        for i, t in enumerate(TEXTS)
    ]


@pytest.fixture
def exporter():
    with serving_spans() as exporter:
        yield exporter


def test_milvus_calls_are_client_spans_of_the_current_trace(index, embedder, exporter):
    with exporter.tracer.start_as_current_span("request") as parent:
        index.upsert(_rows(embedder))
        hits = search_many(index, embedder, Scope(1, 10), ["my cat"], limit=1, method="dense")[0]
    assert hits and hits[0].start_seq == 1
    milvus = [s for s in exporter.get_finished_spans() if s.name.startswith("milvus.")]
    names = {s.name for s in milvus}
    assert {"milvus.upsert", "milvus.search"} <= names, names
    for span in milvus:
        assert span.kind == SpanKind.CLIENT and span.attributes["db.system"] == "milvus"
        assert span.context.trace_id == parent.get_span_context().trace_id
    assert not any("Pixel" in str(v) for s in milvus for v in s.attributes.values())  # no text in spans


def test_no_spans_when_tracing_is_off(index, embedder):
    assert not tracing.enabled()
    with tracing.client_span("milvus.search") as span:
        assert span is None
    index.upsert(_rows(embedder))  # works the same without a tracer
