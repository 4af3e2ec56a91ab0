"""/v1/webhooks: the admin scope, URL refusals (JSON 400), the secret shown once, tenant scope."""

from __future__ import annotations

import json

import pytest

from memory.models import WebhookEndpoint
from memory.services.webhook_targets import WebhookUrlRefused, url_check
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

PUBLIC = "https://hooks.example.com/personatree"


@pytest.fixture
def admin_client(tenant, make_api_client):
    client, _ = make_api_client(tenant, scopes=("admin",))
    return client


def create(client, **body):
    return client.post(
        "/v1/webhooks", {"url": PUBLIC, "event_types": ["version.applied"], **body}, format="json"
    )


def test_admin_scope_is_required(tenant, make_api_client):
    client, _ = make_api_client(tenant, scopes=("ingest", "read", "read_special", "write", "erase"))
    assert create(client).status_code == 403
    assert client.get("/v1/webhooks").status_code == 403
    endpoint = WebhookEndpoint.objects.create(
        tenant=tenant, url=PUBLIC, secret="s", event_types=["version.applied"]
    )
    for method in ("get", "patch", "delete"):
        assert (
            getattr(client, method)(f"/v1/webhooks/{endpoint.public_id}", {}, format="json").status_code
            == 403
        )
    assert client.post(f"/v1/webhooks/{endpoint.public_id}/rotate-secret").status_code == 403
    assert client.get(f"/v1/webhooks/{endpoint.public_id}/deliveries").status_code == 403
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).secret == "s"
    assert create(client.__class__()).status_code == 401  # no key at all


def test_create_shows_the_secret_once(admin_client, tenant):
    answer = create(admin_client, description="crm sync", event_types=["subject.erased", "version.applied"])
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["secret"].startswith("whsec_") and len(body["secret"]) > 30
    assert body["event_types"] == ["subject.erased", "version.applied"] and body["is_active"] is True
    stored = WebhookEndpoint.objects.get(public_id=body["id"])
    assert stored.tenant == tenant and stored.secret == body["secret"]
    shown = admin_client.get(f"/v1/webhooks/{body['id']}").json()
    assert "secret" not in shown and shown["url"] == PUBLIC
    listed = admin_client.get("/v1/webhooks").json()
    assert [w["id"] for w in listed["webhooks"]] == [body["id"]] and "secret" not in listed["webhooks"][0]
    rotated = admin_client.post(f"/v1/webhooks/{body['id']}/rotate-secret").json()
    assert rotated["secret"] != body["secret"]
    assert WebhookEndpoint.objects.get(pk=stored.pk).secret == rotated["secret"]


@pytest.mark.parametrize(
    "url",
    [
        "ftp://hooks.example.com/x",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "gopher://hooks.example.com/",
        "hooks.example.com/no-scheme",
        "https://",
        "https://user:pw@hooks.example.com/",
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.1/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "https://hooks.example.com:99999/",
        "http://metadata.google.internal/",
        "http://exa mple.com/",
        "http://[::1/",
        "http://-bad-.example.com/",
        "http://a..b.example.com/",
    ],
)
def test_bad_urls_are_refused_with_a_json_400(admin_client, url):
    answer = create(admin_client, url=url)
    assert answer.status_code == 400, answer.content
    assert answer["Content-Type"].startswith("application/")
    error = answer.json()
    assert (error["code"], error["field"]) == ("invalid_url", "url") and error["detail"]
    assert not WebhookEndpoint.objects.exists()


def test_bad_event_types_and_bodies_are_a_400(admin_client):
    assert create(admin_client, event_types=["version.deleted"]).status_code == 400
    assert create(admin_client, event_types=[]).status_code == 400
    assert (
        admin_client.post("/v1/webhooks", {"event_types": ["version.applied"]}, format="json").status_code
        == 400
    )
    assert admin_client.post("/v1/webhooks", "[1]", content_type="application/json").status_code == 400
    assert not WebhookEndpoint.objects.exists()


def test_private_targets_are_accepted_only_when_allowed(admin_client, settings):
    assert create(admin_client, url="http://127.0.0.1:9/hook").status_code == 400
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_ALLOW_PRIVATE_TARGETS": True}
    assert create(admin_client, url="http://127.0.0.1:9/hook").status_code == 201
    assert create(admin_client, url="ftp://127.0.0.1/hook").status_code == 400  # still http(s) only


def test_patch_and_delete(admin_client):
    endpoint_id = create(admin_client).json()["id"]
    changed = admin_client.patch(f"/v1/webhooks/{endpoint_id}", {"is_active": False}, format="json")
    assert changed.status_code == 200 and changed.json()["is_active"] is False
    assert changed.json()["url"] == PUBLIC and changed.json()["event_types"] == ["version.applied"]
    refused = admin_client.patch(f"/v1/webhooks/{endpoint_id}", {"url": "http://10.0.0.1/"}, format="json")
    assert refused.status_code == 400
    assert WebhookEndpoint.objects.get(public_id=endpoint_id).url == PUBLIC
    assert admin_client.delete(f"/v1/webhooks/{endpoint_id}").status_code == 204
    assert admin_client.get(f"/v1/webhooks/{endpoint_id}").status_code == 404


def test_another_tenants_endpoint_is_a_404(admin_client, make_api_client):
    other, _ = make_api_client(TenantFactory(), scopes=("admin",))
    endpoint_id = create(other).json()["id"]
    assert admin_client.get(f"/v1/webhooks/{endpoint_id}").status_code == 404
    assert (
        admin_client.patch(f"/v1/webhooks/{endpoint_id}", {"is_active": False}, format="json").status_code
        == 404
    )
    assert admin_client.delete(f"/v1/webhooks/{endpoint_id}").status_code == 404
    assert admin_client.post(f"/v1/webhooks/{endpoint_id}/rotate-secret").status_code == 404
    assert admin_client.get(f"/v1/webhooks/{endpoint_id}/deliveries").status_code == 404
    assert admin_client.get("/v1/webhooks").json()["webhooks"] == []
    assert WebhookEndpoint.objects.get(public_id=endpoint_id).is_active
    assert admin_client.get("/v1/webhooks/not-a-uuid").status_code == 404


def test_delivery_time_check_refuses_names_resolving_inside(settings, monkeypatch):
    import socket

    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", port))],
    )
    for resolve in (False, True):  # refused at registration and again at every attempt
        with pytest.raises(WebhookUrlRefused, match="public address"):
            url_check(PUBLIC, resolve=resolve)
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port))],
    )
    assert url_check(PUBLIC, resolve=True) == PUBLIC


def test_the_delivery_log_shows_each_attempt(
    admin_client, tenant, receiver, django_capture_on_commit_callbacks
):
    from memory.engine.ops import Op
    from memory.services.tree import Actor, tree_apply_ops
    from tests.factories import SubjectFactory
    from tests.webhooks.test_delivery import verify

    created = create(admin_client, url=receiver.url).json()
    receiver.script = [502]
    subject = SubjectFactory(tenant=tenant)
    with django_capture_on_commit_callbacks(execute=True):
        tree_apply_ops(subject=subject, base_version=0, ops=[Op.add("identity/occupation/current_role", "nurse")],
                       actor=Actor.system("seed"))  # fmt: skip

    assert all(
        verify(created["secret"], r.headers["personatree-signature"], r.body) for r in receiver.requests
    )
    answer = admin_client.get(f"/v1/webhooks/{created['id']}/deliveries")
    assert answer.status_code == 200
    (delivery,) = answer.json()["deliveries"]
    assert delivery["event_type"] == "version.applied" and delivery["status"] == "delivered"
    assert delivery["event_id"] == receiver.requests[0].headers["personatree-delivery"]
    assert [(a["number"], a["status_code"]) for a in delivery["attempts"]] == [(1, 502), (2, 200)]
    assert "subject" not in json.dumps(delivery)


def test_good_urls_are_accepted(admin_client, settings):
    for url in (
        "https://bücher.example/hook",
        "http://hooks.example.com:8080/a?b=c",
        "https://93.184.215.14/x",
    ):
        assert create(admin_client, url=url).status_code == 201, url
    # A name that does not resolve (yet) is accepted here; each delivery resolves and checks it.
    assert create(admin_client, url="http://receiver-1.example.net:8080/hook").status_code == 201
    # A one-label name only resolves inside (search domains, container names): refused.
    assert create(admin_client, url="http://receiver_1:8080/hook").status_code == 400
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_ALLOW_PRIVATE_TARGETS": True}
    assert create(admin_client, url="http://localhost:8080/hook").status_code == 201
