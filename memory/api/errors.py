"""One JSON error shape for the whole API: ``{"error": {"code", "message", "field"?}}``.

DRF exceptions, Django validation/404 errors, Django's body-size refusal
(``RequestDataTooBig``, as the API's 413) and the store's
:class:`~memory.services.ServiceError` all end up in this shape. Field-level
validation errors report the first offending field in ``field`` and every
field's messages in ``details``. :class:`ApiNotFoundView` answers every path under ``/v1/`` that
no endpoint matches with the same shape (a JSON 404, never Django's HTML page).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from memory.api.parsers import body_too_large
from memory.services import ServiceError, VersionConflict


def _error(code: str, message: str, http_status: int, *, field: str | None = None, **extra) -> Response:
    body: dict = {"code": code, "message": message}
    if field:
        body["field"] = field
    body.update({k: v for k, v in extra.items() if v is not None})
    return Response({"error": body}, status=http_status)


def _first_message(detail) -> tuple[str, str | None, str]:
    """Return (message, field, code) of the first error in a DRF ``detail`` structure."""
    if isinstance(detail, dict):
        for name, sub in detail.items():
            message, inner_field, code = _first_message(sub)
            field = name if name != "non_field_errors" else None
            if inner_field and field:
                field = f"{field}.{inner_field}"
            return message, field or inner_field, code
        return "Invalid input.", None, "invalid"
    if isinstance(detail, list):
        for item in detail:
            message, field, code = _first_message(item)
            return message, field, code
        return "Invalid input.", None, "invalid"
    return str(detail), None, getattr(detail, "code", None) or "invalid"


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):  # Django's own body limit, hit before our parser runs
        request = context.get("request")
        size = request.META.get("CONTENT_LENGTH") if request is not None else None
        exc = body_too_large(int(size) if size and size.isdigit() else None)
    if isinstance(exc, VersionConflict):
        return _error(
            exc.code, exc.message, exc.http_status, field=exc.field, current_version=exc.current_version
        )
    if isinstance(exc, ServiceError):
        return _error(exc.code, exc.message, exc.http_status, field=exc.field)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)

    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # unexpected error: Django's 500 handling (and logging) applies
    if isinstance(exc, exceptions.ValidationError):
        message, field, code = _first_message(exc.detail)
        response.data = {"error": {"code": code, "message": message, "details": exc.detail}}
        if field:
            response.data["error"]["field"] = field
        return response
    detail = getattr(exc, "detail", None)
    message, field, code = _first_message(detail) if detail is not None else (str(exc), None, "error")
    code = getattr(exc, "default_code", None) if code in (None, "invalid") else code
    body = {"code": code or "error", "message": message}
    if field:
        body["field"] = field
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        body["retry_after_s"] = int(exc.wait)
    response.data = {"error": body}
    if response.status_code == status.HTTP_401_UNAUTHORIZED and "WWW-Authenticate" not in response:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


class ApiNotFoundView(APIView):
    """Every method on a path under ``/v1/`` that matches no endpoint: the JSON 404.

    Such paths come from ids no route can hold (an empty id, one holding ``/`` or ``%2F``), a
    trailing slash, or a typo. No key is needed to learn that a path does not exist.
    """

    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes: list = []
    renderer_classes = [JSONRenderer]
    schema = None  # not an endpoint: left out of the OpenAPI schema

    def initial(self, request, *args, **kwargs):
        raise exceptions.NotFound("No API endpoint at this path.")
