"""Schema migrations, read-only (run with ``manage.py schema_migrate`` or the API): mapping, source and
target versions, status and counts."""

from __future__ import annotations

from django.contrib import admin

from memory.admin.access import ReadOnlyAdmin, TenantScopedAdmin
from memory.models import SchemaMigration
from memory.services.schema_migrations import COUNTS


def _count(name: str):
    def shown(obj):
        return obj.counts.get(name, 0)

    shown.__name__ = name
    return admin.display(description=name.replace("_", " "))(shown)


@admin.register(SchemaMigration)
class SchemaMigrationAdmin(ReadOnlyAdmin, TenantScopedAdmin):
    list_display = (
        "mapping_id",
        "tenant",
        "source",
        "target",
        "status",
        *map(_count, COUNTS),
        "remaining",
        "updated_at",
    )
    list_filter = ("status", ("tenant", admin.RelatedOnlyFieldListFilter))
    list_select_related = ("tenant",)
    search_fields = ("mapping_id", "source_id", "tenant__name")
    readonly_fields = [f.name for f in SchemaMigration._meta.fields]

    @admin.display(description="source")
    def source(self, obj):
        return f"{obj.source_id} v{obj.source_version}"

    @admin.display(description="target")
    def target(self, obj):
        return f"{obj.target_id} v{obj.target_version}"

    @admin.display(description="remaining")
    def remaining(self, obj):
        return obj.counts.get("remaining", "")
