"""Chunks: their status and masked last error; failed ones re-queueable."""

from __future__ import annotations

from django.contrib import admin, messages

from memory.admin.access import NoAddAdmin, TenantScopedAdmin
from memory.models import Chunk
from memory.services.chunk_errors import safe_chunk_error
from memory.services.ingest import chunks_requeue


@admin.action(description="Re-queue selected failed chunks")
def requeue_failed(modeladmin, request, queryset):
    ids = list(queryset.filter(status=Chunk.Status.FAILED).values_list("pk", flat=True))
    if not ids:
        modeladmin.message_user(request, "None of the selected chunks has failed.", messages.WARNING)
        return
    count = chunks_requeue(chunk_ids=ids)
    modeladmin.message_user(request, f"Re-queued {count} chunk(s).", messages.SUCCESS)


@admin.register(Chunk)
class ChunkAdmin(NoAddAdmin, TenantScopedAdmin):
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

    def has_delete_permission(self, request, obj=None):
        return False
