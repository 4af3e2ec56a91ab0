"""Re-queue a failed chunk (which blocks its subject's later chunks) with a fresh attempt budget,
through the service the admin's action uses."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from memory.api.base import TenantScopedView
from memory.api.openapi import problems
from memory.models import Chunk
from memory.services import ServiceError
from memory.services.ingest import chunks_requeue

#: Chunk ids are a PostgreSQL ``bigint``; a larger number names no chunk.
MAX_CHUNK_ID = 2**63 - 1


class ChunkNotFailed(ServiceError):
    code = "chunk_not_failed"
    http_status = 409


class ChunkOut(serializers.Serializer):
    chunk_id = serializers.IntegerField(source="pk")
    subject = serializers.CharField(source="subject.external_id")
    start_seq = serializers.IntegerField()
    end_seq = serializers.IntegerField()
    status = serializers.CharField()
    attempts = serializers.IntegerField(help_text="0 after a re-queue: a fresh attempt budget")
    last_error = serializers.CharField(help_text="Why the last attempt failed (kept until it runs again)")


class ChunkRequeueView(TenantScopedView):
    required_scopes = ("ingest",)

    @extend_schema(
        request=None,
        responses={
            202: ChunkOut,
            **problems({409: "chunk_not_failed: the chunk is pending, running or applied."}),
        },
        summary="Re-queue a failed chunk (fresh attempt budget; the dispatcher runs it next)",
        description="404 for a chunk id that is not one of this subject's chunks; 409 chunk_not_failed "
        "for a chunk that has not failed.",
    )
    def post(self, request, external_id: str, chunk_id: int):
        subject = self.get_subject(external_id)
        chunk = (
            Chunk.objects.filter(subject=subject, pk=chunk_id).select_related("subject").first()
            if chunk_id <= MAX_CHUNK_ID
            else None
        )
        if chunk is None:
            raise exceptions.NotFound("The subject has no chunk with this id.")
        if not chunks_requeue(chunk_ids=[chunk.pk]):
            chunk.refresh_from_db(fields=["status"])
            raise ChunkNotFailed(f"The chunk is {chunk.status}, not failed: nothing to re-queue.")
        # the chunk as re-queued (a dispatcher may already be running it by the time this is read)
        chunk.status, chunk.attempts = Chunk.Status.PENDING, 0
        return Response(ChunkOut(chunk).data, status=202)
