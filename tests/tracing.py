"""OpenTelemetry helpers for the tracing tests: an in-memory exporter instead of a collector.

Import only after ``pytest.importorskip("opentelemetry.sdk")`` (the ``otel`` extra)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from serving import tracing


def in_memory_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider that keeps every finished span in the returned exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@contextmanager
def serving_spans() -> Iterator[InMemorySpanExporter]:
    """``serving.tracing`` on with an in-memory exporter; ``exporter.tracer`` opens the test's own spans."""
    provider, exporter = in_memory_provider()
    assert tracing.install(tracer_provider=provider, force=True)
    exporter.tracer = provider.get_tracer("tests")  # type: ignore[attr-defined]
    try:
        yield exporter
    finally:
        tracing.uninstall()
