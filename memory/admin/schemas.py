"""Tenant schemas: list, read-only page, and an add form storing through the API's service (its
refusals shown in the form). A stored version is never edited or deleted: subjects are pinned to it."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils.html import format_html

from memory.admin.access import TenantScopedAdmin, granted_tenants
from memory.models import Subject, Tenant, TenantSchema
from memory.services import ServiceError
from memory.services.schemas import schema_upload


class TenantSchemaAddForm(forms.ModelForm):
    document_json = forms.CharField(
        label="Document",
        widget=forms.Textarea(attrs={"rows": 30, "cols": 100, "spellcheck": "false"}),
        help_text="The engine schema document as JSON (docs/SCHEMAS.md): id, version, and a tree or leaves.",
    )

    #: Who uploads (set by the admin for the request).
    uploaded_by = ""

    class Meta:
        model = TenantSchema
        fields = ("tenant",)

    def clean(self):
        cleaned = super().clean()
        tenant, raw = cleaned.get("tenant"), cleaned.get("document_json")
        if tenant is None or raw is None:
            return cleaned
        try:
            document = json.loads(raw)
        except ValueError as exc:
            raise ValidationError({"document_json": f"Not JSON: {exc}"}) from exc
        try:
            row, created = schema_upload(tenant=tenant, document=document, created_by=self.uploaded_by)
        except ServiceError as exc:
            raise ValidationError({"document_json": exc.message}) from exc
        if not created:
            raise ValidationError(
                {"document_json": f"{row.schema_id} v{row.version} is already stored with this document."}
            )
        self.instance = row
        return cleaned


@admin.register(TenantSchema)
class TenantSchemaAdmin(TenantScopedAdmin):
    list_display = ("schema_id", "version", "tenant", "leaf_count", "subjects_pinned", "created_at")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter),)
    list_select_related = ("tenant",)
    search_fields = ("schema_id", "tenant__name")
    ordering = ("tenant__name", "schema_id", "version")
    form = TenantSchemaAddForm
    shown = (
        "tenant",
        "schema_id",
        "version",
        "leaf_count",
        "subjects_pinned",
        "digest",
        "created_by",
        "created_at",
        "pretty_document",
    )

    def get_queryset(self, request):
        pinned = (
            Subject.objects.filter(
                tenant_id=OuterRef("tenant_id"),
                schema_id=OuterRef("schema_id"),
                schema_version=OuterRef("version"),
            )
            .order_by()
            .values("tenant_id")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(pinned=Coalesce(Subquery(pinned, output_field=IntegerField()), 0))
        )

    @admin.display(description="subjects pinned", ordering="pinned")
    def subjects_pinned(self, obj) -> int:
        return getattr(obj, "pinned", 0)

    @admin.display(description="document")
    def pretty_document(self, obj) -> str:
        return format_html(
            '<pre style="white-space: pre-wrap">{}</pre>',
            json.dumps(obj.document, indent=2, ensure_ascii=False),
        )

    def get_fields(self, request, obj=None):
        return ("tenant", "document_json") if obj is None else self.shown

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.shown

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is None:
            form.uploaded_by = f"admin:{request.user.get_username()}"[:200]
        return form

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "tenant":
            tenants = granted_tenants(request.user)
            qs = Tenant.objects.order_by("name")
            kwargs["queryset"] = qs if tenants is None else qs.filter(pk__in=tenants)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_form(self, request, form, change):
        return form.instance  # stored by the form's clean (schema_upload): nothing more to save

    def save_model(self, request, obj, form, change):
        pass

    def save_related(self, request, form, formsets, change):
        pass

    def has_change_permission(self, request, obj=None):
        return False  # versions never change: a change is the next version

    def has_delete_permission(self, request, obj=None):
        return False  # subjects are pinned to it
