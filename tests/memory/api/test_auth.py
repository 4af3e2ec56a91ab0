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
    assert response.json()["code"] == "not_authenticated"
    response = client.get(tree_url(subject.external_id), HTTP_AUTHORIZATION="Bearer pt_live_deadbeef_nope")
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"
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
    assert "read" in response.json()["detail"]


def test_other_tenants_subject_is_indistinguishable_from_missing(subject, other_tenant, make_api_client):
    client, _ = make_api_client(other_tenant, scopes=["read"])
    foreign = client.get(tree_url(subject.external_id))
    missing = client.get(tree_url("no-such-user"))
    assert foreign.status_code == missing.status_code == 404
    # Alike but for ``instance``: the path each request itself named.
    assert foreign.json().pop("instance") != missing.json().pop("instance")
    assert {**foreign.json(), "instance": ""} == {**missing.json(), "instance": ""}


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
        throttled = first.get(tree_url(subject.external_id)).json()
        assert throttled["code"] == "throttled"
        assert second.get(tree_url(subject.external_id)).status_code == 200
    finally:
        ApiKeyRateThrottle.THROTTLE_RATES = original
        cache.clear()


# --- HEAD and OPTIONS go through the same scope check as the methods they stand for -------------


def _ingest(client, external_id):
    body = {"messages": [{"role": "user", "content": "hello", "idempotency_key": "k1"}]}
    response = client.post(f"/v1/subjects/{external_id}/messages", body, format="json")
    assert response.status_code == 202, response.content


def test_head_needs_the_scope_of_get(tenant, make_api_client):
    writer, _ = make_api_client(tenant, scopes=["ingest"])
    reader, _ = make_api_client(tenant, scopes=["read"])
    _ingest(writer, "head-user")
    url = "/v1/subjects/head-user/ingest"
    assert writer.get(url).status_code == 403
    refused = writer.head(url)
    assert refused.status_code == 403
    assert refused["Content-Type"] == "application/problem+json"
    allowed = reader.head(url)
    assert allowed.status_code == 200 and allowed.content == b""


@pytest.mark.parametrize(
    ("path", "holder", "outsider"),
    [
        ("/v1/subjects/opt-user/ingest", ["read"], ["ingest"]),  # GET: read
        ("/v1/subjects/opt-user/flush", ["ingest"], ["read"]),  # POST: ingest
        ("/v1/subjects/opt-user", ["erase"], ["ingest", "write"]),  # GET: read, DELETE: erase
        ("/v1/subjects/opt-user/tree", ["read"], ["ingest", "erase"]),  # every method: read
    ],
)
def test_options_only_for_a_key_that_may_call_the_endpoint(tenant, make_api_client, path, holder, outsider):
    _ingest(make_api_client(tenant, scopes=["ingest"])[0], "opt-user")
    outsider_client, _ = make_api_client(tenant, scopes=outsider)
    refused = outsider_client.options(path)
    assert refused.status_code == 403, refused.content
    assert refused.json()["code"] == "permission_denied"
    holder_client, _ = make_api_client(tenant, scopes=holder)
    assert holder_client.options(path).status_code == 200


def test_a_method_missing_from_a_scope_dict_is_a_configuration_error():
    from django.core.exceptions import ImproperlyConfigured

    from memory.api.auth import required_scopes_for
    from memory.api.base import TenantScopedView

    class Half(TenantScopedView):
        required_scopes = {"GET": ("read",)}

        def get(self, request): ...

        def post(self, request): ...

    view = Half()
    assert required_scopes_for(view, "GET") == ("read",)
    assert required_scopes_for(view, "HEAD") == ("read",)
    assert required_scopes_for(view, "PUT") == ()  # not served: the 405 follows
    with pytest.raises(ImproperlyConfigured):
        required_scopes_for(view, "POST")


def test_a_handler_cut_off_by_http_method_names_is_a_405_not_a_500(tenant, make_api_client):
    """LeafHistoryView inherits put/delete from the leaf view but serves only GET (found by the
    hostile fuzz run: a PUT to a history URL was a 500 ``ImproperlyConfigured``)."""
    _ingest(make_api_client(tenant, scopes=["ingest"])[0], "cut-user")
    api, _ = make_api_client(tenant, scopes=["read", "write"])
    for method in (api.put, api.delete, api.post):
        answer = method("/v1/subjects/cut-user/tree/leaves/identity.name/history")
        assert answer.status_code == 405, answer.content
        assert answer["Content-Type"] == "application/problem+json"
