"""``/healthz``, ``/readyz`` and ``/metrics``: plain Django views (no API key, no throttle), errors as
the API's problem details. ``/metrics`` needs ``PERSONATREE_METRICS_ENABLED`` and, when set, the
bearer token ``PERSONATREE_METRICS_TOKEN``.
"""

from __future__ import annotations

import hmac

from django.http import HttpResponse, JsonResponse

from memory import conf
from memory.api.problems import PROBLEM_MEDIA_TYPE, instance_of, problem
from personatree_site.ops import metrics as ops_metrics
from personatree_site.ops.readiness import readiness

_ALLOWED = ("GET", "HEAD")


def _error(request, code: str, message: str, status: int) -> JsonResponse:
    body = problem(code, message, status, instance=instance_of(request))
    return _no_store(JsonResponse(body, status=status, content_type=PROBLEM_MEDIA_TYPE))


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response


def _method_not_allowed(request) -> JsonResponse:
    response = _error(request, "method_not_allowed", "Only GET and HEAD are allowed here.", 405)
    response["Allow"] = ", ".join(_ALLOWED)
    return response


def healthz(request) -> HttpResponse:
    """Liveness: the process answers. Touches no database and no service."""
    if request.method not in _ALLOWED:
        return _method_not_allowed(request)
    return _no_store(JsonResponse({"status": "ok"}))


def readyz(request) -> HttpResponse:
    """Readiness: 200 when every required check passes, else 503; the body lists every check."""
    if request.method not in _ALLOWED:
        return _method_not_allowed(request)
    ready, body = readiness()
    return _no_store(JsonResponse(body, status=200 if ready else 503))


def metrics(request) -> HttpResponse:
    """Prometheus text exposition of this process (of all workers in multiprocess mode)."""
    if request.method not in _ALLOWED:
        return _method_not_allowed(request)
    ops = conf.get().ops
    if not ops.metrics_enabled:
        return _error(request, "not_found", "Metrics are disabled (PERSONATREE_METRICS_ENABLED).", 404)
    token = ops.metrics_token
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    bearer_ok = scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
    if token and not bearer_ok:
        response = _error(request, "not_authenticated", "A valid metrics bearer token is required.", 401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body, content_type = ops_metrics.exposition()
    return _no_store(HttpResponse(body, content_type=content_type))
