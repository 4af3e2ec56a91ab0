"""OpenTelemetry tracing of Django (probes untraced), Celery and httpx: off by default, on with
``PERSONATREE_OTEL=1`` (docs/DEPLOY.md, "Tracing"); a span's URL is the route pattern (no external id).
"""

from __future__ import annotations

import logging

from serving import tracing as serving_tracing
from serving.tracing import ENV_FLAG, default_provider, enabled

log = logging.getLogger("personatree.tracing")

NOT_TRACED = "healthz,readyz,metrics"
_URL_ATTRIBUTES = ("http.target", "url.path")
_FULL_URL_ATTRIBUTES = ("http.url", "url.full")

_instrumentors: list = []


def installed() -> bool:
    return bool(_instrumentors)


def _scrub_url(span, request, response) -> None:
    """Django's response hook: the span's URL becomes the route pattern (no external id)."""
    if not span.is_recording():
        return
    match = getattr(request, "resolver_match", None)
    path = "/" + match.route if match is not None and match.route else "/-"
    for name in _URL_ATTRIBUTES:
        span.set_attribute(name, path)
    for name in _FULL_URL_ATTRIBUTES:
        span.set_attribute(name, f"{request.scheme}://{request.get_host()}{path}")


def install(*, tracer_provider=None, force: bool = False) -> bool:
    """Instrument Django, Celery and httpx when ``PERSONATREE_OTEL`` is on (or ``force``), with
    ``tracer_provider`` or the one the ``OTEL_*`` variables build. Returns whether tracing is on."""
    if _instrumentors:
        return True
    if not (force or enabled()):
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.instrumentation.celery import CeleryInstrumentor
        from opentelemetry.instrumentation.django import DjangoInstrumentor
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

        if tracer_provider is None:
            tracer_provider = default_provider()
            trace.set_tracer_provider(tracer_provider)
    except ImportError as exc:
        log.warning("%s is set but the otel extra is not installed (%s): no tracing", ENV_FLAG, exc)
        return False
    django = DjangoInstrumentor()
    django.instrument(tracer_provider=tracer_provider, excluded_urls=NOT_TRACED, response_hook=_scrub_url)
    celery = CeleryInstrumentor()
    celery.instrument(tracer_provider=tracer_provider)
    httpx = HTTPXClientInstrumentor()
    httpx.instrument(tracer_provider=tracer_provider)
    _instrumentors.extend([django, celery, httpx])
    serving_tracing.install(tracer_provider=tracer_provider, force=True)  # Milvus client spans
    log.info("OpenTelemetry tracing on (Django, Celery, httpx)")
    return True


def uninstall() -> None:
    """Undo :func:`install` (tests)."""
    while _instrumentors:
        _instrumentors.pop().uninstrument()
    serving_tracing.uninstall()
