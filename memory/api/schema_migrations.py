"""Schema migrations of one's own tenant: a dry run stores nothing (its report, paths and counts,
is kept an hour for polling); a run stores the mapping (idempotent) and queues its run."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from memory.api.base import TenantScopedView
from memory.api.openapi import problems
from memory.engine.migration import SPLIT_RULES, STEP_KINDS
from memory.services import schema_dry_runs as dry_runs
from memory.services import schema_migrations as service
from workers.base import enqueue_on_commit
from workers.schema_migrations import schema_migrate, schema_migration_dry_run

TRUE, FALSE = {"1", "true", "yes"}, {"0", "false", "no", ""}


class MappingDocument(serializers.Serializer):
    """A mapping, passed through as JSON (the engine validates it, not DRF)."""

    def to_internal_value(self, data):
        return data


_KEY = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "version": {"type": "integer", "minimum": 1}},
    "required": ["id", "version"],
}
_PATHS = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}


class MappingDocumentScheme(OpenApiSerializerExtension):
    target_class = "memory.api.schema_migrations.MappingDocument"

    def map_serializer(self, auto_schema, direction):
        step = {
            "type": "object",
            "properties": {
                "op": {"type": "string", "enum": list(STEP_KINDS)},
                "from": dict(_PATHS),
                "to": dict(_PATHS),
                "path": {"type": "string", "description": "drop: the leaf to drop."},
                "rule": {"type": "string", "enum": list(SPLIT_RULES)},
                "separator": {"type": "string"},
            },
            "required": ["op"],
        }
        return {
            "type": "object",
            "description": "A schema migration mapping (docs/SCHEMAS.md, 'Mapping format').",
            "properties": {
                "id": {"type": "string"},
                "doc": {"type": "string"},
                "source": dict(_KEY),
                "target": dict(_KEY),
                "steps": {"type": "array", "items": step},
                "dry_run": {"type": "boolean", "description": "Report only (not part of the mapping)."},
            },
            "required": ["id", "source", "target", "steps"],
        }


@extend_schema_field({"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "integer"}]}})
class SchemaKeyField(serializers.ListField):
    """``[schema id, version]``."""


def _row(name: str, **fields) -> serializers.Serializer:
    return inline_serializer(name, {**fields, "subjects": serializers.IntegerField()}, many=True)


_strings = serializers.ListField(child=serializers.CharField())
COUNTS = {name: serializers.IntegerField() for name in service.COUNTS}
FAILURES = serializers.DictField(child=serializers.IntegerField(), help_text="Failed subjects per reason.")

DryRunOut = inline_serializer(
    "SchemaMigrationDryRun",
    {
        "mapping": serializers.CharField(),
        "source": SchemaKeyField(),
        "target": SchemaKeyField(),
        "dry_run": serializers.BooleanField(),
        "subjects": serializers.IntegerField(help_text="Subjects looked at."),
        "remaining": serializers.IntegerField(help_text="Subjects pinned to the source in all."),
        "changed": serializers.IntegerField(),
        "unchanged": serializers.IntegerField(),
        "held": serializers.IntegerField(help_text="Subjects with values held for review."),
        "held_ops": serializers.IntegerField(),
        "failed": serializers.IntegerField(),
        "failures": FAILURES,
        "moved": _row("MigrationMoved", **{"from": serializers.CharField(), "to": serializers.CharField()}),
        "merged": _row("MigrationMerged", **{"from": _strings, "to": serializers.CharField()}),
        "split": _row(
            "MigrationSplit",
            **{"from": serializers.CharField(), "to": _strings, "rule": serializers.CharField()},
        ),
        "dropped": _row(
            "MigrationDropped", path=serializers.CharField(), max_length=serializers.IntegerField()
        ),
        "truncated": _row(
            "MigrationTruncated",
            path=serializers.CharField(),
            budget=serializers.IntegerField(),
            max_before=serializers.IntegerField(),
        ),
        "review": _row(
            "MigrationReview",
            path=serializers.CharField(),
            from_tiers=_strings,
            tier=serializers.CharField(),
            held=serializers.BooleanField(
                help_text="Held for review (the tenant reviews special-tier writes)."
            ),
        ),
    },
    required=False,
    help_text="Once done.",
)

DryRunQueuedOut = inline_serializer(
    "SchemaMigrationDryRunQueued",
    {
        "id": serializers.CharField(help_text="The dry run's id."),
        "status": serializers.ChoiceField(choices=["queued"]),
        "location": serializers.CharField(help_text="Where to poll it (also the Location header)."),
    },
)

DryRunPollOut = inline_serializer(
    "SchemaMigrationDryRunPoll",
    {
        "id": serializers.CharField(),
        "status": serializers.ChoiceField(choices=list(dry_runs.STATUSES)),
        "created_at": serializers.CharField(),
        "finished_at": serializers.CharField(required=False),
        "report": DryRunOut,
        "error": serializers.CharField(required=False, help_text="Once failed."),
    },
)

StatusOut = inline_serializer(
    "SchemaMigrationStatus",
    {
        "mapping": serializers.CharField(),
        "source": SchemaKeyField(),
        "target": SchemaKeyField(),
        "status": serializers.ChoiceField(choices=["created", "running", "done"]),
        "counts": inline_serializer("SchemaMigrationCounts", {**COUNTS, "failures": FAILURES}),
        "remaining": serializers.IntegerField(
            allow_null=True, help_text="Subjects left on the source after the last run; null before one."
        ),
    },
)


class _MigrationView(TenantScopedView):
    required_scopes = ("admin",)


def _flag(value) -> bool:
    text = str(value).strip().lower()
    if isinstance(value, bool) or text in TRUE | FALSE:
        return value if isinstance(value, bool) else text in TRUE
    raise exceptions.ValidationError({"dry_run": ["Must be a boolean (1/0, true/false)."]})


class SchemaMigrationListView(_MigrationView):
    @extend_schema(
        request=MappingDocument,
        parameters=[
            OpenApiParameter("dry_run", OpenApiTypes.BOOL, description="Report only; store nothing.")
        ],
        responses={
            202: PolymorphicProxySerializer(
                component_name="SchemaMigrationAccepted",
                serializers=[StatusOut, DryRunQueuedOut],
                resource_type_field_name=None,
            ),
            **problems({409: "schema_migration_conflict: the mapping id is stored with another document."}),
        },
        summary="Dry-run a schema migration, or store it and queue its run",
        description='With ?dry_run=1 or "dry_run": true, 202: the dry run is queued; poll the location '
        "it names (GET /v1/schema-migrations/dry-runs/{id}) for its report. Otherwise 202: the "
        "mapping is stored and its run queued. 400 names the bad step (field document.steps[i]) or schema "
        "(document.source / document.target); 409 schema_migration_conflict.",
    )
    def post(self, request):
        document = request.data
        dry_run = _flag(request.query_params.get("dry_run", ""))
        if isinstance(document, dict) and "dry_run" in document:
            document = {k: v for k, v in document.items() if k != "dry_run"}
            dry_run = dry_run or _flag(request.data["dry_run"])
        if dry_run:
            run_id = dry_runs.dry_run_start(tenant=self.tenant, document=document)
            enqueue_on_commit(schema_migration_dry_run, self.tenant.pk, run_id, tenant_id=self.tenant.pk)
            location = reverse("schema-migration-dry-run", kwargs={"run_id": run_id})
            body = {"id": run_id, "status": "queued", "location": location}
            return Response(body, status=202, headers={"Location": location})
        row, _ = service.schema_migration_create(
            tenant=self.tenant, document=document, created_by=f"api_key:{self.api_key.prefix}"
        )
        enqueue_on_commit(schema_migrate, row.pk, tenant_id=row.tenant_id)
        return Response(service.status_dict(row), status=202)


class SchemaMigrationDetailView(_MigrationView):
    @extend_schema(responses=StatusOut, summary="A schema migration's status and counts")
    def get(self, request, mapping_id: str):
        row = service.schema_migration_get(tenant=self.tenant, mapping_id=mapping_id)
        if row is None:
            raise exceptions.NotFound("Schema migration not found.")
        return Response(service.status_dict(row))


class SchemaMigrationDryRunView(_MigrationView):
    @extend_schema(
        responses=DryRunPollOut,
        summary="A schema migration dry run: its status and, once done, its report",
        description="404 for an unknown id, another tenant's, or a result older than an hour.",
    )
    def get(self, request, run_id: str):
        found = dry_runs.dry_run_get(tenant=self.tenant, run_id=run_id)
        if found is None:
            raise exceptions.NotFound("Dry run not found (unknown, or its result expired).")
        return Response(found)
