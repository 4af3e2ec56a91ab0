"""Ingest API: append messages, read ingest status, flush a partial window. The ingest service
validates the body (``ingest_body_parse``); the serializers here only declare it for OpenAPI."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from memory.api.base import TenantScopedView
from memory.api.openapi import problems
from memory.models import Subject
from memory.services.ingest import (
    ROLES,
    ingest_body_parse,
    ingest_status,
    messages_ingest,
    subject_flush,
)


@extend_schema_field({"type": "string", "enum": list(ROLES)})
class RoleField(serializers.CharField):
    """Any string here; the service answers an unknown role (400 ``invalid_role``). The schema
    lists the roles it accepts, so clients and generated tests know them."""


class MessageIn(serializers.Serializer):
    role = RoleField(trim_whitespace=False)
    content = serializers.CharField(trim_whitespace=False, allow_blank=True)
    idempotency_key = serializers.CharField(trim_whitespace=False, max_length=255)
    ts = serializers.DateTimeField(required=False, allow_null=True)
    session_id = serializers.CharField(required=False, allow_blank=True, max_length=255, default="")


class MessagesIn(serializers.Serializer):
    messages = MessageIn(many=True)
    recreate_erased = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Start a new subject under the id of an erased one (otherwise 409 subject_erased).",
    )


class AcceptedOut(serializers.Serializer):
    idempotency_key = serializers.CharField()
    seq = serializers.IntegerField()


class IngestOut(serializers.Serializer):
    subject = serializers.CharField()
    subject_created = serializers.BooleanField()
    accepted = AcceptedOut(many=True)
    duplicates = AcceptedOut(many=True)
    cursor = serializers.IntegerField(help_text="Highest message seq of the subject's log.")
    chunks_created = serializers.IntegerField()


#: What a client reads about a troubled chunk. The chunk's own ``last_error`` holds the cause (the
#: MemListener's URL, a model path, database text): operators see it in the admin, clients do not.
PUBLIC_CHUNK_ERRORS = {
    "failed": "Processing failed and the subject is blocked until an operator re-queues the chunk "
    "(the cause is in the admin's chunk list).",
    "pending": "A temporary error occurred; the chunk will be retried.",
    "processing": "A temporary error occurred; the chunk is being retried.",
}


def public_ingest_status(subject: Subject) -> dict:
    """The subject's ``ingest_status`` as a client may see it: each failure's ``error`` is generic."""
    state = ingest_status(subject=subject)
    failures = [
        {**f, "error": PUBLIC_CHUNK_ERRORS.get(f["status"], PUBLIC_CHUNK_ERRORS["pending"])}
        for f in state.get("failures", ())
    ]
    return {"subject": subject.external_id, **state, "failures": failures}


class ChunkFailureOut(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    status = serializers.CharField()
    start_seq = serializers.IntegerField()
    end_seq = serializers.IntegerField()
    attempts = serializers.IntegerField()
    error = serializers.CharField(help_text="A generic message; the cause is in the admin's chunk list.")


class IngestStatusOut(serializers.Serializer):
    subject = serializers.CharField()
    cursor = serializers.IntegerField(help_text="Highest message seq of the subject's log.")
    chunked_through_seq = serializers.IntegerField()
    applied_through_seq = serializers.IntegerField()
    unchunked_messages = serializers.IntegerField()
    chunks = serializers.DictField(child=serializers.IntegerField(), help_text="Chunk count per status.")
    pending_chunks = serializers.IntegerField(help_text="Pending and processing chunks.")
    head_version = serializers.IntegerField()
    last_applied_version = serializers.IntegerField(allow_null=True)
    last_applied_at = serializers.DateTimeField(allow_null=True)
    blocked = serializers.BooleanField(help_text="A failed chunk holds the subject's later chunks back.")
    failures = ChunkFailureOut(many=True)


class FlushOut(IngestStatusOut):
    class FlushedChunkOut(serializers.Serializer):
        chunk_id = serializers.IntegerField()
        start_seq = serializers.IntegerField()
        end_seq = serializers.IntegerField()

    chunks_created = FlushedChunkOut(many=True, help_text="The chunks this flush closed.")


CONFLICTS = (
    "subject_erased (send recreate_erased) or idempotency_conflict (a key replayed with other content)."
)


class SubjectMessagesView(TenantScopedView):
    required_scopes = ("ingest",)

    @extend_schema(
        request=MessagesIn,
        responses={
            202: IngestOut,
            **problems({409: CONFLICTS}),
        },
        summary="Append messages to the subject's log (created on first sight); chunks are queued",
    )
    def post(self, request, external_id: str):
        messages, recreate_erased = ingest_body_parse(request.data)
        result = messages_ingest(
            tenant=self.tenant, external_id=external_id, messages=messages, recreate_erased=recreate_erased
        )
        body = {
            "subject": result.subject.external_id,
            "subject_created": result.subject_created,
            "accepted": [{"idempotency_key": k, "seq": s} for k, s in result.accepted],
            "duplicates": [{"idempotency_key": k, "seq": s} for k, s in result.duplicates],
            "cursor": result.cursor,
            "chunks_created": result.chunks_created,
        }
        return Response(IngestOut(body).data, status=status.HTTP_202_ACCEPTED)


class SubjectIngestStatusView(TenantScopedView):
    required_scopes = {"GET": ("read",)}

    @extend_schema(
        responses={200: IngestStatusOut}, summary="Where the subject's messages are in the pipeline"
    )
    def get(self, request, external_id: str):
        return Response(public_ingest_status(self.get_subject(external_id)))


class SubjectFlushView(TenantScopedView):
    required_scopes = {"POST": ("ingest",)}

    @extend_schema(
        request=None, responses={202: FlushOut}, summary="Close the subject's partial window into a chunk now"
    )
    def post(self, request, external_id: str):
        subject = self.get_subject(external_id)
        built = subject_flush(subject=subject)
        body = {
            **public_ingest_status(subject),
            "chunks_created": [
                {"chunk_id": c.pk, "start_seq": c.start_seq, "end_seq": c.end_seq} for c in built
            ],
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)
