"""OpenTelemetry spans, off unless ``PERSONATREE_OTEL`` is on (docs/DEPLOY.md): :func:`server_span`
continues a caller's ``traceparent`` in the Serve deployment, :func:`client_span` wraps the Milvus
calls; :func:`default_provider` serves the Django side too. No Django, no OpenTelemetry import when off."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("personatree.tracing")

ENV_FLAG = "PERSONATREE_OTEL"
TRACER_NAME = "personatree.memlistener"

_tracer: Any = None


def enabled() -> bool:
    return os.environ.get(ENV_FLAG, "").strip().lower() in {"1", "true", "yes", "on"}


def default_provider():
    """A tracer provider exporting where the ``OTEL_*`` variables say (needs the otel extra)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "personatree"}
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporter_name == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    elif exporter_name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif exporter_name != "none":
        log.warning("OTEL_TRACES_EXPORTER=%s is not supported here (otlp, console, none)", exporter_name)
    return provider


def install(*, tracer_provider=None, force: bool = False) -> bool:
    """Start tracing in this process when the flag is on (or ``force``); a second call does nothing.
    ``tracer_provider`` (tests: an in-memory exporter) replaces the one built from ``OTEL_*``."""
    global _tracer
    if _tracer is not None:
        return True
    if not (force or enabled()):
        return False
    try:
        provider = tracer_provider or default_provider()
    except ImportError as exc:
        log.warning("%s is set but the otel extra is not installed (%s): no tracing", ENV_FLAG, exc)
        return False
    _tracer = provider.get_tracer(TRACER_NAME)
    return True


def uninstall() -> None:
    """Stop tracing (tests)."""
    global _tracer
    _tracer = None


@contextmanager
def _span(name: str, kind: str, headers: Mapping[str, str] | None, attributes: dict) -> Iterator[Any]:
    if _tracer is None:
        yield None
        return
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    context = None if headers is None else extract({k.lower(): v for k, v in headers.items()})
    with _tracer.start_as_current_span(
        name, context=context, kind=SpanKind[kind], attributes=attributes
    ) as span:
        yield span


def client_span(name: str, **attributes: Any):
    """A client span (a call this process makes, e.g. to Milvus) in the current trace, or ``None``."""
    return _span(name, "CLIENT", None, attributes)


def server_span(headers: Mapping[str, str], name: str, **attributes: Any):
    """A server span continuing the caller's trace (``traceparent`` in ``headers``), or ``None``."""
    return _span(name, "SERVER", headers, attributes)
