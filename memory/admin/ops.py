"""The op log, with bulk approve / decline of held ops (decline asks why)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.template.response import TemplateResponse
from django.utils.html import format_html

from memory.admin.access import (
    ReadOnlyAdmin,
    TenantScopedAdmin,
    masked_record,
    record_is_special,
    sees_special,
)
from memory.models import OpRecord
from memory.services import ServiceError
from memory.services.governance import ops_review_approve, ops_review_decline


class DeclineForm(forms.Form):
    note = forms.CharField(label="Why are these ops declined?", widget=forms.Textarea(attrs={"rows": 3}))


def decidable(modeladmin, request, queryset):
    """The held ops of ``queryset`` that ``request.user`` may decide: without the special-tier
    permission, those on special-tier leaves are left out (with a message)."""
    held = list(queryset.filter(status=OpRecord.Status.PENDING_REVIEW).select_related("subject"))
    if sees_special(request.user):
        return held
    allowed = [r for r in held if not record_is_special(r)]
    if len(allowed) < len(held):
        modeladmin.message_user(
            request,
            f"{len(held) - len(allowed)} op(s) on special-tier leaves left undecided: "
            "deciding them needs the permission to see special-tier values.",
            messages.WARNING,
        )
    return allowed


@admin.action(description="Approve selected ops (apply on top of the current tree)", permissions=["review"])
def approve_ops(modeladmin, request, queryset):
    ids = [r.pk for r in decidable(modeladmin, request, queryset)]
    if not ids:
        modeladmin.message_user(request, "None of the selected ops is waiting for review.", messages.WARNING)
        return None
    outcomes = ops_review_approve(op_ids=ids, user=request.user, note="approved in the admin")
    approved = sum(len(o.approved) for o in outcomes)
    refused = sum(len(o.rejected) for o in outcomes)
    modeladmin.message_user(request, f"Approved {approved} op(s).", messages.SUCCESS)
    if refused:
        modeladmin.message_user(
            request, f"{refused} op(s) no longer fit the current tree and were rejected.", messages.WARNING
        )
    return None


@admin.action(description="Decline selected ops…", permissions=["review"])
def decline_ops(modeladmin, request, queryset):
    queryset = queryset.filter(pk__in=[r.pk for r in decidable(modeladmin, request, queryset)])
    form = DeclineForm(request.POST if "confirm_decline" in request.POST else None)
    if "confirm_decline" in request.POST and form.is_valid():
        try:
            count = ops_review_decline(
                op_ids=list(queryset.values_list("pk", flat=True)),
                user=request.user,
                note=form.cleaned_data["note"],
            )
        except ServiceError as exc:
            modeladmin.message_user(request, exc.message, messages.ERROR)
            return None
        modeladmin.message_user(request, f"Declined {count} op(s).", messages.SUCCESS)
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": "Decline ops",
        "opts": modeladmin.model._meta,
        "queryset": queryset.select_related("subject"),
        "form": form,
        "action_checkbox_name": ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/memory/decline_confirm.html", context)


def text_column(name: str, description: str, *, masked: bool = False, blank: str | None = None):
    """A list column: the record's text field ``name`` on one line (as :func:`masked_record` shows
    it when ``masked``); ``blank`` stands for an empty or missing value when given."""

    def column(self, obj):
        value = getattr(masked_record(obj) if masked else obj, name)
        return blank if blank is not None and not value else one_line(value)

    return admin.display(description=description)(column)


def one_line(text):
    """One line, cut with an ellipsis by the list's style; the whole text on hover."""
    if text is None:
        return "—"
    return format_html('<span class="pt-cut" title="{}">{}</span>', text, text)


class OpRecordAdmin(ReadOnlyAdmin, TenantScopedAdmin):  # decisions: the approve / decline actions
    tenant_lookup = "subject__tenant"
    # One line per op at 1280 px: long texts are cut (whole on hover, and on the record's page).
    list_display: tuple[str, ...] = (
        "when",
        "subject",
        "op_type",
        "leaf",
        "short_old",
        "short_new",
        "short_source",
        "outcome",
        "actor",
        "version_number",
    )
    list_display_links: tuple[str, ...] = ("when",)
    list_filter: tuple = (
        "status",
        "reason_code",
        "op_type",
        "actor_kind",
        "model_id",
        ("subject__tenant", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("path", "actor_name", "model_id", "subject__external_id", "source_text")
    list_select_related: tuple[str, ...] = ("subject", "subject__tenant", "version")
    readonly_fields = [f.name for f in OpRecord._meta.fields]
    actions = [approve_ops, decline_ops]
    date_hierarchy: str | None = "created_at"
    list_per_page = 100

    def action_checkbox(self, obj):
        """Django's row checkbox, written directly (its widget template per row is slow)."""
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" '
            'aria-label="Select this object for an action - {}">',
            ACTION_CHECKBOX_NAME,
            obj.pk,
            obj,
        )

    @admin.display(description="when", ordering="created_at")
    def when(self, obj):
        return obj.created_at.strftime("%m-%d %H:%M")

    @admin.display(description="leaf", ordering="path")
    def leaf(self, obj):
        return one_line(obj.path)

    @admin.display(description="outcome", ordering="status")
    def outcome(self, obj):
        return one_line(f"{obj.status} {obj.reason_code}".strip())

    short_old, masked_old = text_column("old_value", "old"), text_column("old_value", "old", masked=True)
    short_new, masked_new = text_column("new_value", "new"), text_column("new_value", "new", masked=True)
    short_source = text_column("source_text", "from the user's words", blank="")
    masked_source = text_column("source_text", "from the user's words", masked=True, blank="")
    MASKED_COLUMNS = {"short_old": "masked_old", "short_new": "masked_new", "short_source": "masked_source"}

    def get_list_display(self, request):
        columns = super().get_list_display(request)
        if sees_special(request.user):
            return columns
        return [self.MASKED_COLUMNS.get(c, c) for c in columns]

    def get_search_fields(self, request):
        fields = super().get_search_fields(request)
        return fields if sees_special(request.user) else [f for f in fields if f != "source_text"]

    def get_object(self, request, object_id, from_field=None):
        record = super().get_object(request, object_id, from_field)
        if record is None or sees_special(request.user):
            return record
        return masked_record(record)

    @admin.display(description="actor")
    def actor(self, obj):
        if obj.actor_kind == "model":
            return one_line(f"model {obj.model_id} {obj.model_version} / prompt {obj.prompt_version}".strip())
        return one_line(f"{obj.actor_kind} {obj.actor_name}")

    @admin.display(description="version", ordering="version__number")
    def version_number(self, obj):
        return f"v{obj.version.number}" if obj.version_id else f"(on v{obj.base_version})"

    def lookup_allowed(self, lookup, value, request=None):
        # The subject page links here filtered to one subject, a leaf's history to one path.
        return lookup in ("subject__id__exact", "path", "path__exact") or super().lookup_allowed(
            lookup, value, request
        )

    def has_review_permission(self, request):
        return request.user.has_perm("memory.change_oprecord")


admin.site.register(OpRecord, OpRecordAdmin)
