"""What the admin shows to which staff (docs/MODERATION.md): granted tenants' rows only, special-tier
values (and paths of no leaf, whose tier cannot be told) masked without ``memory.view_special_tier``."""

from __future__ import annotations

import copy
from dataclasses import replace

from django.contrib import admin

from memory import selectors
from memory.engine.schema import Schema
from memory.engine.tree import Change
from memory.models import OpRecord, TenantStaff

SPECIAL_TIER = "special"
SPECIAL_PERM = "memory.view_special_tier"
MASK = "•••• (special tier)"


def sees_special(user) -> bool:
    return bool(user.has_perm(SPECIAL_PERM))


def granted_tenants(user):
    """Ids of the tenants ``user`` may see in the admin, as a subquery; None for every tenant."""
    if user.is_superuser:
        return None
    return TenantStaff.objects.filter(user_id=user.pk).values("tenant_id")


def is_special(schema: Schema, path: str) -> bool:
    """Is ``path``'s value shown only with the permission: a special-tier leaf, or not a leaf of
    ``schema`` at all (what it was meant for cannot be told)?"""
    leaf = schema.leaf(path) if path else None
    return leaf is None or leaf.tier == SPECIAL_TIER


def masked_tree(tree: dict, schema: Schema) -> dict:
    """``tree`` (path -> value) with every special-tier (or unknown) leaf's value replaced by the mask."""
    return {
        path: (MASK if value is not None and is_special(schema, path) else value)
        for path, value in tree.items()
    }


def record_is_special(record: OpRecord) -> bool:
    """Does the record touch a special-tier leaf, or a path of no leaf (a parse error's raw line)? An op
    a schema migration held or declined does whatever its leaf: it crossed the special tier's border."""
    if not record.path and record.op_type == "NO_OP":
        return False
    held = (OpRecord.Status.PENDING_REVIEW, OpRecord.Status.DECLINED)
    if record.schema_migration_id is not None and record.status in held:
        return True
    return is_special(selectors.subject_schema(record.subject), record.path)


MASKED_RECORD_FIELDS = ("old_value", "new_value", "source_text", "detail")


def masked_record(record: OpRecord) -> OpRecord:
    """The record as a user without the special-tier permission sees it (an unsaved copy when masked)."""
    if not record_is_special(record):
        return record
    shown = copy.copy(record)
    for name in MASKED_RECORD_FIELDS:
        if getattr(shown, name):
            setattr(shown, name, MASK)
    return shown


def masked_changes(changes: tuple[Change, ...], schema: Schema) -> list[Change]:
    """A diff with the old and new values of special-tier leaves masked (the change itself shows)."""
    return [
        replace(c, old=None if c.old is None else MASK, new=None if c.new is None else MASK)
        if is_special(schema, c.path)
        else c
        for c in changes
    ]


class TenantScopedAdmin(admin.ModelAdmin):
    """A ModelAdmin whose rows are limited to the user's granted tenants."""

    tenant_lookup = "tenant"  # from the model to its tenant ("" for the Tenant model itself)

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        tenants = granted_tenants(request.user)
        if tenants is None:
            return qs
        field = f"{self.tenant_lookup}__in" if self.tenant_lookup else "pk__in"
        return qs.filter(**{field: tenants})


class NoAddAdmin:
    """Mixin (before the ModelAdmin) for rows only the services or the API create."""

    def has_add_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(NoAddAdmin):
    """Mixin (before the ModelAdmin) for audit records and logs that only the services write."""

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
