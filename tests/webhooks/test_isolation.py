"""One tenant's webhooks cannot crowd out the rest: their own queue, a cap on endpoints per tenant and a
cap on the deliveries one tenant has in flight."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from memory.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from memory.services.tree import Actor
from memory.services.webhooks import webhook_endpoint_create
from tests.factories import SubjectFactory, TenantFactory
from tests.webhooks.test_delivery import apply_seed
from workers.base import route_task
from workers.webhook_slots import delivery_slot, slot_key

ACTOR = Actor.system("tests")

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def clean_slots():
    cache.clear()
    yield
    cache.clear()


def test_deliveries_and_their_sweep_run_on_the_webhooks_queue():
    from personatree_site.settings.base import CELERY_BEAT_SCHEDULE

    assert route_task("workers.deliver_webhook", (), {}, {}) == {"queue": "webhooks"}
    assert route_task("workers.sweep_webhooks", (), {}, {}) == {"queue": "webhooks"}
    assert CELERY_BEAT_SCHEDULE["personatree-sweep-webhooks"]["options"] == {"queue": "webhooks"}


def test_a_tenant_over_its_endpoint_cap_gets_a_409_problem(tenant, make_api_client, settings, monkeypatch):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_ENDPOINTS_PER_TENANT": 2}
    client, _ = make_api_client(tenant, scopes=("admin",))
    other, _ = make_api_client(TenantFactory(), scopes=("admin",))
    body = {"url": "https://93.184.215.14/hook", "event_types": ["version.applied"]}
    assert [client.post("/v1/webhooks", body, format="json").status_code for _ in range(2)] == [201, 201]

    refused = client.post("/v1/webhooks", body, format="json")

    assert refused.status_code == 409 and refused["Content-Type"].startswith("application/problem+json")
    error = refused.json()
    assert error["code"] == "webhook_endpoint_limit" and "at most 2" in error["detail"]
    assert WebhookEndpoint.objects.filter(tenant=tenant).count() == 2
    assert other.post("/v1/webhooks", body, format="json").status_code == 201  # per tenant
    first = client.get("/v1/webhooks").json()["webhooks"][0]["id"]
    assert client.delete(f"/v1/webhooks/{first}").status_code == 204
    assert client.post("/v1/webhooks", body, format="json").status_code == 201


def test_slots_are_capped_per_tenant_and_freed_on_exit():
    with delivery_slot(1, cap=2, ttl_s=60) as a, delivery_slot(1, cap=2, ttl_s=60) as b:
        with delivery_slot(1, cap=2, ttl_s=60) as c, delivery_slot(2, cap=2, ttl_s=60) as other:
            assert (a, b, c, other) == (True, True, False, True)
    assert cache.get(slot_key(1, 0)) is None and cache.get(slot_key(1, 1)) is None
    with delivery_slot(1, cap=2, ttl_s=60) as again:
        assert again


def test_a_tenant_with_every_slot_busy_waits_while_another_tenant_is_delivered(
    receiver, other_receiver, commit, settings
):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_CONCURRENT_PER_TENANT": 2}
    busy, calm = TenantFactory(), TenantFactory()
    busy_endpoint, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=busy, url=receiver.url, event_types=["version.applied"]
    )
    calm_endpoint, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=calm, url=other_receiver.url, event_types=["version.applied"]
    )
    for number in range(2):  # two slow POSTs of the busy tenant are in flight elsewhere
        cache.add(slot_key(busy.pk, number), "another worker", timeout=60)

    apply_seed(SubjectFactory(tenant=busy), commit)
    apply_seed(SubjectFactory(tenant=calm), commit)

    waiting = WebhookDelivery.objects.get(endpoint=busy_endpoint)
    assert waiting.status == "pending" and waiting.attempts == 0  # no attempt spent waiting
    assert receiver.requests == [] and not WebhookAttempt.objects.filter(delivery=waiting).exists()
    assert WebhookDelivery.objects.get(endpoint=calm_endpoint).status == "delivered"
    assert len(other_receiver.requests) == 1

    cache.delete(slot_key(busy.pk, 0))
    from workers.webhooks import deliver_webhook

    assert deliver_webhook.apply(args=[waiting.pk]).get() == "delivered"
    assert len(receiver.requests) == 1


def test_a_deferred_delivery_is_sent_again_later_by_a_worker(receiver, settings, monkeypatch):
    """Outside eager mode the task re-sends itself with a countdown instead of POSTing."""
    from workers import webhooks as tasks

    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_CONCURRENT_PER_TENANT": 1}
    tenant = TenantFactory()
    endpoint, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url=receiver.url, event_types=["version.applied"]
    )
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event_type="version.applied", subject_external_id="s", payload={}
    )
    cache.add(slot_key(tenant.pk, 0), "another worker", timeout=60)
    sent = []
    monkeypatch.setattr(tasks, "send", lambda task, *args, **kw: sent.append((task.name, args, kw)))

    tasks.deliver_webhook.push_request(is_eager=False)
    try:
        assert tasks.deliver_webhook.run(delivery.pk) == "deferred"
    finally:
        tasks.deliver_webhook.pop_request()

    ((name, args, kwargs),) = sent
    assert name == "workers.deliver_webhook" and args == (delivery.pk,) and kwargs["tenant_id"] == tenant.pk
    assert tasks.SLOT_WAIT_S <= kwargs["countdown"] <= 2 * tasks.SLOT_WAIT_S
    assert receiver.requests == []


@pytest.mark.django_db(transaction=True)
def test_racing_creations_cannot_pass_the_endpoint_cap(settings):
    import threading

    from django.db import connection

    from memory.services.webhooks import WebhookEndpointLimit

    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_ENDPOINTS_PER_TENANT": 3}
    tenant = TenantFactory()
    webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url="https://93.184.215.14/0", event_types=["version.applied"]
    )
    start, outcomes = threading.Barrier(6), []

    def create(n):
        try:
            start.wait()
            webhook_endpoint_create(
                actor=ACTOR, tenant=tenant, url=f"https://93.184.215.14/{n}", event_types=["version.applied"]
            )
            outcomes.append("created")
        except WebhookEndpointLimit:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=create, args=(n,)) for n in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["created"] * 2 + ["refused"] * 4
    assert WebhookEndpoint.objects.filter(tenant=tenant).count() == 3


def test_the_sweep_leaves_a_delivery_waiting_for_a_slot_to_its_own_task(receiver, settings, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from workers import webhooks as tasks

    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_CONCURRENT_PER_TENANT": 1}
    tenant = TenantFactory()
    endpoint, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url=receiver.url, event_types=["version.applied"]
    )
    waiting_one, lost_one = (
        WebhookDelivery.objects.create(
            endpoint=endpoint, event_type="version.applied", subject_external_id="s", payload={}
        )
        for _ in range(2)
    )
    long_ago = timezone.now() - timedelta(seconds=tasks.ORPHAN_AFTER_S + 60)
    WebhookDelivery.objects.update(created_at=long_ago)
    cache.add(slot_key(tenant.pk, 0), "another worker", timeout=60)
    monkeypatch.setattr(tasks, "send", lambda *args, **kwargs: None)  # the broker keeps the re-send
    tasks.deliver_webhook.push_request(is_eager=False)
    try:
        assert tasks.deliver_webhook.run(waiting_one.pk) == "deferred"
    finally:
        tasks.deliver_webhook.pop_request()
    resent = []
    monkeypatch.setattr(tasks, "send", lambda task, *args, **kwargs: resent.append(args))

    assert tasks.sweep_webhooks.apply().get() == {"resent": 1}

    assert resent == [(lost_one.pk,)]
