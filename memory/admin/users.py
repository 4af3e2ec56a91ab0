"""Users and groups in the admin: only superusers hand out permissions.

Django's default pages let a staff user with ``auth.change_user`` or ``auth.change_group`` grant
any permission, to themselves too. Here, for users who are not superusers, ``is_superuser``,
``groups`` and ``user_permissions`` of a user and ``permissions`` of a group are read-only, and
superuser accounts (page and password) can be changed only by superusers. Nor may such a user
change or delete (page or password) another staff user (whose grants they would use), or any user
holding a permission they lack. Their own account stays theirs to edit.
"""

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
        if obj is not None and not _may_manage(request.user, obj):
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and not _may_manage(request.user, obj):
            return False
        return super().has_delete_permission(request, obj)


def _may_manage(actor, user) -> bool:
    """May ``actor`` change or delete ``user`` (the page, the password)? A superuser may; anyone
    else only themselves, or a user who is not staff and holds no permission ``actor`` lacks."""
    if actor.is_superuser:
        return True
    if user.pk == actor.pk:
        return True
    if user.is_superuser or user.is_staff:
        return False
    return user.get_all_permissions() <= actor.get_all_permissions()


class SuperuserGrantsGroupAdmin(GroupAdmin):
    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else (*fields, "permissions")


for model, model_admin in ((User, SuperuserGrantsUserAdmin), (Group, SuperuserGrantsGroupAdmin)):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, model_admin)
