"""Tenant schemas: upload a version, list them, choose the one new subjects are pinned to.

Validated by the engine as a shipped one is. Versions of one id are immutable and consecutive: the
same document again is idempotent, another under a taken version a conflict; shipped ids are
reserved. Existing subjects move only through a schema migration; reads go through ``selectors``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Max

from memory import selectors
from memory.engine.schema import (
    SCHEMA_DIR,
    SchemaError,
    check_text,
    document_digest,
    get_schema,
    load_schema,
    shipped_schemas,
)
from memory.models import SchemaMigration, Subject, Tenant, TenantSchema
from memory.services import NotFoundError, ServiceError

#: Upper bounds of an uploaded schema (a tree the prompt, the gate and the admin can still handle).
MAX_DOCUMENT_BYTES = 256 * 1024
MAX_LEAVES = 400
MAX_ID_LENGTH = TenantSchema._meta.get_field("schema_id").max_length or 100


class SchemaConflict(ServiceError):
    code = "schema_conflict"
    http_status = 409


class SchemaTooLarge(ServiceError):
    """Over ``MAX_DOCUMENT_BYTES`` or ``MAX_LEAVES`` (the API's 413)."""

    code = "payload_too_large"
    http_status = 413


def schema_upload(*, tenant: Tenant, document: Any, created_by: str = "") -> tuple[TenantSchema, bool]:
    """Store a version of one of the tenant's schemas; ``(row, created)``. ``SchemaConflict`` (409):
    the version exists with another document."""
    if not isinstance(document, Mapping):
        raise ServiceError("The schema must be a JSON object.", field="document")
    try:  # before anything encodes the document: a lone surrogate cannot be encoded as UTF-8
        check_text(document, "document")
        size = len(json.dumps(document, ensure_ascii=False).encode("utf-8"))
    except SchemaError as exc:
        raise ServiceError(f"Invalid schema: {exc}", field="document") from exc
    except RecursionError as exc:
        raise ServiceError("Invalid schema: the document is nested too deeply.", field="document") from exc
    if size > MAX_DOCUMENT_BYTES:
        raise SchemaTooLarge(
            f"The schema is {size} bytes; at most {MAX_DOCUMENT_BYTES} are accepted.", field="document"
        )
    try:
        schema = load_schema(document)
    except (SchemaError, TypeError, ValueError, AttributeError, KeyError) as exc:
        raise ServiceError(f"Invalid schema: {exc}", field="document") from exc
    if len(schema.leaves) > MAX_LEAVES:
        raise SchemaTooLarge(
            f"The schema has {len(schema.leaves)} leaves; at most {MAX_LEAVES} are accepted.",
            field="document",
        )
    if len(schema.id) > MAX_ID_LENGTH:
        raise ServiceError(
            f"The schema id is {len(schema.id)} characters; at most {MAX_ID_LENGTH} are accepted.",
            field="document.id",
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


def tenant_default_schema_set(*, tenant: Tenant, schema_id: str, version: int) -> Tenant:
    """Pin the tenant's new subjects to ``(schema_id, version)`` (existing subjects keep theirs)."""
    try:
        selectors.schema_get(tenant.pk, schema_id, version)
    except SchemaError as exc:
        raise ServiceError(f"Unknown schema {schema_id} v{version}.", field="schema_id") from exc
    Tenant.objects.filter(pk=tenant.pk).update(default_schema_id=schema_id, default_schema_version=version)
    tenant.default_schema_id, tenant.default_schema_version = schema_id, version
    return tenant


@dataclass(frozen=True)
class SchemaInfo:
    """One schema a tenant may pin subjects to: one of its own (``shipped`` False) or a shipped one."""

    schema_id: str
    version: int
    digest: str
    leaf_count: int
    shipped: bool
    created_at: datetime | None
    subjects: int
    document: dict[str, Any]


def _info(schema_id: str, version: int, subjects: int, row: TenantSchema | None = None) -> SchemaInfo:
    """A tenant's own schema (``row``) or, without a row, the shipped one."""
    if row is not None:
        document, digest, leaves, created_at = row.document, row.digest, row.leaf_count, row.created_at
    else:
        document = json.loads((SCHEMA_DIR / f"{schema_id}.v{version}.json").read_text(encoding="utf-8"))
        digest, created_at = document_digest(document), None
        leaves = len(get_schema(schema_id, version).leaves)
    return SchemaInfo(schema_id, version, digest, leaves, row is None, created_at, subjects, document)


def schema_catalogue(*, tenant: Tenant) -> list[SchemaInfo]:
    """The shipped schemas, then the tenant's own, each with how many of its subjects are pinned to it."""
    rows = Subject.objects.filter(tenant=tenant).values("schema_id", "schema_version").order_by()
    counts = {(r["schema_id"], r["schema_version"]): r["n"] for r in rows.annotate(n=Count("pk"))}
    shipped = [_info(sid, v, counts.get((sid, v), 0)) for sid, v in shipped_schemas()]
    own = TenantSchema.objects.filter(tenant=tenant).order_by("schema_id", "version")
    return shipped + [_info(r.schema_id, r.version, counts.get((r.schema_id, r.version), 0), r) for r in own]


def schema_read(*, tenant: Tenant, schema_id: str, version: int) -> SchemaInfo:
    """One schema the tenant may pin to, with its document (missing or another tenant's: NotFoundError)."""
    row = None
    if (schema_id, version) not in shipped_schemas():
        row = TenantSchema.objects.filter(tenant=tenant, schema_id=schema_id, version=version).first()
        if row is None:
            raise NotFoundError(f"Unknown schema {schema_id} v{version}.")
    subjects = Subject.objects.filter(tenant=tenant, schema_id=schema_id, schema_version=version).count()
    return _info(schema_id, version, subjects, row)


def tenant_default_schema_follow(*, migration: SchemaMigration) -> bool:
    """Move the tenant's default from the migration's source to its target; True if moved."""
    return bool(
        Tenant.objects.filter(
            pk=migration.tenant_id,
            default_schema_id=migration.source_id,
            default_schema_version=migration.source_version,
        ).update(default_schema_id=migration.target_id, default_schema_version=migration.target_version)
    )
