"""The review queue, oldest first, filtered by tenant, reason, tier and model (docs/MODERATION.md)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.http import urlencode
from django.utils.timesince import timesince

from memory import selectors
from memory.admin.access import MASK, granted_tenants, is_special, record_is_special, sees_special
from memory.admin.ops import OpRecordAdmin, one_line
from memory.admin.review_page import leaf_tier, reason_key, review_context
from memory.models import OpRecord, ReviewItem, Subject
from memory.services import ServiceError, VersionConflict
from memory.services.governance import op_review_approve, ops_review_decline

FILTERS = "_changelist_filters"


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[(d, d) for d in ("approve", "edit", "decline")])
    base_version = forms.IntegerField(min_value=0)
    path = forms.CharField(max_length=300, required=False)
    value = forms.CharField(required=False, max_length=5000)
    note = forms.CharField(required=False, max_length=2000)


def filter_reason(queryset, value):
    if value == "special":
        return queryset.filter(detail__startswith="special-tier")
    if value == "mass":
        return queryset.exclude(detail__startswith="special-tier")
    return queryset


def filter_tier(queryset, value):
    """Held ops on leaves of tier ``value`` in their subject's schema (the schemas in use)."""
    if not value:
        return queryset
    pins = Subject.objects.filter(pk__in=queryset.values("subject_id")).values_list(
        "tenant_id", "schema_id", "schema_version"
    )
    paths = {
        leaf.path for pin in set(pins) for leaf in selectors.schema_get(*pin).leaves if leaf.tier == value
    }
    return queryset.filter(path__in=paths)


# The queue's filters a "next item" follows: (query parameter, how it narrows the queryset).
NEXT_FILTERS = {
    "subject__tenant__id__exact": lambda qs, v: qs.filter(subject__tenant_id=v),
    "subject__id__exact": lambda qs, v: qs.filter(subject_id=v),
    "model_id": lambda qs, v: qs.filter(model_id=v),
    "op_type": lambda qs, v: qs.filter(op_type=v),
    "reason": filter_reason,
    "tier": filter_tier,
}


class _QueueFilter(admin.SimpleListFilter):
    options: list[tuple[str, str]] = []

    def lookups(self, request, model_admin):
        return self.options

    def queryset(self, request, queryset):
        return NEXT_FILTERS[self.parameter_name](queryset, self.value())


class ReasonFilter(_QueueFilter):
    title = parameter_name = "reason"
    options = [("special", "special-tier leaf"), ("mass", "mass delete")]


class TierFilter(_QueueFilter):
    title = parameter_name = "tier"
    options = [(t, t) for t in ("normal", "personal", "special")]


@admin.register(ReviewItem)
class ReviewQueueAdmin(OpRecordAdmin):
    """Only what waits for a moderator, oldest first."""

    list_display = ("age", "tenant", "subject_id_shown", "reason", "tier", "op_type", "path", "preview")
    list_display_links = ("age", "preview")
    list_filter = (
        ("subject__tenant", admin.RelatedOnlyFieldListFilter),
        ReasonFilter,
        TierFilter,
        "model_id",
        "op_type",
    )
    ordering = ("created_at", "id")
    list_select_related = ("subject", "subject__tenant")
    date_hierarchy = None
    list_per_page = 50
    show_full_result_count = False
    MASKED_COLUMNS = {"preview": "masked_preview"}  # OpRecordAdmin.get_list_display

    def get_queryset(self, request):
        return super().get_queryset(request).filter(status=OpRecord.Status.PENDING_REVIEW)

    def lookup_allowed(self, lookup, value, request=None):
        return lookup in NEXT_FILTERS or super().lookup_allowed(lookup, value, request)

    @admin.display(description="waiting", ordering="created_at")
    def age(self, obj):
        return timesince(obj.created_at).split(",")[0]

    @admin.display(description="tenant", ordering="subject__tenant__name")
    def tenant(self, obj):
        return obj.subject.tenant.name

    @admin.display(description="subject", ordering="subject__external_id")
    def subject_id_shown(self, obj):
        return obj.subject.external_id

    @admin.display(description="why held")
    def reason(self, obj):
        return dict(ReasonFilter.options)[reason_key(obj)]

    @admin.display(description="tier")
    def tier(self, obj):
        return leaf_tier(obj)

    @admin.display(description="proposed value")
    def preview(self, obj):
        return one_line(obj.new_value if obj.new_value is not None else "(delete)")

    @admin.display(description="proposed value")
    def masked_preview(self, obj):
        return one_line(MASK) if record_is_special(obj) else self.preview(obj)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<int:object_id>/decide/", view(self.decide_view), name="memory_reviewitem_decide"),
            *super().get_urls(),
        ]

    def _item(self, request, object_id) -> OpRecord:
        if not self.has_view_permission(request):
            raise PermissionDenied
        qs = OpRecord.objects.filter(pk__in=super().get_queryset(request).values("pk"))
        return get_object_or_404(
            qs.select_related("subject", "subject__tenant", "subject__head"), pk=object_id
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        return self._page(request, self._item(request, object_id), posted=None)

    def _page(self, request, record, posted):
        filters = request.GET.get(FILTERS) or request.POST.get(FILTERS, "")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Review: {record.path or record.op_type} of {record.subject.external_id}",
            "subject": record.subject,
            "can_decide": self._may_decide(request, record),
            "filters": filters,
            "posted": posted,
            "previous_url": self._neighbour_url(request, filters, record, before=True),
            "next_url": self._neighbour_url(request, filters, record),
            "queue_url": self._queue_url(filters),
            **review_context(record, request.user),
        }
        return TemplateResponse(request, "admin/memory/review_item.html", context)

    def _may_decide(self, request, record) -> bool:
        return (
            record.status == OpRecord.Status.PENDING_REVIEW
            and self.has_review_permission(request)
            and (sees_special(request.user) or not record_is_special(record))
        )

    def decide_view(self, request, object_id):
        record = self._item(request, object_id)
        if request.method != "POST" or not self._may_decide(request, record):
            raise PermissionDenied
        form = DecisionForm(request.POST)
        if not form.is_valid():
            messages.error(request, f"Invalid decision: {form.errors.as_text()}")
            return self._page(request, record, posted=request.POST)
        data = form.cleaned_data
        try:
            done = self._decide(request, record, data)
        except VersionConflict as exc:
            messages.error(
                request,
                f"The tree changed meanwhile (now v{exc.current_version}); nothing decided. "
                "Check the current value and decide again.",
            )
            return self._page(request, self._item(request, object_id), posted=request.POST)
        except ServiceError as exc:
            messages.error(request, exc.message)
            return self._page(request, record, posted=request.POST)
        messages.success(request, done)
        filters = request.POST.get(FILTERS, "")
        following = self._neighbour_url(request, filters, record) or self._neighbour_url(request, filters)
        return HttpResponseRedirect(following or self._queue_url(filters))

    def _decide(self, request, record, data) -> str:
        where = f"{record.path} of {record.subject.external_id}"
        if data["decision"] == "decline":
            note = data["note"].strip()
            if not note:
                raise ServiceError("Say why the op is declined.", field="note")
            if not ops_review_decline(op_ids=[record.pk], user=request.user, note=note):
                raise ServiceError("This op was already decided.", field="op_id")
            return f"Declined {where}."
        target = record.path
        value = None
        if data["decision"] == "edit":
            target = data["path"].strip() or record.path
            value = data["value"]
            schema = selectors.subject_schema(record.subject)
            if is_special(schema, target) and not sees_special(request.user):
                raise PermissionDenied
        outcome = op_review_approve(
            op_id=record.pk, user=request.user, base_version=data["base_version"], path=target, value=value
        )
        number = outcome.version.number if outcome.version is not None else record.subject.head_version
        return f"Approved {target} of {record.subject.external_id} (v{number})."

    def _filtered(self, request, filters):
        qs = self.get_queryset(request)  # pending, the granted tenants only
        for key, value in parse_qsl(filters):
            narrow = NEXT_FILTERS.get(key)
            if narrow is not None and value:
                qs = narrow(qs, value)
        return qs

    def _neighbour_url(self, request, filters, record=None, *, before=False):
        """The item after (``before``: before) ``record`` in the filtered queue; no record: the first."""
        side, order = ("lt", "-") if before else ("gt", "")
        qs = self._filtered(request, filters)
        if record is not None:
            qs = qs.filter(
                Q(**{f"created_at__{side}": record.created_at})
                | Q(created_at=record.created_at, **{f"id__{side}": record.pk})
            )
        pk = qs.order_by(f"{order}created_at", f"{order}id").values_list("pk", flat=True).first()
        return None if pk is None else self._item_url(pk, filters)

    @staticmethod
    def _item_url(pk, filters):
        url = reverse("admin:memory_reviewitem_change", args=[pk])
        return f"{url}?{urlencode({FILTERS: filters})}" if filters else url

    @staticmethod
    def _queue_url(filters):
        url = reverse("admin:memory_reviewitem_changelist")
        return f"{url}?{filters}" if filters else url


def waiting_by_tenant(user) -> list[dict]:
    """Held ops per granted tenant, most first (the admin index)."""
    qs = OpRecord.objects.filter(status=OpRecord.Status.PENDING_REVIEW)
    tenants = granted_tenants(user)
    if tenants is not None:
        qs = qs.filter(subject__tenant__in=tenants)
    return list(
        qs.values("subject__tenant_id", "subject__tenant__name")
        .annotate(waiting=Count("id"))
        .order_by("-waiting", "subject__tenant__name")
    )


admin.site.index_template = "admin/memory/index.html"  # the index shows what waits per tenant
