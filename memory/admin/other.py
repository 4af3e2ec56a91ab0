"""Tenants, API keys, chunks (failed ones re-queueable), tombstones and staff grants.

Deleting a tenant erases each of its subjects first (:mod:`memory.admin.erasure`). Staff see only
their granted tenants' rows; only superusers manage the grants (:mod:`memory.admin.access`)."""

from __future__ import annotations

from django.contrib import admin, messages

from memory.admin.access import TenantScopedAdmin
from memory.admin.erasure import ErasingDeleteMixin
from memory.models import ApiKey, Chunk, Tenant, TenantStaff, Tombstone
from memory.services.chunk_errors import safe_chunk_error
from memory.services.ingest import chunks_requeue
from memory.services.subjects import api_keys_revoke


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


@admin.action(description="Revoke selected keys")
def revoke_keys(modeladmin, request, queryset):
    count = api_keys_revoke(keys=queryset)
    modeladmin.message_user(request, f"Revoked {count} key(s).", messages.SUCCESS)


@admin.register(ApiKey)
class ApiKeyAdmin(TenantScopedAdmin):
    """Keys are created with ``manage.py create_tenant`` (the raw key is shown once there)."""

    list_display = ("prefix", "tenant", "name", "scopes", "created_at", "revoked_at")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("prefix", "name", "tenant__name")
    readonly_fields = ("tenant", "prefix", "scopes", "created_at", "last_used_at", "revoked_at")
    fields = ("tenant", "name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at")
    actions = [revoke_keys]

    def has_add_permission(self, request):
        return False


def requeue(chunk_ids: list[int]) -> int:
    """Hand failed chunks back to ingestion with a fresh attempt budget (the one re-queue service,
    as the API's ``POST .../chunks/<id>/requeue``); the dispatcher is asked for after commit."""
    return chunks_requeue(chunk_ids=chunk_ids)


@admin.action(description="Re-queue selected failed chunks")
def requeue_failed(modeladmin, request, queryset):
    ids = list(queryset.filter(status=Chunk.Status.FAILED).values_list("pk", flat=True))
    if not ids:
        modeladmin.message_user(request, "None of the selected chunks has failed.", messages.WARNING)
        return
    count = requeue(ids)
    modeladmin.message_user(request, f"Re-queued {count} chunk(s).", messages.SUCCESS)


@admin.register(Chunk)
class ChunkAdmin(TenantScopedAdmin):
    tenant_lookup = "subject__tenant"
    list_display = (
        "id",
        "subject",
        "start_seq",
        "end_seq",
        "status",
        "attempts",
        "short_error",
        "produced_version",
    )
    list_filter = ("status", ("subject__tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("subject__external_id", "chunk_key", "last_error")
    list_select_related = ("subject", "subject__tenant", "produced_version")
    # last_error only through short_error: rows written before it was masked may quote user text.
    exclude = ("last_error",)
    readonly_fields = [f.name for f in Chunk._meta.fields if f.name != "last_error"] + ["short_error"]
    actions = [requeue_failed]

    @admin.display(description="last error")
    def short_error(self, obj):
        return safe_chunk_error(obj.last_error)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Tombstone)
class TombstoneAdmin(TenantScopedAdmin):
    list_display = ("tenant", "external_id_hash", "counts", "erased_by", "erased_at")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter),)
    readonly_fields = ("tenant", "external_id_hash", "counts", "erased_by", "erased_at")

    def has_add_permission(self, request):
        return False


@admin.register(TenantStaff)
class TenantStaffAdmin(admin.ModelAdmin):
    """Which tenants each staff user sees. Superusers only: a staff user who could add grants
    would grant themselves every tenant."""

    list_display = ("user", "tenant", "created_at")
    list_filter = ("tenant",)
    search_fields = ("user__username", "tenant__name")

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser
