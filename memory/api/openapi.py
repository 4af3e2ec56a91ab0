"""OpenAPI (drf-spectacular): the API-key scheme, closed request bodies and every operation's problem
responses. Imported from ``MemoryConfig.ready`` so the extensions exist before a schema is generated."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from memory import conf
from memory.api.openapi_links import links_for, refusals_for
from memory.api.problems import PROBLEM_MEDIA_TYPE, ProblemDetail

#: Text the store keeps (ids, keys, message text): no C0 control character but tab, newline and
#: carriage return, no DEL (``memory.services.ingest.CONTROL_CHARS``).
STORABLE = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
#: The same, holding at least one character that is not whitespace.
STORABLE_NOT_BLANK = (
    r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
)
#: What DRF's CharField refuses anywhere in a value: the NUL character.
NO_NUL = r"^[^\x00]*$"
NO_NUL_NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"
#: A subject id in a path: what :func:`memory.services.ingest.external_id_validate` accepts.
EXTERNAL_ID = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": STORABLE_NOT_BLANK}


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
    """A request body whose unknown fields the API refuses (400): ``additionalProperties: false``."""

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

    @property
    def property_keywords(self):  # type: ignore[override]
        # More messages than a call may hold is a 413 (PERSONATREE_MAX_MESSAGES_PER_CALL).
        return {"messages": {"minItems": 1, "maxItems": conf.get().ingest.max_messages_per_call}}


class MessageInSchema(_ClosedObject):
    target_class = "memory.api.ingest.MessageIn"

    @property
    def property_keywords(self):  # type: ignore[override]
        # What the ingest service checks (memory.services.ingest.messages_validate): text it can
        # store, content and key not blank, content within PERSONATREE_MAX_MESSAGE_CHARS (else 413).
        return {
            "content": {"pattern": STORABLE_NOT_BLANK, "maxLength": conf.get().ingest.max_message_chars},
            "idempotency_key": {"minLength": 1, "pattern": STORABLE_NOT_BLANK},
            "session_id": {"pattern": STORABLE},
        }


# --- errors: every operation declares the problems it can answer --------------------------------

#: Why each status is answered, for the operations that can answer it.
PROBLEM_DESCRIPTIONS = {
    400: "Invalid request (code invalid, parse_error, invalid_text, invalid_cursor, or a field's own "
    "code such as max_length); field names the first offending field and errors lists them all.",
    401: "No API key, or an invalid or revoked one (not_authenticated, authentication_failed).",
    403: "The API key lacks a scope this operation needs (permission_denied).",
    404: "No such resource for this tenant (not_found; another tenant's resource is a 404 too), or a "
    "cursor that names no page of this list (invalid_cursor).",
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


def problems(descriptions: dict[int, str]) -> dict:
    """``responses`` entries of ``extend_schema`` for statuses an operation answers beyond those
    :class:`ProblemAutoSchema` infers, e.g. ``problems({409: "subject_erased: ..."})``."""
    return {(status, PROBLEM_MEDIA_TYPE): _problem_response(status, d) for status, d in descriptions.items()}


def _typed_nullable(schema: dict) -> dict:
    """OpenAPI 3.0.3 reads ``nullable`` only beside a ``type``: a nullable ``oneOf`` gets it on its
    first typed branch, a nullable ``allOf`` (a nested serializer) the type ``object``."""
    if not schema.get("nullable") or "type" in schema:
        return schema
    if "oneOf" in schema:
        branch = next((b for b in schema["oneOf"] if "type" in b), None)
        if branch is not None:
            schema.pop("nullable")
            branch["nullable"] = True
    elif "allOf" in schema:
        schema["type"] = "object"
    return schema


def _text_constraints(field, schema: dict) -> dict:
    """What DRF's CharField refuses in a request, stated in its schema: NUL anywhere, and an empty
    value (after trimming whitespace, unless the field keeps it) where blank is not allowed."""
    if schema.get("type") != "string" or {"enum", "pattern", "format"} & set(schema):
        return schema
    if field.allow_blank:
        schema["pattern"] = NO_NUL
    elif field.trim_whitespace:
        schema["pattern"] = NO_NUL_NOT_BLANK
    else:
        schema["pattern"] = NO_NUL
        schema["minLength"] = max(schema.get("minLength", 0), 1)
    return schema


class ProblemAutoSchema(AutoSchema):
    """drf-spectacular's schema plus the problem responses each operation can answer, inferred from it
    (views add what only they answer, 409 and 503, with :func:`problems`)."""

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
        if "path" in places or any(p.get("name") == "cursor" for p in operation.get("parameters", [])):
            statuses.append(404)  # a cursor naming no page of the list is a 404 too
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
        for parameter in operation.get("parameters", []):
            if parameter.get("in") == "path" and parameter.get("name") == "external_id":
                parameter["schema"] = dict(EXTERNAL_ID)
        for status, links in links_for(method, path).items():
            if status in responses:
                responses[status]["links"] = links
        refusals = refusals_for(method, path)
        if refusals:
            operation["x-refusals"] = refusals
            responses["400"]["description"] += (
                " Beyond the schema: "
                + "; ".join(f"{r['code']} ({r['field']}): {r['rule']}" for r in refusals)
                + "."
            )
        return operation

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions=bypass_extensions)
        return _typed_nullable(schema)

    def _map_basic_serializer(self, serializer, direction):
        """Request bodies: each text field states what DRF refuses in it (after drf-spectacular has
        added the field's own validators, so an allowed blank stays a plain string)."""
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request":
            properties = schema.get("properties", {})
            for name, field in serializer.fields.items():
                if isinstance(field, serializers.CharField) and not field.read_only and name in properties:
                    _text_constraints(field, properties[name])
        return schema

    def _problem(self, status: int | str) -> dict:
        return self._get_response_for_code(
            _problem_response(status), str(status), media_types=[PROBLEM_MEDIA_TYPE], direction="response"
        )
