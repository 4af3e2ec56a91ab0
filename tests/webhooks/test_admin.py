"""The admin's webhook pages: endpoints (never the secret) and the delivery log, per granted tenant."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.urls import reverse

from memory.models import TenantStaff, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def endpoint_with_log(tenant, url):
    endpoint = WebhookEndpoint.objects.create(
        tenant=tenant, url=url, secret=WebhookEndpoint.generate_secret(), event_types=["version.applied"]
    )
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_type="version.applied",
        payload={"version": 1},
        status="delivered",
        attempts=2,
    )
    WebhookAttempt.objects.create(
        delivery=delivery, number=1, status_code=503, error="HTTP 503", duration_ms=3.5
    )
    WebhookAttempt.objects.create(delivery=delivery, number=2, status_code=200, duration_ms=2.0)
    return endpoint, delivery


@pytest.fixture
def world(django_user_model):
    a, b = TenantFactory(name="tenant-a"), TenantFactory(name="tenant-b")
    staff = django_user_model.objects.create_user("ada", password="pw-ada", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="memory",
            codename__in=["view_webhookendpoint", "change_webhookendpoint", "view_webhookdelivery"],
        )
    )
    TenantStaff.objects.create(user=staff, tenant=a)
    return {
        "staff": staff,
        "a": endpoint_with_log(a, "https://a.example.com/hook"),
        "b": endpoint_with_log(b, "https://b.example.com/hook"),
    }


def test_superuser_sees_endpoints_and_each_attempt_but_never_the_secret(client, admin_user, world):
    client.force_login(admin_user)
    endpoint, delivery = world["a"]
    listing = client.get(reverse("admin:memory_webhookendpoint_changelist")).content.decode()
    assert "https://a.example.com/hook" in listing and "https://b.example.com/hook" in listing
    page = client.get(reverse("admin:memory_webhookendpoint_change", args=[endpoint.pk])).content.decode()
    assert endpoint.secret not in page and endpoint.secret[6:20] not in page
    log = client.get(reverse("admin:memory_webhookdelivery_change", args=[delivery.pk]))
    assert log.status_code == 200
    text = log.content.decode()
    assert "HTTP 503" in text and "3.5" in text and str(delivery.event_id) in text


def test_staff_see_only_their_tenants_webhooks_and_can_deactivate(client, world):
    client.force_login(world["staff"])
    (endpoint_a, delivery_a), (endpoint_b, delivery_b) = world["a"], world["b"]
    listing = client.get(reverse("admin:memory_webhookendpoint_changelist")).content.decode()
    assert "a.example.com" in listing and "b.example.com" not in listing
    deliveries = client.get(reverse("admin:memory_webhookdelivery_changelist")).content.decode()
    assert str(delivery_a.event_id) in deliveries and str(delivery_b.event_id) not in deliveries
    assert client.get(reverse("admin:memory_webhookdelivery_change", args=[delivery_b.pk])).status_code == 302
    client.post(
        reverse("admin:memory_webhookendpoint_changelist"),
        {"action": "deactivate", ACTION_CHECKBOX_NAME: [endpoint_a.pk, endpoint_b.pk]},
    )
    assert not WebhookEndpoint.objects.get(pk=endpoint_a.pk).is_active
    assert WebhookEndpoint.objects.get(pk=endpoint_b.pk).is_active  # not theirs: untouched
