"""Tenants (deleting one erases each of its subjects first), staff grants (superusers only) and the
tombstones of erased subjects."""

from __future__ import annotations

from django.contrib import admin

from memory.admin.access import NoAddAdmin, TenantScopedAdmin
from memory.admin.erasure import ErasingDeleteMixin
from memory.models import Tenant, TenantStaff, Tombstone


@admin.register(Tenant)
class TenantAdmin(ErasingDeleteMixin, TenantScopedAdmin):
    tenant_lookup = ""
    list_display = (
        "name",
        "is_active",
        "review_special_tier",
        "mass_delete_threshold",
        "chunk_pairs",
        "gate_lenient",
    )
    search_fields = ("name",)


@admin.register(Tombstone)
class TombstoneAdmin(NoAddAdmin, TenantScopedAdmin):
    list_display = ("tenant", "external_id_hash", "counts", "erased_by", "erased_at")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter),)
    readonly_fields = ("tenant", "external_id_hash", "counts", "erased_by", "erased_at")


@admin.register(TenantStaff)
class TenantStaffAdmin(admin.ModelAdmin):
    """Which tenants each staff user sees. Superusers only: a staff user who could add grants
    would grant themselves every tenant."""

    list_display = ("user", "tenant", "created_at")
    list_filter = ("tenant",)
    search_fields = ("user__username", "tenant__name")

    def _superuser(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    has_module_permission = has_view_permission = has_add_permission = _superuser
    has_change_permission = has_delete_permission = _superuser
