"""Webhook endpoint changes are audited like key changes: one AuditEvent per change, with its actor,
from the service, the API and the admin; never the secret or the URL's path."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from memory.models import AuditEvent, WebhookEndpoint
from memory.services import ServiceError
from memory.services.tree import Actor
from memory.services.webhooks import (
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_rotate_secret,
    webhook_endpoint_update,
)
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

URL = "https://hooks.example.com/t0ken-in-the-path"
OPS = Actor("admin", "alice")


def events(tenant) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(tenant=tenant).order_by("id"))


def test_each_service_change_writes_one_event_with_actor_and_no_secret():
    tenant = TenantFactory()
    endpoint, first_secret = webhook_endpoint_create(
        tenant=tenant, url=URL, event_types=["version.applied"], actor=OPS
    )
    webhook_endpoint_update(endpoint=endpoint, actor=OPS, is_active=False, description="crm")
    second_secret = webhook_endpoint_rotate_secret(endpoint=endpoint, actor=OPS)
    webhook_endpoint_delete(endpoint=endpoint, actor=Actor.system("ops"))

    got = events(tenant)
    public_id = str(endpoint.public_id)
    assert [(e.action, e.object_id) for e in got] == [
        ("webhook.created", public_id),
        ("webhook.updated", public_id),
        ("webhook.secret_rotated", public_id),
        ("webhook.deleted", public_id),
    ]
    assert got[0].detail == {
        "host": "hooks.example.com",
        "event_types": ["version.applied"],
        "is_active": True,
    }
    assert got[1].detail == {
        "host": "hooks.example.com",
        "fields": ["description", "is_active"],
        "is_active": False,
    }
    assert [(e.actor_kind, e.actor_name) for e in got] == [("admin", "alice")] * 3 + [("system", "ops")]
    stored = json.dumps([[e.detail, e.object_id, str(e)] for e in got])
    for secret in (first_secret, second_secret, "t0ken"):
        assert secret not in stored
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()


def test_a_refused_change_writes_no_event():
    tenant = TenantFactory()
    endpoint, _ = webhook_endpoint_create(tenant=tenant, url=URL, event_types=["version.applied"], actor=OPS)
    with pytest.raises(ServiceError):
        webhook_endpoint_update(endpoint=endpoint, actor=OPS, event_types=["no.such.event"])
    with pytest.raises(ServiceError):
        webhook_endpoint_create(
            tenant=tenant, url="ftp://hooks.example.com/", event_types=["version.applied"], actor=OPS
        )
    assert [e.action for e in events(tenant)] == ["webhook.created"]


def test_api_changes_are_audited_under_the_calling_key(tenant, make_api_client):
    client, key = make_api_client(tenant, scopes=("admin",))
    created = client.post("/v1/webhooks", {"url": URL, "event_types": ["subject.erased"]}, format="json")
    assert created.status_code == 201, created.content
    public_id = created.json()["id"]
    assert client.patch(f"/v1/webhooks/{public_id}", {"is_active": False}, format="json").status_code == 200
    assert client.post(f"/v1/webhooks/{public_id}/rotate-secret").status_code == 200
    assert client.delete(f"/v1/webhooks/{public_id}").status_code == 204

    got = events(tenant)
    assert [e.action for e in got] == [
        "webhook.created",
        "webhook.updated",
        "webhook.secret_rotated",
        "webhook.deleted",
    ]
    assert {(e.object_id, e.actor_kind, e.actor_name) for e in got} == {(public_id, "api_key", key.prefix)}


def test_admin_actions_and_deletions_are_audited_under_the_staff_user(client, admin_user):
    tenant = TenantFactory()
    kept, _ = webhook_endpoint_create(tenant=tenant, url=URL, event_types=["version.applied"], actor=OPS)
    gone, _ = webhook_endpoint_create(
        tenant=tenant, url=URL + "2", event_types=["version.applied"], actor=OPS
    )
    AuditEvent.objects.all().delete()
    client.force_login(admin_user)
    changelist = reverse("admin:memory_webhookendpoint_changelist")
    client.post(changelist, {"action": "deactivate", ACTION_CHECKBOX_NAME: [kept.pk]})
    answer = client.post(
        changelist, {"action": "delete_selected", ACTION_CHECKBOX_NAME: [gone.pk], "post": "yes"}
    )
    assert answer.status_code == 302
    answer = client.post(reverse("admin:memory_webhookendpoint_delete", args=[kept.pk]), {"post": "yes"})
    assert answer.status_code == 302

    got = events(tenant)
    assert [(e.action, e.object_id) for e in got] == [
        ("webhook.updated", str(kept.public_id)),
        ("webhook.deleted", str(gone.public_id)),
        ("webhook.deleted", str(kept.public_id)),
    ]
    assert {(e.actor_kind, e.actor_name) for e in got} == {("admin", admin_user.get_username())}
    assert not WebhookEndpoint.objects.filter(tenant=tenant).exists()
