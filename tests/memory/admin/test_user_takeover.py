"""Staff with ``auth.change_user`` cannot take over another moderator's account, nor edit a user
holding grants they do not hold (issue 24 item 12): the page, the password and the delete are
refused (403); their own account and a plain user's stay editable."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from tests.memory.admin.test_user_permissions import SPECIAL, perm, user_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def clerk(django_user_model):
    user = django_user_model.objects.create_user("clerk", "clerk@example.test", "pw-clerk", is_staff=True)
    for codename in ("view_user", "change_user", "delete_user"):
        user.user_permissions.add(perm("auth", codename))
    return user


@pytest.fixture
def moderator(django_user_model):
    """Another staff user, who sees the special tier."""
    user = django_user_model.objects.create_user("mod", "mod@example.test", "pw-mod", is_staff=True)
    user.user_permissions.add(perm(*SPECIAL))
    return user


@pytest.fixture
def granted(django_user_model):
    """Not staff, but holding a grant the clerk lacks."""
    user = django_user_model.objects.create_user("granted", "g@example.test", "pw-granted")
    user.user_permissions.add(perm(*SPECIAL))
    return user


def _password(client, user):
    return client.post(
        reverse("admin:auth_user_password_change", args=[user.pk]),
        {"password1": "taken-over-9", "password2": "taken-over-9"},
    )


@pytest.mark.parametrize("victim", ["moderator", "granted"])
def test_staff_cannot_take_over_a_moderator_or_a_better_granted_user(client, clerk, victim, request):
    user = request.getfixturevalue(victim)
    password = "pw-mod" if victim == "moderator" else "pw-granted"
    client.force_login(clerk)
    assert _password(client, user).status_code == 403
    url = reverse("admin:auth_user_change", args=[user.pk])
    assert client.post(url, user_form(user, email="attacker@example.test")).status_code == 403
    assert client.post(reverse("admin:auth_user_delete", args=[user.pk]), {"post": "yes"}).status_code == 403
    user.refresh_from_db()
    assert user.check_password(password) and user.email != "attacker@example.test"


def test_a_peer_moderator_without_extra_grants_is_refused_too(client, clerk, django_user_model):
    peer = django_user_model.objects.create_user("peer", "peer@example.test", "pw-peer", is_staff=True)
    client.force_login(clerk)
    assert _password(client, peer).status_code == 403
    peer.refresh_from_db()
    assert peer.check_password("pw-peer")


def test_own_account_and_plain_users_stay_editable(client, clerk, django_user_model):
    plain = django_user_model.objects.create_user("plain", "plain@example.test", "pw-plain")
    plain.user_permissions.add(Permission.objects.get(content_type__app_label="auth", codename="view_user"))
    client.force_login(clerk)
    assert _password(client, plain).status_code == 302
    plain.refresh_from_db()
    assert plain.check_password("taken-over-9")
    response = client.post(
        reverse("admin:auth_user_change", args=[clerk.pk]), user_form(clerk, first_name="C")
    )
    assert response.status_code == 302
    clerk.refresh_from_db()
    assert clerk.first_name == "C"


def test_a_superuser_still_resets_a_moderators_password(client, admin_user, moderator):
    client.force_login(admin_user)
    assert _password(client, moderator).status_code == 302
    moderator.refresh_from_db()
    assert moderator.check_password("taken-over-9")
