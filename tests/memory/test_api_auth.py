import pytest
from django.urls import reverse

from memory.models import ApiKey
from tests.factories import ApiKeyFactory, SubjectFactory

pytestmark = pytest.mark.django_db


def tree_url(external_id):
    return reverse("subject-tree", kwargs={"external_id": external_id})


def test_key_is_stored_hashed_with_visible_prefix(tenant):
    key, raw = ApiKeyFactory.create_raw(tenant=tenant)
    assert raw.startswith(key.prefix + "_")
    assert key.prefix.startswith("pt_live_") and len(key.prefix) == len("pt_live_") + 8
    stored = ApiKey.objects.get(pk=key.pk)
    assert raw not in (stored.hashed, stored.prefix)
    assert stored.hashed == ApiKey.hash_key(raw)


def test_missing_and_bad_keys_get_401_json(client, subject):
    response = client.get(tree_url(subject.external_id))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    response = client.get(tree_url(subject.external_id), HTTP_AUTHORIZATION="Bearer pt_live_deadbeef_nope")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_revoked_key_is_refused(subject, make_api_client):
    from django.utils import timezone

    client, key = make_api_client(subject.tenant, scopes=["read"])
    assert client.get(tree_url(subject.external_id)).status_code == 200
    key.revoked_at = timezone.now()
    key.save()
    assert client.get(tree_url(subject.external_id)).status_code == 401


def test_missing_scope_is_403_and_names_the_scope(subject, make_api_client):
    client, _ = make_api_client(subject.tenant, scopes=["ingest"])
    response = client.get(tree_url(subject.external_id))
    assert response.status_code == 403
    assert "read" in response.json()["error"]["message"]


def test_other_tenants_subject_is_indistinguishable_from_missing(subject, other_tenant, make_api_client):
    client, _ = make_api_client(other_tenant, scopes=["read"])
    foreign = client.get(tree_url(subject.external_id))
    missing = client.get(tree_url("no-such-user"))
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()


def test_same_external_id_in_two_tenants_are_separate(subject, other_tenant, make_api_client):
    SubjectFactory(tenant=other_tenant, external_id=subject.external_id)
    client, _ = make_api_client(other_tenant, scopes=["read"])
    response = client.get(tree_url(subject.external_id))
    assert response.status_code == 200
    assert response.json()["tree"] == {}


def test_throttle_is_per_key(subject, make_api_client, settings):
    from django.core.cache import cache

    from memory.api.throttling import ApiKeyRateThrottle

    cache.clear()
    original = ApiKeyRateThrottle.THROTTLE_RATES
    ApiKeyRateThrottle.THROTTLE_RATES = {"api_key": "2/min"}
    try:
        first, _ = make_api_client(subject.tenant, scopes=["read"])
        second, _ = make_api_client(subject.tenant, scopes=["read"])
        assert [first.get(tree_url(subject.external_id)).status_code for _ in range(3)] == [200, 200, 429]
        throttled = first.get(tree_url(subject.external_id)).json()["error"]
        assert throttled["code"] == "throttled"
        assert second.get(tree_url(subject.external_id)).status_code == 200
    finally:
        ApiKeyRateThrottle.THROTTLE_RATES = original
        cache.clear()
