"""Key management under the admin scope (issue 17): list, create, rotate, revoke one's own tenant's keys."""

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from memory.models import ApiKey
from tests.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db


def key_url(key, name="api-key"):
    prefix = key if isinstance(key, str) else key.prefix
    return reverse(name, kwargs={"prefix": prefix})


def bearer(raw):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def tree_status(raw, subject) -> int:
    return bearer(raw).get(reverse("subject-tree", kwargs={"external_id": subject.external_id})).status_code


@pytest.fixture
def admin(tenant, make_api_client):
    client, key = make_api_client(tenant, scopes=["admin", "read", "ingest"])
    return client, key


def test_every_key_endpoint_needs_the_admin_scope(tenant, make_api_client):
    client, key = make_api_client(tenant, scopes=list(set(ApiKey.SCOPES) - {"admin"}))
    for response in (
        client.get(reverse("api-keys")),
        client.post(reverse("api-keys"), {"scopes": ["read"]}, format="json"),
        client.get(key_url(key)),
        client.delete(key_url(key)),
        client.post(key_url(key, "api-key-rotate")),
    ):
        assert response.status_code == 403, response.content[:300]
        assert "admin" in response.json()["detail"]
    assert ApiKey.objects.filter(tenant=tenant).count() == 1 and ApiKey.objects.get().revoked_at is None


def test_create_shows_the_raw_key_once_and_stores_only_its_hash(admin, tenant, subject):
    client, _ = admin
    response = client.post(reverse("api-keys"), {"name": "reporting", "scopes": ["read"]}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    raw = body.pop("key")
    stored = ApiKey.objects.get(prefix=body["prefix"])
    assert raw.startswith(body["prefix"] + "_") and stored.hashed == ApiKey.hash_key(raw)
    assert raw not in (stored.hashed, stored.prefix, stored.name)
    assert (body["name"], body["scopes"], body["revoked_at"], body["last_used_at"]) == (
        "reporting",
        ["read"],
        None,
        None,
    )
    assert stored.tenant == tenant
    assert tree_status(raw, subject) == 200
    # Never shown again: not in the list, not in the key's own page.
    listed = client.get(reverse("api-keys")).content.decode()
    assert raw not in listed and raw not in client.get(key_url(stored)).content.decode()


@pytest.mark.parametrize(
    "body, status, field",
    [
        ({"scopes": ["erase"]}, 403, None),  # a scope the calling key does not hold
        ({"scopes": ["read", "read_special"]}, 403, None),
        ({"scopes": ["root"]}, 400, "scopes[0]"),
        ({"scopes": []}, 400, "scopes"),
        ({"scopes": "read"}, 400, "scopes"),
        ({}, 400, "scopes"),
        ({"scopes": ["read"], "name": "x" * 201}, 400, "name"),
    ],
)
def test_create_refuses_bad_bodies_and_scopes_the_key_lacks(admin, body, status, field):
    client, _ = admin
    before = ApiKey.objects.count()
    response = client.post(reverse("api-keys"), body, format="json")
    assert response.status_code == status, response.content
    assert response.json().get("field") == field
    assert ApiKey.objects.count() == before


def test_list_pages_through_own_tenants_keys_only(admin, tenant, other_tenant):
    client, own = admin
    mine = [own] + [ApiKeyFactory(tenant=tenant, scopes=["read"]) for _ in range(4)]
    foreign = ApiKeyFactory(tenant=other_tenant, scopes=["admin"])
    mine[1].revoked_at = timezone.now()
    mine[1].save()
    prefixes, response = [], client.get(reverse("api-keys"), {"page_size": 2})
    while True:
        body = response.json()
        assert len(body["keys"]) <= 2
        prefixes += [k["prefix"] for k in body["keys"]]
        if body["next"] is None:
            break
        response = client.get(body["next"])
    assert prefixes == [k.prefix for k in mine]  # oldest first, the revoked one too
    assert client.get(key_url(foreign)).status_code == 404
    assert client.delete(key_url(foreign)).status_code == 404
    assert client.post(key_url(foreign, "api-key-rotate")).status_code == 404
    assert ApiKey.objects.get(pk=foreign.pk).revoked_at is None


@pytest.mark.parametrize("prefix", ["pt_live_zzzzzzzz", "nope", "pt_live_0000000", "pt_live_00000000"])
def test_a_prefix_naming_no_key_is_a_404(admin, prefix):
    client, _ = admin
    response = client.get(key_url(prefix))
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_revoke_cuts_the_key_off_and_is_idempotent(admin, tenant, subject):
    client, _ = admin
    key, raw = ApiKeyFactory.create_raw(tenant=tenant, scopes=["read"])
    assert tree_status(raw, subject) == 200
    response = client.delete(key_url(key))
    assert response.status_code == 200 and response.json()["revoked_at"] is not None
    assert tree_status(raw, subject) == 401
    revoked_at = ApiKey.objects.get(pk=key.pk).revoked_at
    again = client.delete(key_url(key))
    assert again.status_code == 200 and ApiKey.objects.get(pk=key.pk).revoked_at == revoked_at
    assert client.get(key_url(key)).json()["revoked_at"] is not None


def test_rotate_replaces_the_key_with_the_same_name_and_scopes(admin, tenant, subject):
    client, _ = admin
    old, old_raw = ApiKeyFactory.create_raw(tenant=tenant, scopes=["read", "ingest"], name="etl")
    response = client.post(key_url(old, "api-key-rotate"))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["prefix"] != old.prefix and (body["name"], body["scopes"]) == ("etl", ["ingest", "read"])
    assert tree_status(old_raw, subject) == 401 and tree_status(body["key"], subject) == 200
    assert ApiKey.objects.get(pk=old.pk).revoked_at is not None
    again = client.post(key_url(old, "api-key-rotate"))
    assert again.status_code == 409 and again.json()["code"] == "key_revoked"


def test_rotating_a_key_with_a_scope_the_caller_lacks_is_refused(admin, tenant):
    client, _ = admin
    eraser = ApiKeyFactory(tenant=tenant, scopes=["erase"])
    assert client.post(key_url(eraser, "api-key-rotate")).status_code == 403
    assert (
        ApiKey.objects.get(pk=eraser.pk).revoked_at is None
        and ApiKey.objects.filter(tenant=tenant).count() == 2
    )


def test_the_revoke_service_is_idempotent_and_leaves_other_keys_alone(tenant):
    from memory.services.keys import api_key_create, api_keys_revoke
    from memory.services.tree import Actor

    first, _ = api_key_create(tenant=tenant, scopes=["read"], actor=Actor.system("t"))
    second, _ = api_key_create(tenant=tenant, scopes=["read"], actor=Actor.system("t"))
    assert api_keys_revoke(keys=ApiKey.objects.filter(pk=first.pk), actor=Actor.system("t")) == 1
    assert api_keys_revoke(keys=[first], actor=Actor.system("t")) == 0  # already revoked: nothing changes
    assert ApiKey.objects.get(pk=second.pk).revoked_at is None


def test_key_changes_through_the_api_are_audited_with_the_calling_key(admin, tenant):
    from memory.models import AuditEvent

    client, caller = admin
    created = client.post(reverse("api-keys"), {"name": "ci", "scopes": ["read"]}, format="json").json()
    client.post(key_url(created["prefix"], "api-key-rotate"))
    client.delete(key_url(created["prefix"]))  # revoked by the rotation already: no second event
    events = AuditEvent.objects.filter(tenant=tenant).order_by("id")
    assert [e.action for e in events] == ["key.created", "key.created", "key.rotated"]
    assert {(e.actor_kind, e.actor_name) for e in events} == {("api_key", caller.prefix)}
