"""Who may hand out permissions in the admin (issue 15): only superusers.

A staff user with ``auth.change_user`` (and ``auth.change_group``) could give themselves
``memory.view_special_tier`` (the special tier's values), directly or through a group, or make
themselves superuser, on Django's default user and group pages. Now those fields are read-only for
non-superusers, and superuser accounts can be changed only by superusers."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

pytestmark = pytest.mark.django_db

SPECIAL = ("memory", "view_special_tier")


def perm(app_label: str, codename: str) -> Permission:
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


@pytest.fixture
def clerk(django_user_model):
    user = django_user_model.objects.create_user("clerk", "clerk@example.test", "pw-clerk", is_staff=True)
    for codename in ("view_user", "change_user", "view_group", "change_group", "add_group"):
        user.user_permissions.add(perm("auth", codename))
    return user


def user_form(user, **changes) -> dict:
    data = {
        "username": user.username,
        "first_name": "",
        "last_name": "",
        "email": user.email,
        "is_active": "on",
        "is_staff": "on" if user.is_staff else "",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
        "last_login_0": "",
        "last_login_1": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""}


def test_staff_cannot_grant_themselves_the_special_tier_or_superuser(client, clerk):
    client.force_login(clerk)
    url = reverse("admin:auth_user_change", args=[clerk.pk])
    assert client.get(url).status_code == 200
    response = client.post(
        url, user_form(clerk, user_permissions=[perm(*SPECIAL).pk], is_superuser="on", first_name="Cl")
    )
    assert response.status_code == 302, response.content[:2000]
    clerk.refresh_from_db()
    assert clerk.first_name == "Cl"  # the rest of the page still works
    assert not clerk.is_superuser
    assert not clerk.user_permissions.filter(codename="view_special_tier").exists()
    assert not clerk.has_perm("memory.view_special_tier")


def test_staff_cannot_grant_the_special_tier_through_a_group(client, clerk):
    group = Group.objects.create(name="support")
    clerk.groups.add(group)
    client.force_login(clerk)
    response = client.post(
        reverse("admin:auth_group_change", args=[group.pk]),
        {"name": "support", "permissions": [perm(*SPECIAL).pk]},
    )
    assert response.status_code == 302
    assert not group.permissions.exists()
    response = client.post(
        reverse("admin:auth_group_add"), {"name": "vip", "permissions": [perm(*SPECIAL).pk]}
    )
    assert response.status_code == 302
    assert not Group.objects.get(name="vip").permissions.exists()


def test_staff_cannot_change_a_superuser(client, clerk, admin_user):
    client.force_login(clerk)
    url = reverse("admin:auth_user_change", args=[admin_user.pk])
    assert client.get(url).status_code == 200  # view only
    assert client.post(url, user_form(admin_user, is_superuser="", is_staff="")).status_code == 403
    response = client.post(
        reverse("admin:auth_user_password_change", args=[admin_user.pk]),
        {"password1": "taken-over-9", "password2": "taken-over-9"},
    )
    assert response.status_code == 403
    admin_user.refresh_from_db()
    assert admin_user.is_superuser and admin_user.is_staff
    assert admin_user.check_password("pw-moderator")


def test_a_superuser_still_grants_the_special_tier(client, clerk, admin_user):
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:auth_user_change", args=[clerk.pk]),
        user_form(clerk, user_permissions=[perm(*SPECIAL).pk]),
    )
    assert response.status_code == 302, response.content[:2000]
    clerk = type(clerk).objects.get(pk=clerk.pk)
    assert clerk.has_perm("memory.view_special_tier")
