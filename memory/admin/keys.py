"""API keys (revocable here; created with ``manage.py create_tenant`` or the API, which show the raw
key once) and the audit of key and webhook changes."""

from __future__ import annotations

from django.contrib import admin, messages

from memory.admin.access import NoAddAdmin, ReadOnlyAdmin, TenantScopedAdmin
from memory.models import ApiKey, AuditEvent
from memory.services.keys import api_keys_revoke
from memory.services.tree import Actor


@admin.action(description="Revoke selected keys")
def revoke_keys(modeladmin, request, queryset):
    count = api_keys_revoke(keys=queryset, actor=Actor.for_admin(request.user))
    modeladmin.message_user(request, f"Revoked {count} key(s).", messages.SUCCESS)


@admin.register(ApiKey)
class ApiKeyAdmin(NoAddAdmin, TenantScopedAdmin):
    list_display = ("prefix", "tenant", "name", "scopes", "created_at", "revoked_at")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("prefix", "name", "tenant__name")
    readonly_fields = ("tenant", "prefix", "scopes", "created_at", "last_used_at", "revoked_at")
    fields = ("tenant", "name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at")
    actions = [revoke_keys]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin, TenantScopedAdmin):
    list_display = ("created_at", "tenant", "action", "object_id", "actor_kind", "actor_name")
    list_filter = ("action", ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("object_id", "actor_name")
    readonly_fields = ("tenant", "action", "object_id", "actor_kind", "actor_name", "detail", "created_at")
