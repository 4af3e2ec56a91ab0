"""RFC 9457 problem details: the body of every API error (``application/problem+json``); docs/ERRORS.md
lists the members and the codes."""

from __future__ import annotations

from http import HTTPStatus

from django.utils.encoding import escape_uri_path
from rest_framework import serializers
from rest_framework.response import Response

PROBLEM_MEDIA_TYPE = "application/problem+json"
#: ``type`` of a problem is this base followed by its code (documented in docs/ERRORS.md).
TYPE_BASE = "https://personatree.dev/problems/"

#: The title of each error code the API answers with; any other code (a DRF field error such as
#: ``max_length``) is titled by its HTTP status.
TITLES = {
    "invalid": "Invalid request",
    "parse_error": "Malformed request body",
    "invalid_text": "Text that cannot be stored",
    "invalid_cursor": "Invalid or expired cursor",
    "invalid_role": "Unknown message role",
    "invalid_url": "Webhook URL refused",
    "gate_rejected": "Refused by the write gate",
    "not_authenticated": "API key required",
    "authentication_failed": "Invalid or revoked API key",
    "permission_denied": "Permission denied",
    "not_found": "Not found",
    "unknown_leaf": "No such leaf in the subject's schema",
    "leaf_empty": "The leaf is already empty",
    "method_not_allowed": "Method not allowed",
    "not_acceptable": "Only JSON is served",
    "unsupported_media_type": "Only JSON bodies are read",
    "subject_erased": "Subject erased",
    "idempotency_conflict": "Idempotency key reused with other content",
    "version_conflict": "Version conflict",
    "schema_conflict": "Schema version stored with another document",
    "schema_migration_conflict": "Schema migration stored with another mapping",
    "key_revoked": "API key revoked",
    "payload_too_large": "Request too large",
    "throttled": "Rate limit exceeded",
    "model_unavailable": "Responder model unavailable",
    "broker_unavailable": "Task queue unavailable",
    "unavailable": "Service unavailable",
    "internal_error": "Internal error",
}


def problem(
    code: str,
    detail: str,
    status: int,
    *,
    instance: str | None = None,
    field: str | None = None,
    errors: list[dict] | None = None,
    **extensions,
) -> dict:
    """The problem body: the RFC 9457 members, ``code``, then the extension members given (an empty
    ``instance``, ``field`` or ``errors`` and a None extension are left out)."""
    members = {"instance": instance or None, "code": code, "field": field or None, "errors": errors or None}
    return {
        "type": TYPE_BASE + code,
        "title": TITLES.get(code) or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        **{k: v for k, v in {**members, **extensions}.items() if v is not None},
    }


def instance_of(request) -> str | None:
    """The request's path as a URI reference (percent-encoded: always ASCII, always encodable)."""
    path = getattr(request, "path", None)
    return escape_uri_path(path) if path else None


def problem_response(request, code: str, detail: str, status: int, **members) -> Response:
    return Response(
        problem(code, detail, status, instance=instance_of(request), **members),
        status=status,
        content_type=PROBLEM_MEDIA_TYPE,
    )


# --- the schema of a problem (OpenAPI component ``ProblemDetail``) ------------------------------


class FieldErrorOut(serializers.Serializer):
    field = serializers.CharField(help_text="Where: messages[3].ts; empty when the error names no field.")
    code = serializers.CharField()
    detail = serializers.CharField()


class ProblemDetail(serializers.Serializer):
    """RFC 9457 problem details with PersonaTree's extension members."""

    type = serializers.URLField(help_text=f"{TYPE_BASE}<code>: one URI per error code.")
    title = serializers.CharField(help_text="Short summary, the same for every problem of this type.")
    status = serializers.IntegerField(help_text="The HTTP status code.")
    detail = serializers.CharField(help_text="What went wrong in this request.")
    instance = serializers.CharField(required=False, help_text="The request's path.")
    code = serializers.CharField(help_text="Machine-readable error code (the last segment of type).")
    field = serializers.CharField(required=False, help_text="The first offending request field.")
    errors = FieldErrorOut(many=True, required=False, help_text="Every field error of a 400.")
    error_id = serializers.CharField(
        required=False, help_text="5xx: the id the cause was logged under; quote it when reporting."
    )
    retry_after_s = serializers.IntegerField(required=False, help_text="429: seconds to wait.")
    current_version = serializers.IntegerField(
        required=False, help_text="version_conflict: the subject's head version now."
    )
    reason = serializers.CharField(
        required=False, help_text="gate_rejected: the gate's reason (OVER_BUDGET, EMPTY_VALUE, ...)."
    )
    op_id = serializers.IntegerField(required=False, help_text="gate_rejected: the audit row's id.")
