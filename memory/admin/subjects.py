"""Subject pages: readable tree with inline leaf edit, version history and diff, revert with
confirmation; deleting a subject erases it (:mod:`memory.admin.erasure`)."""

from __future__ import annotations

import copy

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from memory import selectors
from memory.admin.access import (
    SPECIAL_TIER,
    NoAddAdmin,
    ReadOnlyAdmin,
    TenantScopedAdmin,
    is_special,
    masked_changes,
    masked_tree,
    sees_special,
)
from memory.admin.erasure import ErasingDeleteMixin
from memory.admin.tree_view import build_nodes
from memory.engine.tree import diff
from memory.models import OpRecord, Subject, TreeVersion
from memory.services import ServiceError, VersionConflict
from memory.services.tree import Actor, leaf_delete, leaf_edit, tree_revert


class LeafForm(forms.Form):
    path = forms.CharField(max_length=300)
    value = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    base_version = forms.IntegerField(min_value=0)
    action = forms.ChoiceField(choices=[("save", "save"), ("delete", "delete")])


@admin.register(Subject)
class SubjectAdmin(ErasingDeleteMixin, NoAddAdmin, TenantScopedAdmin):  # the API creates subjects
    list_display = ("external_id", "tenant", "head_version", "schema_id", "schema_version", "updated_at")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("external_id", "tenant__name")
    list_select_related = ("tenant",)
    ordering = ("tenant__name", "external_id")

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<int:object_id>/leaf/", view(self.leaf_view), name="memory_subject_leaf"),
            path("<int:object_id>/history/", view(self.history_diff_view), name="memory_subject_versions"),
            path(
                "<int:object_id>/revert/<int:number>/", view(self.revert_view), name="memory_subject_revert"
            ),
            *super().get_urls(),
        ]

    def _subject(self, request, object_id) -> Subject:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return get_object_or_404(self.get_queryset(request).select_related("tenant", "head"), pk=object_id)

    @staticmethod
    def _shown(request, subject, changes):
        """A diff as ``request.user`` may see it (special-tier values masked without the permission)."""
        if sees_special(request.user):
            return changes
        return masked_changes(changes, selectors.subject_schema(subject))

    def _context(self, request, subject, title):
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "subject": subject,
            "title": title,
            "has_change": self.has_change_permission(request, subject),
        }

    def change_view(self, request, object_id, form_url="", extra_context=None):
        subject = self._subject(request, object_id)
        schema = selectors.subject_schema(subject)
        tree = selectors.tree_current(subject)
        context = self._context(request, subject, f"Memory of {subject}")
        mask = not sees_special(request.user)
        context.update(
            nodes=build_nodes(tree, schema, selectors.leaf_last_changes(subject=subject), mask_special=mask),
            leaf_count=len(tree),
            empty_paths=[
                leaf.path
                for leaf in schema.leaves
                if leaf.path not in tree and not (mask and leaf.tier == SPECIAL_TIER)
            ],
            pending=subject.op_records.filter(status=OpRecord.Status.PENDING_REVIEW).count(),
        )
        return TemplateResponse(request, "admin/memory/subject_tree.html", context)

    def leaf_view(self, request, object_id):
        subject = self._subject(request, object_id)
        if request.method != "POST" or not self.has_change_permission(request, subject):
            raise PermissionDenied
        back = reverse("admin:memory_subject_change", args=[subject.pk])
        form = LeafForm(request.POST)
        if not form.is_valid():
            messages.error(request, f"Invalid edit: {form.errors.as_text()}")
            return HttpResponseRedirect(back)
        data = form.cleaned_data
        if is_special(selectors.subject_schema(subject), data["path"]) and not sees_special(request.user):
            raise PermissionDenied  # a value one may not see is not edited blind either
        write = {"subject": subject, "path": data["path"], "base_version": data["base_version"]}
        try:
            if data["action"] == "delete":
                outcome = leaf_delete(actor=Actor.for_admin(request.user), **write)
            else:
                outcome = leaf_edit(actor=Actor.for_admin(request.user), value=data["value"], **write)
        except VersionConflict as exc:
            messages.error(
                request, f"The tree changed meanwhile (now v{exc.current_version}); nothing saved."
            )
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            where = data["path"]
            if outcome.rejected:
                record = outcome.rejected[0]
                messages.error(request, f"Rejected {where}: {record.reason_code} — {record.detail}")
            elif outcome.pending_review:
                messages.warning(request, f"{where} is waiting for review.")
            elif outcome.version is not None:
                messages.success(request, f"Saved {where} as v{outcome.version.number}.")
            else:
                messages.info(request, f"{where}: no change.")
        return HttpResponseRedirect(back)

    def history_diff_view(self, request, object_id):
        subject = self._subject(request, object_id)
        versions = list(selectors.versions_list(subject=subject).select_related("chunk")[:200])
        head = subject.head_version

        def number(name, default):
            try:
                return max(0, min(int(request.GET.get(name, default)), head))
            except (TypeError, ValueError):
                return default

        b = number("b", head)
        a = number("a", max(b - 1, 0))
        _, tree_a = selectors.tree_at(subject, a)
        _, tree_b = selectors.tree_at(subject, b)
        context = self._context(request, subject, f"Versions of {subject}")
        context.update(
            versions=versions, a=a, b=b, changes=self._shown(request, subject, diff(tree_a, tree_b))
        )
        return TemplateResponse(request, "admin/memory/subject_versions.html", context)

    def revert_view(self, request, object_id, number):
        subject = self._subject(request, object_id)
        if not self.has_change_permission(request, subject):
            raise PermissionDenied
        if number > subject.head_version:
            messages.error(request, f"Version {number} does not exist.")
            return HttpResponseRedirect(reverse("admin:memory_subject_versions", args=[subject.pk]))
        if request.method == "POST":
            try:
                outcome = tree_revert(
                    subject=subject,
                    to_version=number,
                    actor=Actor.for_admin(request.user),
                    base_version=int(request.POST.get("base_version", -1)),
                )
            except (VersionConflict, ServiceError, ValueError) as exc:
                messages.error(request, f"Not reverted: {getattr(exc, 'message', exc)}")
            else:
                if outcome.version is None:
                    messages.info(request, f"v{number} already equals the current tree; nothing to do.")
                else:
                    messages.success(
                        request, f"Reverted to v{number} as new version v{outcome.version.number}."
                    )
            return HttpResponseRedirect(reverse("admin:memory_subject_change", args=[subject.pk]))
        _, target = selectors.tree_at(subject, number)
        context = self._context(request, subject, f"Revert {subject} to v{number}?")
        changes = diff(selectors.tree_current(subject), target)
        context.update(number=number, changes=self._shown(request, subject, changes))
        return TemplateResponse(request, "admin/memory/subject_revert_confirm.html", context)


@admin.register(TreeVersion)
class TreeVersionAdmin(ReadOnlyAdmin, TenantScopedAdmin):
    tenant_lookup = "subject__tenant"
    list_display = ("subject", "number", "created_by", "chunk", "note", "created_at")
    list_filter = ("created_by", ("subject__tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("subject__external_id",)
    list_select_related = ("subject", "subject__tenant", "chunk")
    # The whole tree whichever way the row stores it (``tree`` and ``delta`` are storage: a delta
    # would show special-tier values unmasked).
    fields = readonly_fields = [
        *(f.name for f in TreeVersion._meta.fields if f.name not in ("tree", "delta")),
        "stored_as",
        "snapshot",
    ]

    @admin.display(description="stored as")
    def stored_as(self, version) -> str:
        return "checkpoint (whole tree)" if version.is_checkpoint else "delta against the previous version"

    def get_object(self, request, object_id, from_field=None):
        version = super().get_object(request, object_id, from_field)
        if version is None or sees_special(request.user):
            return version
        shown = copy.copy(version)  # never saved: versions are read-only here
        # ``tree`` shown in place of the whole tree (``snapshot``); ``stored_as`` still reads ``delta``.
        shown.tree = masked_tree(version.snapshot or {}, selectors.subject_schema(version.subject))
        return shown
