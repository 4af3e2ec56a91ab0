"""Tenant schemas: upload a version, list them, choose the one new subjects are pinned to.

A tenant's schema is validated by the engine exactly as a shipped one is
(``memory/engine/schema.py`` ``load_schema``). Versions of one id are immutable and consecutive
(1, 2, 3, ...): uploading the same document again under its version is idempotent, a different
document under a taken version is a conflict. Ids of shipped schemas are reserved. Existing subjects
move to a new version only through a schema migration (``memory/services/schema_migrations.py``).
Reads go through ``memory/selectors.py`` ``schema_get`` (cached; rows never change).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, QuerySet

from memory import selectors
from memory.engine.schema import SchemaError, load_schema
from memory.models import Subject, Tenant, TenantSchema
from memory.schema_models import document_digest
from memory.services import ServiceError

#: Upper bounds of an uploaded schema (a tree the prompt, the gate and the admin can still handle).
MAX_DOCUMENT_BYTES = 256 * 1024
MAX_LEAVES = 400


class SchemaConflict(ServiceError):
    code = "schema_conflict"
    http_status = 409


def schema_upload(*, tenant: Tenant, document: Any, created_by: str = "") -> tuple[TenantSchema, bool]:
    """Store a version of one of the tenant's schemas; ``(row, created)``.

    Refused (``ServiceError``, field ``document``): not an object, over ``MAX_DOCUMENT_BYTES`` or
    ``MAX_LEAVES``, anything the engine's validation refuses, a reserved (shipped) id, a version
    that is not the next one of its id. ``SchemaConflict`` (409): the version exists with another
    document."""
    if not isinstance(document, Mapping):
        raise ServiceError("The schema must be a JSON object.", field="document")
    size = len(json.dumps(document, ensure_ascii=False).encode("utf-8"))
    if size > MAX_DOCUMENT_BYTES:
        raise ServiceError(
            f"The schema is {size} bytes; at most {MAX_DOCUMENT_BYTES} are accepted.", field="document"
        )
    try:
        schema = load_schema(document)
    except (SchemaError, TypeError, ValueError, AttributeError) as exc:
        raise ServiceError(f"Invalid schema: {exc}", field="document") from exc
    if len(schema.leaves) > MAX_LEAVES:
        raise ServiceError(
            f"The schema has {len(schema.leaves)} leaves; at most {MAX_LEAVES} are accepted.",
            field="document",
        )
    if schema.id in selectors.shipped_schema_ids():
        raise ServiceError(
            f"The schema id {schema.id!r} is reserved for a shipped schema; choose another id.",
            field="document.id",
        )
    digest = document_digest(document)
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()  # one upload per tenant at a time
        existing = TenantSchema.objects.filter(
            tenant=tenant, schema_id=schema.id, version=schema.version
        ).first()
        if existing is not None:
            if existing.digest == digest:
                return existing, False
            raise SchemaConflict(
                f"{schema.id} v{schema.version} exists with another document; versions never change, "
                f"upload the change as v{_next_version(tenant, schema.id)}.",
                field="document.version",
            )
        expected = _next_version(tenant, schema.id)
        if schema.version != expected:
            raise ServiceError(
                f"{schema.id}: the next version is {expected}, got {schema.version}.",
                field="document.version",
            )
        row = TenantSchema.objects.create(
            tenant=tenant,
            schema_id=schema.id,
            version=schema.version,
            document=dict(document),
            digest=digest,
            leaf_count=len(schema.leaves),
            created_by=created_by[:200],
        )
    return row, True


def _next_version(tenant: Tenant, schema_id: str) -> int:
    latest = TenantSchema.objects.filter(tenant=tenant, schema_id=schema_id).aggregate(v=Max("version"))["v"]
    return (latest or 0) + 1


def schema_list(*, tenant: Tenant) -> QuerySet[TenantSchema]:
    return TenantSchema.objects.filter(tenant=tenant).order_by("schema_id", "version")


def schema_subject_counts(*, tenant: Tenant) -> dict[tuple[str, int], int]:
    """How many of the tenant's subjects are pinned to each ``(schema_id, version)``."""
    rows = (
        Subject.objects.filter(tenant=tenant)
        .values("schema_id", "schema_version")
        .order_by()
        .annotate(n=Count("pk"))
    )
    return {(r["schema_id"], r["schema_version"]): r["n"] for r in rows}


def tenant_default_schema_set(*, tenant: Tenant, schema_id: str, version: int) -> Tenant:
    """Pin the tenant's new subjects to ``(schema_id, version)`` (existing subjects keep theirs)."""
    try:
        selectors.schema_get(tenant.pk, schema_id, version)
    except SchemaError as exc:
        raise ServiceError(f"Unknown schema {schema_id} v{version}.", field="schema_id") from exc
    Tenant.objects.filter(pk=tenant.pk).update(default_schema_id=schema_id, default_schema_version=version)
    tenant.default_schema_id, tenant.default_schema_version = schema_id, version
    return tenant
