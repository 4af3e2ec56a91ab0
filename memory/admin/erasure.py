"""Admin deletes of subjects and tenants erase through the service (Django's cascade would leave no
tombstone, and vectors and caches behind); while the vectors' purge cannot be queued, nothing is erased."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.admin.actions import delete_selected
from django.http import HttpResponseRedirect

from memory.models import Subject, Tenant
from memory.services import ServiceError
from memory.services.subjects import subject_erase
from personatree_site.ops.readiness import erasure_broker_problem

logger = logging.getLogger("personatree.admin")

ERASED_PARTS = "its messages, chunks, versions and op log, and its evidence vectors; a tombstone is kept"


def erased_by(request) -> str:
    return f"admin:{request.user.get_username()}"


def erase_subjects(request, subjects) -> int:
    """Erase each subject through the service; one already erased meanwhile is skipped."""
    done = 0
    for subject in subjects:
        try:
            subject_erase(subject=subject, erased_by=erased_by(request))
        except ServiceError as exc:  # erased by someone else between the list and the click
            logger.info("admin erase of subject %s skipped: %s", subject.pk, exc.message)
            continue
        done += 1
    return done


def refused_for_broker(modeladmin, request) -> bool:
    """Tell the user and return True when an erasure cannot queue its vector purge now."""
    problem = erasure_broker_problem()
    if problem is None:
        return False
    modeladmin.message_user(
        request,
        f"Nothing was erased: the task queue that purges evidence vectors is unavailable ({problem}). "
        "Try again when it is back.",
        messages.ERROR,
    )
    return True


def erase_selected(modeladmin, request, queryset):
    """Django's "delete selected" (confirmation page, permission checks, deletion log), asking
    first whether the vectors' purge can be queued; the delete itself is ``delete_queryset``."""
    if request.POST.get("post") and refused_for_broker(modeladmin, request):
        return None
    return delete_selected(modeladmin, request, queryset)


def erase_tenants(request, tenants) -> None:
    """Erase each tenant's subjects through the service, then delete the tenant (its API keys and
    tombstones go with it by cascade)."""
    for tenant in tenants:
        subjects = list(Subject.objects.filter(tenant=tenant).select_related("tenant"))
        erased = erase_subjects(request, subjects)
        Tenant.objects.filter(pk=tenant.pk).delete()
        logger.info(
            "tenant %s deleted by %s after erasing %d subject(s)", tenant.pk, erased_by(request), erased
        )


def deleted_summary(obj) -> str:
    """One line of the confirmation page: what deleting ``obj`` (a subject or a tenant) does."""
    if isinstance(obj, Tenant):
        n = Subject.objects.filter(tenant=obj).count()
        return (
            f"Tenant {obj}: its {n} subject(s) each erased with {ERASED_PARTS}; "
            "then its API keys and tombstones deleted"
        )
    return f"Subject {obj}: erased with {ERASED_PARTS}"


class ErasingDeleteMixin:
    """For the ModelAdmin of :class:`Subject` and of :class:`Tenant`: every delete path erases."""

    model: type

    def erase(self, request, objs) -> None:
        if self.model is Tenant:
            erase_tenants(request, objs)
        else:
            erase_subjects(request, objs)

    def delete_model(self, request, obj):
        self.erase(request, [obj])

    def delete_queryset(self, request, queryset):
        self.erase(request, list(queryset))

    def delete_view(self, request, object_id, extra_context=None):
        if request.method == "POST" and refused_for_broker(self, request):
            return HttpResponseRedirect(request.path)
        return super().delete_view(request, object_id, extra_context)

    def get_actions(self, request):
        actions = super().get_actions(request)
        if "delete_selected" in actions:  # present only for users who may delete
            description = "Erase selected %(verbose_name_plural)s"
            actions["delete_selected"] = (erase_selected, "delete_selected", description)
        return actions

    def get_deleted_objects(self, objs, request):
        """What the confirmation page lists. The erase service removes the related rows itself
        (versions and chunks the admin may not delete one by one), so only the permission to
        delete these objects (and subjects) is needed."""
        objs = list(objs)
        perms_needed = set()
        for model in {self.model, Subject}:
            registered = self.admin_site.is_registered(model)
            admin = self.admin_site.get_model_admin(model) if registered else None
            if admin is None or not admin.has_delete_permission(request):
                perms_needed.add(str(model._meta.verbose_name))
        listed = [deleted_summary(obj) for obj in objs]
        return listed, {str(self.model._meta.verbose_name_plural): len(objs)}, perms_needed, []
