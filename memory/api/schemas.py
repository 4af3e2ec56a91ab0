"""Schemas of one's own tenant: upload a version, list, read, choose the default (the schema new
subjects are pinned to). A document is the engine's (docs/SCHEMAS.md)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from memory.api.base import TenantScopedView
from memory.api.fields import MAX_VERSION
from memory.api.openapi import problems
from memory.engine.schema import MAX_ALIAS_CHARS, MAX_ALIASES, MAX_EXAMPLE_CHARS, MAX_EXAMPLES, TIERS
from memory.services import NotFoundError, ServiceError
from memory.services import schemas as service


class SchemaDocument(serializers.Serializer):
    """An engine schema document, passed through as JSON (the engine validates it, not DRF)."""

    def to_representation(self, instance):
        return dict(instance)

    def to_internal_value(self, data):
        return data


def _component(auto_schema, name: str, schema: dict) -> dict:
    component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=schema)
    auto_schema.registry.register_on_missing(component)
    return component.ref


def _leaf_properties(tier: dict) -> dict:
    """A leaf's members (a new dict each time: drf-spectacular rewrites schemas in place)."""
    return {
        "description": {"type": "string", "description": "One line; it goes into the model prompt."},
        "budget": {
            "oneOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "description": "A name from budgets."},
            ],
            "description": "Characters after whitespace normalisation.",
        },
        "tier": dict(tier),
        "aliases": {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_ALIAS_CHARS},
            "maxItems": MAX_ALIASES,
            "description": "Words that name this leaf (placement).",
        },
        "examples": {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_EXAMPLE_CHARS},
            "maxItems": MAX_EXAMPLES,
            "description": "Example values.",
        },
        "single": {"type": "boolean", "description": "The leaf holds one value (a new one replaces it)."},
        "alias_required": {
            "type": "boolean",
            "description": "A fact is filed here only when it names one of the aliases as the speaker's (family).",
        },
        "alias_owned": {
            "type": "boolean",
            "description": "A fact naming an alias, but not as the speaker's, is not filed here (pets).",
        },
    }


class SchemaDocumentScheme(OpenApiSerializerExtension):
    """The document's OpenAPI form: ``tree`` is a recursive node (component ``SchemaTreeNode``)."""

    target_class = "memory.api.schemas.SchemaDocument"

    def map_serializer(self, auto_schema, direction):
        tier = _component(auto_schema, "SchemaTier", {"type": "string", "enum": list(TIERS)})
        node = _component(
            auto_schema,
            "SchemaTreeNode",
            {
                "type": "object",
                "description": "A leaf (it has a description) or an inner node (child name -> node).",
                "properties": _leaf_properties(tier),
                "additionalProperties": {"$ref": "#/components/schemas/SchemaTreeNode"},
            },
        )
        return {
            "type": "object",
            "description": "An engine schema document (docs/SCHEMAS.md; memory/engine/schema.py).",
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]*$", "maxLength": 100},
                "version": {"type": "integer", "minimum": 1},
                "doc": {"type": "string"},
                "budgets": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
                "default_tier": dict(tier),
                "tree": {"allOf": [node], "description": "Nested form: top-level node names -> nodes."},
                "leaves": {
                    "type": "array",
                    "description": "Flat form (instead of tree).",
                    "items": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}, **_leaf_properties(tier)},
                        "required": ["path", "description"],
                    },
                },
            },
            "required": ["id", "version"],
        }


class TenantSchemaOut(serializers.Serializer):
    schema_id = serializers.CharField()
    version = serializers.IntegerField()
    digest = serializers.CharField(help_text="SHA-256 of the document's canonical JSON.")
    leaf_count = serializers.IntegerField()
    shipped = serializers.BooleanField(help_text="Shipped with PersonaTree (not uploaded by the tenant).")
    created_at = serializers.DateTimeField(allow_null=True, help_text="Null for a shipped schema.")
    subjects = serializers.IntegerField(help_text="The tenant's subjects pinned to this version.")


class TenantSchemaDetailOut(TenantSchemaOut):
    document = SchemaDocument()


class SchemaRef(serializers.Serializer):
    schema_id = serializers.CharField(max_length=100)
    version = serializers.IntegerField(min_value=1, max_value=MAX_VERSION)


class SchemaRefIn(SchemaRef):
    """The body naming the default schema (its own component: a request states what it refuses)."""


def _default(tenant) -> dict:
    return {"schema_id": tenant.default_schema_id, "version": tenant.default_schema_version}


class _SchemaView(TenantScopedView):
    required_scopes = ("admin",)


class SchemaListView(_SchemaView):
    @extend_schema(
        responses=inline_serializer(
            "SchemaList", {"schemas": TenantSchemaOut(many=True), "default": SchemaRef()}
        ),
        summary="The schemas the tenant may pin subjects to (shipped and its own), and its default",
        operation_id="v1_schemas_list",
    )
    def get(self, request):
        return Response(
            {
                "schemas": TenantSchemaOut(service.schema_catalogue(tenant=self.tenant), many=True).data,
                "default": _default(self.tenant),
            }
        )

    @extend_schema(
        request=SchemaDocument,
        responses={
            201: TenantSchemaOut,
            200: TenantSchemaOut,
            **problems({409: "schema_conflict: this version is stored with another document."}),
        },
        summary="Upload a version of one of the tenant's schemas",
        description="201 stored; 200 when the identical document is already stored under its version. "
        "400 names what the engine's validation refused (field document), a reserved shipped id or a "
        "version that is not the next one (field document.version); 409 schema_conflict; 413 over "
        f"{service.MAX_DOCUMENT_BYTES} bytes or {service.MAX_LEAVES} leaves.",
    )
    def post(self, request):
        row, created = service.schema_upload(
            tenant=self.tenant, document=request.data, created_by=f"api_key:{self.api_key.prefix}"
        )
        info = service.schema_read(tenant=self.tenant, schema_id=row.schema_id, version=row.version)
        return Response(TenantSchemaOut(info).data, status=201 if created else 200)


class SchemaVersionView(_SchemaView):
    @extend_schema(responses=TenantSchemaDetailOut, summary="One schema version with its document")
    def get(self, request, schema_id: str, version: int):
        if version > MAX_VERSION:
            raise exceptions.NotFound(f"Unknown schema {schema_id} v{version}.")
        info = service.schema_read(tenant=self.tenant, schema_id=schema_id, version=version)
        return Response(TenantSchemaDetailOut(info).data)


class SchemaDefaultView(_SchemaView):
    @extend_schema(responses=SchemaRef, summary="The schema new subjects are pinned to")
    def get(self, request):
        return Response(SchemaRef(_default(self.tenant)).data)

    @extend_schema(
        request=SchemaRefIn,
        responses={
            200: SchemaRef,
            **problems({404: "not_found (field schema_id): no schema of the tenant by that id and version."}),
        },
        summary="Choose the schema new subjects are pinned to (existing subjects keep theirs)",
        description="404 not_found (field schema_id) for a schema the tenant cannot pin: unknown, or another "
        "tenant's.",
    )
    def put(self, request):
        ref = self.valid_body(SchemaRefIn)
        try:
            tenant = service.tenant_default_schema_set(
                tenant=self.tenant,
                schema_id=ref["schema_id"],
                version=ref["version"],
            )
        except ServiceError as exc:  # the body names a schema that is not there: a 404
            if exc.field != "schema_id" or exc.http_status != 400:
                raise
            raise NotFoundError(exc.message, field="schema_id") from exc
        return Response(SchemaRef(_default(tenant)).data)
