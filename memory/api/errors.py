"""The API's one exception handler: every error is an RFC 9457 problem (docs/ERRORS.md). A 5xx never
shows its cause (internal URLs, paths, database text): it answers an ``error_id`` the cause is logged under."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView, set_rollback
from rest_framework.views import exception_handler as drf_exception_handler

from memory.api.parsers import max_request_bytes, too_large
from memory.api.problems import problem_response
from memory.services import ServiceError, VersionConflict, new_error_id

logger = logging.getLogger("personatree.api")

#: Seconds a client is told to wait (``Retry-After``) after a 503 that names no time of its own.
DEFAULT_RETRY_AFTER_S = 30

#: What a client reads for a 5xx, by code; the cause is in the log under the error id.
PUBLIC_MESSAGES = {
    "model_unavailable": "The responder model is unavailable; try again later.",
    "broker_unavailable": "The task queue is unavailable, so this cannot be done now; try again later.",
    "internal_error": "Internal error; nothing more is shown here. Quote the error_id when reporting it.",
}
UNAVAILABLE_MESSAGE = "A backend service is unavailable; try again later."


class ServiceUnavailable(ServiceError):
    """A backend this request needs is down (503 + ``Retry-After``); nothing was done."""

    code = "unavailable"
    http_status = 503

    def __init__(self, message: str, *, code: str | None = None, retry_after_s: int = DEFAULT_RETRY_AFTER_S):
        super().__init__(message, code=code)
        self.retry_after_s = retry_after_s


def _join(path: str, sub: str) -> str:
    if not path or not sub:
        return path or sub
    return f"{path}{sub}" if sub.startswith("[") else f"{path}.{sub}"


def iter_errors(detail) -> Iterator[tuple[str, str, str]]:
    """Every ``(field, message, code)`` of a DRF error tree (``exc.detail`` or a serializer's
    ``errors``), in order. ``field`` reads like the API's error fields: ``messages[3].ts`` (list
    items by index, ``non_field_errors`` left out); ``""`` when the error names no field."""
    if not isinstance(detail, dict | list):
        yield "", str(detail), getattr(detail, "code", None) or "invalid"
        return
    for key, sub in detail.items() if isinstance(detail, dict) else enumerate(detail):
        if sub in ({}, [], None, ""):
            continue
        if isinstance(detail, list) and not isinstance(sub, dict | list):
            yield from iter_errors(sub)  # a message of the list's own field
            continue
        if key == api_settings.NON_FIELD_ERRORS_KEY:
            key = ""
        prefix = f"[{key}]" if isinstance(key, int) else str(key)  # many=True: one entry per item
        for field, message, code in iter_errors(sub):
            yield _join(prefix, field), message, code


def first_error(detail) -> tuple[str, str, str]:
    """The first ``(field, message, code)`` of a DRF error tree (:func:`iter_errors`)."""
    return next(iter_errors(detail), ("", "Invalid input.", "invalid"))


def _server_error(
    request, exc: Exception, code: str, http_status: int, *, retry_after_s: int | None = None
) -> Response:
    """A 5xx with a generic message and an error id; the cause goes to the log only."""
    error_id = new_error_id()
    cause = getattr(exc, "message", None) or str(exc)
    if http_status >= 500 and http_status != status.HTTP_503_SERVICE_UNAVAILABLE:
        logger.error("API error %s (%s): %s", error_id, code, cause, exc_info=exc)
    else:
        logger.warning("API error %s (%s): %s", error_id, code, cause)
    message = PUBLIC_MESSAGES.get(
        code, UNAVAILABLE_MESSAGE if http_status == 503 else PUBLIC_MESSAGES["internal_error"]
    )
    response = problem_response(request, code, message, http_status, error_id=error_id)
    if http_status == status.HTTP_503_SERVICE_UNAVAILABLE:
        response["Retry-After"] = str(retry_after_s or DEFAULT_RETRY_AFTER_S)
    return response


def exception_handler(exc, context):
    """DRF's ``EXCEPTION_HANDLER``: every API error, as problem details (:mod:`memory.api.problems`)."""
    request = context.get("request")
    if isinstance(exc, RequestDataTooBig):  # Django's own body limit, hit before our parser runs
        size = request.META.get("CONTENT_LENGTH") if request is not None else None
        exc = too_large(int(size) if size and size.isdigit() else None, max_request_bytes())
    if isinstance(exc, ServiceError):
        if exc.http_status >= 500:
            return _server_error(
                request, exc, exc.code, exc.http_status, retry_after_s=getattr(exc, "retry_after_s", None)
            )
        extra = getattr(exc, "extra", {})
        if isinstance(exc, VersionConflict):
            extra = {"current_version": exc.current_version}
        return problem_response(request, exc.code, exc.message, exc.http_status, field=exc.field, **extra)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)

    response = drf_exception_handler(exc, context)
    if response is None:  # not an API error: a bug or a backend failing (JSON 500, cause in the log)
        set_rollback()
        return _server_error(request, exc, "internal_error", status.HTTP_500_INTERNAL_SERVER_ERROR)
    members: dict = {}
    if isinstance(exc, exceptions.ValidationError):
        field, message, code = first_error(exc.detail)
        members["errors"] = [{"field": f, "code": c, "detail": m} for f, m, c in iter_errors(exc.detail)]
    else:
        detail = getattr(exc, "detail", None)
        field, message, code = first_error(detail) if detail is not None else ("", str(exc), "error")
        code = getattr(exc, "default_code", None) if code in (None, "invalid") else code
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            members["retry_after_s"] = int(exc.wait)
    problem = problem_response(
        request, code or "error", message, response.status_code, field=field or None, **members
    )
    for header, value in response.items():  # DRF's own headers: Retry-After, WWW-Authenticate, Allow
        if header.lower() != "content-type":
            problem[header] = value
    if problem.status_code == status.HTTP_401_UNAUTHORIZED and "WWW-Authenticate" not in problem:
        problem["WWW-Authenticate"] = 'Bearer realm="api"'
    return problem


class ApiNotFoundView(APIView):
    """The JSON 404 of every path under ``/v1/`` that matches no endpoint (an empty id, one holding
    ``/``, a trailing slash, a typo); no key is needed to learn that a path does not exist."""

    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes: list = []
    renderer_classes = [JSONRenderer]
    schema = None  # not an endpoint: left out of the OpenAPI schema

    def initial(self, request, *args, **kwargs):
        raise exceptions.NotFound("No API endpoint at this path.")
