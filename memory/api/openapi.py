"""OpenAPI (drf-spectacular): our API-key authentication, closed request bodies, and the problem
responses (RFC 9457, :mod:`memory.api.problems`) of every operation (:class:`ProblemAutoSchema`,
the schema class of every API view).

Imported from ``MemoryConfig.ready`` so the extensions are registered before the
schema is generated.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse

from memory.api.problems import PROBLEM_MEDIA_TYPE, ProblemDetail


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "memory.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "pt_live_<prefix>_<secret>",
            "description": "A tenant API key (shown once at creation). Scopes: ingest, read, "
            "read_special, write (single-leaf edits), admin (key management), erase.",
        }


class _ClosedObject(OpenApiSerializerExtension):
    """A request body whose unknown fields the API refuses (400): ``additionalProperties: false``.

    Without it the schema allowed any extra field, and schema-driven clients (the fuzz test in
    ``tests/fuzz``) sent bodies the ingest API must refuse.
    """

    #: Further keywords per property that the API enforces (an empty list or key is a 400).
    property_keywords: dict[str, dict] = {}

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target_class, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
            for name, keywords in self.property_keywords.items():
                schema["properties"][name].update(keywords)
        return schema


class MessagesInSchema(_ClosedObject):
    target_class = "memory.api.ingest.MessagesIn"
    property_keywords = {"messages": {"minItems": 1}}


class MessageInSchema(_ClosedObject):
    target_class = "memory.api.ingest.MessageIn"
    # Blank content or key (only whitespace) is refused as well.
    property_keywords = {"content": {"pattern": r"\S"}, "idempotency_key": {"minLength": 1, "pattern": r"\S"}}


# --- errors: every operation declares the problems it can answer --------------------------------

#: Why each status is answered, for the operations that can answer it.
PROBLEM_DESCRIPTIONS = {
    400: "Invalid request (code invalid, parse_error, invalid_text, invalid_cursor, or a field's own "
    "code such as max_length); field names the first offending field and errors lists them all.",
    401: "No API key, or an invalid or revoked one (not_authenticated, authentication_failed).",
    403: "The API key lacks a scope this operation needs (permission_denied).",
    404: "No such resource for this tenant (not_found; another tenant's resource is a 404 too).",
    409: "Conflict with the stored state.",
    413: "The body is over the byte limit, or holds too many or too long messages (payload_too_large).",
    429: "Rate limit of the API key exceeded (throttled); wait Retry-After seconds.",
    503: "A backend this request needs is down; nothing was done. Retry after Retry-After seconds.",
    "default": "Any other error: 405, 406 (only JSON is served), 415 (only JSON bodies are read), "
    "500 internal_error (with error_id; the cause is only in the server's log).",
}
RETRY_AFTER = {"schema": {"type": "integer"}, "description": "Seconds to wait before retrying."}


def _problem_response(status: int | str, description: str | None = None) -> OpenApiResponse:
    return OpenApiResponse(ProblemDetail, description=description or PROBLEM_DESCRIPTIONS[status])


def problems(*statuses: int, **descriptions: str) -> dict:
    """``responses`` entries of ``extend_schema`` for statuses an operation answers beyond those
    :class:`ProblemAutoSchema` infers, e.g. ``problems(409, d409="subject_erased, ...")``."""
    return {
        (status, PROBLEM_MEDIA_TYPE): _problem_response(status, descriptions.get(f"d{status}"))
        for status in statuses
    }


class ProblemAutoSchema(AutoSchema):
    """drf-spectacular's schema plus the problem responses every operation can answer.

    Inferred from the operation: 401/403 for an API-key view, 429 for a throttled one, 400 for an
    operation with a body, query parameters or a subject id (an id that cannot be one is a 400),
    404 for one with path parameters, 413 for one with a body; ``default`` for the rest (405, 406,
    415, 500). Views add what only they answer (409, 503) with :func:`problems`.
    """

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        places = {p.get("in") for p in operation.get("parameters", [])}
        has_body = "requestBody" in operation
        statuses: list[int | str] = []
        if has_body or "query" in places or "{external_id}" in path:
            statuses.append(400)
        if getattr(self.view, "authentication_classes", None):
            statuses += [401, 403]
        if "path" in places:
            statuses.append(404)
        if has_body:
            statuses.append(413)
        if getattr(self.view, "throttle_classes", None):
            statuses.append(429)
        statuses.append("default")
        responses = operation.setdefault("responses", {})
        for status in statuses:
            if str(status) not in responses:
                responses[str(status)] = self._problem(status)
        for status in ("429", "503"):
            if status in responses:
                responses[status].setdefault("headers", {})["Retry-After"] = RETRY_AFTER
        return operation

    def _problem(self, status: int | str) -> dict:
        return self._get_response_for_code(
            _problem_response(status), str(status), media_types=[PROBLEM_MEDIA_TYPE], direction="response"
        )
