"""Webhook endpoints (registered through the API; here never their secret, switched on or off through
the audited service) and their delivery log (docs/WEBHOOKS.md)."""

from __future__ import annotations

from django.contrib import admin, messages

from memory.admin.access import NoAddAdmin, ReadOnlyAdmin, TenantScopedAdmin
from memory.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from memory.services.tree import Actor
from memory.services.webhooks import webhook_endpoint_delete, webhook_endpoint_update


def _set_active(active: bool, name: str, description: str):
    """The list action switching the selected endpoints on (``active``) or off, each through the service."""

    def action(modeladmin, request, queryset):
        changed = 0
        for endpoint in queryset.exclude(is_active=active):
            webhook_endpoint_update(endpoint=endpoint, actor=Actor.for_admin(request.user), is_active=active)
            changed += 1
        modeladmin.message_user(request, f"{name.capitalize()}d {changed} endpoint(s).", messages.SUCCESS)

    action.__name__ = name
    return admin.action(description=description, permissions=["change"])(action)


activate = _set_active(True, "activate", "Activate selected endpoints")
deactivate = _set_active(False, "deactivate", "Deactivate selected endpoints (nothing more is sent to them)")


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(NoAddAdmin, TenantScopedAdmin):
    list_display = ("url", "tenant", "event_types", "is_active", "created_at")
    list_filter = ("is_active", ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("url", "description", "tenant__name")
    fields = (
        "public_id",
        "tenant",
        "url",
        "event_types",
        "is_active",
        "description",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    actions = [activate, deactivate]

    def delete_model(self, request, obj):
        webhook_endpoint_delete(endpoint=obj, actor=Actor.for_admin(request.user))

    def delete_queryset(self, request, queryset):
        for endpoint in queryset:
            self.delete_model(request, endpoint)


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = ("number", "status_code", "error", "duration_ms", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin, TenantScopedAdmin):
    tenant_lookup = "endpoint__tenant"
    list_display = (
        "event_id",
        "event_type",
        "endpoint",
        "status",
        "attempts",
        "last_status_code",
        "created_at",
    )
    list_filter = ("status", "event_type", ("endpoint__tenant", admin.RelatedOnlyFieldListFilter))
    list_select_related = ("endpoint__tenant",)
    search_fields = ("=event_id", "=subject_key")
    fields = (
        "event_id",
        "endpoint",
        "event_type",
        "subject_key",
        "payload",
        "status",
        "attempts",
        "last_status_code",
        "last_error",
        "created_at",
        "finished_at",
    )
    readonly_fields = fields
    inlines = [WebhookAttemptInline]
