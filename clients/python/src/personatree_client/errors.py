"""Typed errors, mapped from the server's error bodies.

The API answers every error with RFC 9457 problem details (``application/problem+json``:
``{"type", "title", "status", "detail", "instance", "code", "field"?, "errors"?, "error_id"?, ...}``).
:func:`error_for` picks the class by the error's ``code`` first (``subject_erased``,
``idempotency_conflict``, ``model_unavailable``), then by HTTP status::

    PersonaTreeError
    ├── APIConnectionError          the request got no answer (connection refused, reset, ...)
    │   └── APITimeoutError         ... or none within the timeout
    ├── ResponseDecodeError         a success answer that is not the JSON the client expects
    ├── IngestBlockedError          ``wait_until_applied``: a chunk failed, the subject is blocked
    ├── WaitTimeoutError            ``wait_until_applied``: not caught up in time (also a TimeoutError)
    └── APIError                    the server answered an error status (status, code, message, field)
        ├── BadRequestError         400 (and 415 / 406: a request the API cannot read)
        ├── AuthenticationError     401
        ├── PermissionDeniedError   403 (the key lacks a scope)
        ├── NotFoundError           404
        ├── ConflictError           409
        │   ├── IdempotencyConflictError   a key replayed with other content
        │   └── SubjectErasedError         ingest for an erased subject's id
        ├── PayloadTooLargeError    413
        ├── RateLimitError          429 (``retry_after``)
        └── ServerError             5xx
            └── ServiceUnavailableError    503 (``retry_after``)
                └── ModelUnavailableError  no responder model could be reached
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from personatree_client.models import IngestResult


class PersonaTreeError(Exception):
    """Every error the client raises."""


class APIConnectionError(PersonaTreeError):
    """No answer: the connection failed or broke (the original httpx error is ``__cause__``)."""


class APITimeoutError(APIConnectionError):
    """No answer within the timeout."""


class ResponseDecodeError(PersonaTreeError):
    """A success status whose body is not the JSON this client expects."""

    def __init__(self, message: str, *, status: int, body: bytes) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class IngestBlockedError(PersonaTreeError):
    """A chunk of the subject failed: the pipeline waits for an operator (``status.failures``)."""

    def __init__(self, message: str, *, status: Any) -> None:
        super().__init__(message)
        self.status = status


class WaitTimeoutError(PersonaTreeError, TimeoutError):
    """The subject did not catch up in time (``status``: the last status read)."""

    def __init__(self, message: str, *, status: Any) -> None:
        super().__init__(message)
        self.status = status


class APIError(PersonaTreeError):
    """The server answered an error status.

    ``code`` is the API's stable machine-readable code (``invalid``, ``not_found``,
    ``payload_too_large``, ...), ``field`` the request field it concerns (``messages[3].content``),
    ``details`` every field error of a validation error (the problem's ``errors``: a list of
    ``{field, code, detail}``; a tree of messages from servers before 0.2), ``retry_after`` the
    seconds the server asked to wait (429/503) and ``error_id`` the id a server error was logged
    under. ``type``, ``title`` and ``instance`` are the problem's own members; ``request_id`` the
    ``X-Request-ID`` the server answered (its log lines carry it). ``body`` is the decoded JSON
    (``None`` when the body was not JSON, e.g. a proxy's HTML page).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        field: str | None = None,
        details: Any = None,
        body: Any = None,
        retry_after: float | None = None,
        error_id: str | None = None,
        type: str | None = None,
        title: str | None = None,
        instance: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field
        self.details = details
        self.body = body
        self.retry_after = retry_after
        #: The id the server logged a 5xx's cause under (quote it when reporting the error).
        self.error_id = error_id
        self.type = type
        self.title = title
        self.instance = instance
        self.request_id = request_id
        #: Set by ``ingest`` when earlier batches of the call were stored before this error.
        self.partial: IngestResult | None = None

    def __str__(self) -> str:
        where = f" ({self.field})" if self.field else ""
        return f"{self.status} {self.code}: {self.message}{where}"


class BadRequestError(APIError):
    pass


class AuthenticationError(APIError):
    pass


class PermissionDeniedError(APIError):
    pass


class NotFoundError(APIError):
    pass


class ConflictError(APIError):
    pass


class IdempotencyConflictError(ConflictError):
    pass


class SubjectErasedError(ConflictError):
    pass


class PayloadTooLargeError(APIError):
    pass


class RateLimitError(APIError):
    pass


class ServerError(APIError):
    pass


class ServiceUnavailableError(ServerError):
    pass


class ModelUnavailableError(ServiceUnavailableError):
    pass


_BY_CODE: dict[str, type[APIError]] = {
    "idempotency_conflict": IdempotencyConflictError,
    "subject_erased": SubjectErasedError,
    "model_unavailable": ModelUnavailableError,
}
_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    406: BadRequestError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: BadRequestError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def _error_fields(body: Any) -> dict[str, Any]:
    """The members of a problem body, with ``message`` (its detail) and ``details`` (its field
    errors); empty when the body is not a JSON object."""
    if not isinstance(body, dict):
        return {}
    return {**body, "message": body.get("detail") or body.get("title"), "details": body.get("errors")}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def error_for(
    status: int, content: bytes, retry_after: float | None = None, *, request_id: str | None = None
) -> APIError:
    """The typed error for an error answer (``status`` >= 400) and its raw body."""
    try:
        body: Any = json.loads(content) if content else None
    except ValueError:
        body = None
    fields = _error_fields(body)
    code = str(fields.get("code") or f"http_{status}")
    message = fields.get("message")
    if not message:
        text = content.decode("utf-8", "replace").strip()[:200]
        message = text or f"HTTP {status} without a body"
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    if retry_after is None and isinstance(fields.get("retry_after_s"), int | float):
        retry_after = float(fields["retry_after_s"])
    return cls(
        str(message),
        status=status,
        code=code,
        field=fields.get("field") or None,
        details=fields.get("details"),
        body=body,
        retry_after=retry_after,
        error_id=fields.get("error_id") or None,
        type=_text(fields.get("type")),
        title=_text(fields.get("title")),
        instance=_text(fields.get("instance")),
        request_id=request_id,
    )
