"""Bulk import (docs/BACKFILL.md, format ``jsonl``) as an ``application/x-ndjson`` body or a multipart
``file`` part, then its progress; the work is :mod:`memory.backfill.imports`."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiRequest,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import parsers, serializers
from rest_framework.response import Response

from memory import conf
from memory.api.base import TenantScopedView
from memory.api.openapi import problems
from memory.api.pagination import paged
from memory.api.parsers import declared_length, read_within, too_large
from memory.backfill.imports import import_create, import_progress
from memory.models import Import
from memory.services import ServiceError

NDJSON = "application/x-ndjson"
#: Room for a multipart upload's boundaries and part headers around the file.
MULTIPART_SLACK = 64 * 1024


def max_import_bytes() -> int:
    return conf.get().ingest.import_max_bytes


class NdjsonParser(parsers.BaseParser):
    """The body as bytes, at most ``IMPORT_MAX_BYTES`` of them (lines are read by the service)."""

    media_type = NDJSON

    def parse(self, stream, media_type=None, parser_context=None) -> bytes:
        return read_within(stream, max_import_bytes(), "import")


@extend_schema_field({"type": "string", "enum": list(Import.Status.values)})
class ImportStatusField(serializers.CharField):
    """The status; the schema lists its values (``ImportOutStatusEnum``)."""


class ImportChunksOut(serializers.Serializer):
    applied = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="Waiting for the MemListener.")
    processing = serializers.IntegerField()
    failed = serializers.IntegerField(help_text="Gave up after CHUNK_MAX_ATTEMPTS (re-queue them).")
    total = serializers.IntegerField()


class ImportOut(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    status = ImportStatusField(
        help_text="queued, ingesting (messages being written), processing (chunks with the "
        "MemListener), done (every chunk applied or failed), failed (see error)."
    )
    source = serializers.CharField(source="source_label")
    bytes = serializers.IntegerField(source="body_bytes")
    lines = serializers.IntegerField(help_text="Histories (non-blank lines) in the body.")
    messages = serializers.IntegerField(help_text="Messages in the body.")
    new_messages = serializers.IntegerField(help_text="Stored by this import (once ingested).")
    duplicates = serializers.IntegerField(help_text="Already stored: skipped (a re-import).")
    chunks_created = serializers.IntegerField()
    chunks = ImportChunksOut(help_text="The chunks cut by this import, by status.")
    rate_chunks_per_s = serializers.FloatField(
        allow_null=True, help_text="Chunks done per second since it started; null before any is done."
    )
    eta_s = serializers.FloatField(allow_null=True, help_text="Seconds left at that rate; null: unknown.")
    error = serializers.CharField(help_text="Why it failed (status failed).")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    ingested_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    location = serializers.CharField(help_text="Where to poll it.")

    def to_representation(self, instance: Import) -> dict:
        progress = import_progress(instance)
        stored = {
            f.attname: getattr(instance, f.attname) for f in Import._meta.concrete_fields if f.name != "body"
        }
        return super().to_representation(
            {
                **stored,
                "chunks": progress.counts,
                "rate_chunks_per_s": round(progress.rate, 3) if progress.rate is not None else None,
                "eta_s": round(progress.eta_s, 1) if progress.eta_s is not None else None,
                "location": reverse("import", args=[instance.public_id]),
            }
        )


class _ImportView(TenantScopedView):
    required_scopes = {"GET": ("read",), "POST": ("ingest",)}

    def imports(self):
        return self.owned(Import).defer("body")


class ImportListView(_ImportView):
    parser_classes = [NdjsonParser, parsers.MultiPartParser]

    @extend_schema(
        request={
            NDJSON: OpenApiRequest(OpenApiTypes.BINARY),
            "multipart/form-data": inline_serializer(
                "ImportUpload",
                {
                    "file": serializers.FileField(help_text="The JSONL file."),
                    "source": serializers.CharField(required=False),
                },
            ),
        },
        parameters=[
            OpenApiParameter(
                "source",
                OpenApiTypes.STR,
                description="The source label message keys derive from (default: the body's digest).",
            )
        ],
        responses={
            202: ImportOut,
            **problems({415: "Send application/x-ndjson or multipart/form-data."}),
        },
        summary="Import histories in bulk (JSONL); every line is checked before anything is stored",
        description="400 invalid_import_line names the first bad line in `field` (`line 3 "
        "messages[0].role`); 400 empty_import for a body without lines; 413 over IMPORT_MAX_BYTES.",
    )
    def post(self, request):
        declared = declared_length(request)
        if declared > max_import_bytes() + MULTIPART_SLACK:
            raise too_large(declared, max_import_bytes(), "import")
        data, label = self._upload(request)
        row = import_create(
            tenant=self.tenant, data=data, label=label, created_by=f"api_key:{self.api_key.prefix}"
        )
        row.refresh_from_db()  # eager Celery has run it already
        body = ImportOut(row).data
        return Response(body, status=202, headers={"Location": body["location"]})

    def _upload(self, request) -> tuple[bytes, str]:
        data = request.data
        label = request.query_params.get("source", "")
        if not isinstance(data, bytes):  # multipart
            upload = request.FILES.get("file")
            text = data.get("file")  # a part sent without a filename arrives as text
            if upload is None and not isinstance(text, str):
                raise ServiceError("Upload the JSONL as the form's `file` part.", field="file")
            size = upload.size if upload is not None else len(text.encode("utf-8", "surrogatepass"))
            if size > max_import_bytes():
                raise too_large(size, max_import_bytes(), "import")
            label = label or str(data.get("source", ""))
            data = upload.read() if upload is not None else text.encode("utf-8", "surrogatepass")
        if len(label) > 200:
            raise ServiceError("source is at most 200 characters.", field="source")
        return data, label

    @paged(
        "ImportList",
        {"imports": ImportOut(many=True)},
        operation_id="v1_imports_list",
        summary="The tenant's imports, newest first",
    )
    def get(self, request):
        return self.page(self.imports(), ImportOut, member="imports", key="before")


class ImportDetailView(_ImportView):
    @extend_schema(responses=ImportOut, summary="One import: status, chunks by status, rate and ETA")
    def get(self, request, public_id):
        return Response(ImportOut(self.get_owned(self.imports(), "Import", public_id=public_id)).data)
