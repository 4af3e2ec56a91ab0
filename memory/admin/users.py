"""Users and groups: only superusers hand out permissions (Django's own pages let ``auth.change_user``
grant any, to oneself too), and nobody else changes or deletes a user with more than they hold."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group

User = get_user_model()


class SuperuserGrantsUserAdmin(UserAdmin):
    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        if request.user.is_superuser:
            return fields
        return (*fields, "is_superuser", "groups", "user_permissions")

    def has_change_permission(self, request, obj=None):
        return (obj is None or _may_manage(request.user, obj)) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return (obj is None or _may_manage(request.user, obj)) and super().has_delete_permission(request, obj)


def _may_manage(actor, user) -> bool:
    """May ``actor`` change or delete ``user`` (the page, the password)? A superuser may; anyone else
    only themselves, or a user who is not staff (whose grants they would use) and holds nothing they lack."""
    if actor.is_superuser or user.pk == actor.pk:
        return True
    return (
        not (user.is_superuser or user.is_staff) and user.get_all_permissions() <= actor.get_all_permissions()
    )


class SuperuserGrantsGroupAdmin(GroupAdmin):
    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else (*fields, "permissions")


for model, model_admin in ((User, SuperuserGrantsUserAdmin), (Group, SuperuserGrantsGroupAdmin)):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, model_admin)
