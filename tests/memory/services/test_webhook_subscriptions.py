"""The endpoint snapshot behind webhook events (memory/services/webhook_subscriptions.py): no query per
event while endpoints are unchanged, and every change seen at the next event, in this process (saves
and deletes) and in others (the shared version token)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory.engine.ops import Op
from memory.models import Tenant, WebhookEndpoint
from memory.services import webhook_subscriptions as subs
from memory.services.tree import Actor, tree_apply_ops
from memory.services.webhooks import (
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_update,
    webhook_event_subject_erased,
)
from tests.factories import SubjectFactory, TenantFactory

ACTOR = Actor.system("tests")

pytestmark = pytest.mark.django_db(transaction=True)

ROLE = "identity/occupation/current_role"
URL = "https://hooks.example.com/in"  # never called: deliveries are collected, not sent


@pytest.fixture(autouse=True)
def fresh_snapshot():
    subs.invalidate()
    cache.delete(subs.TOKEN_KEY)
    yield
    subs.invalidate()
    cache.delete(subs.TOKEN_KEY)


@pytest.fixture
def queued(monkeypatch):
    """What the version_applied receiver queues (workers/webhooks.py), instead of sending it."""
    sent: list = []
    monkeypatch.setattr("workers.webhooks._deliver", sent.extend)
    return sent


def write(subject, value: str) -> list[str]:
    """One committed version; the statements it sent, the after-commit receivers' included."""
    subject.refresh_from_db()
    op = Op.update(ROLE, value) if subject.head_version else Op.add(ROLE, value)
    with CaptureQueriesContext(connection) as captured:
        out = tree_apply_ops(
            subject=subject, base_version=subject.head_version, ops=[op], actor=Actor.system("t")
        )
    assert out.version is not None
    return [q["sql"] for q in captured.captured_queries]


def endpoint_reads(sql: list[str]) -> int:
    return sum('FROM "memory_webhookendpoint"' in q for q in sql)


@pytest.mark.postgres
def test_events_read_the_endpoints_once_while_they_are_unchanged(queued):
    subject = SubjectFactory()
    other = SubjectFactory()  # another tenant, not subscribed
    endpoint, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=subject.tenant, url=URL, event_types=["version.applied"]
    )

    reads = [endpoint_reads(write(subject, f"nurse {i}")) for i in range(3)]
    assert reads == [1, 0, 0]
    assert len(queued) == 3
    sql = write(other, "baker")
    assert endpoint_reads(sql) == 0 and len(queued) == 3  # subscribed tenants exist: one version read
    assert [q for q in sql if "memory_treeversion" in q and q.startswith("SELECT")]

    webhook_endpoint_update(actor=ACTOR, endpoint=endpoint, is_active=False)
    assert endpoint_reads(write(subject, "nurse 3")) == 1 and len(queued) == 3
    # No tenant subscribes now: no query at all after the commit (BEGIN, lock, write, COMMIT).
    assert len(write(subject, "nurse 4")) == 4
    webhook_endpoint_update(actor=ACTOR, endpoint=endpoint, is_active=True)
    write(subject, "nurse 5")
    assert len(queued) == 4
    webhook_endpoint_delete(actor=ACTOR, endpoint=endpoint)
    write(subject, "nurse 6")
    assert len(queued) == 4


def test_a_change_made_by_another_process_is_seen_once_its_token_changes(queued):
    subject = SubjectFactory()
    endpoint, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=subject.tenant, url=URL, event_types=["version.applied"]
    )
    write(subject, "nurse")
    assert len(queued) == 1
    # Another process deactivates it: its row changes here without this process's signals...
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(is_active=False)
    write(subject, "nurse 1")
    assert len(queued) == 2  # ...so the snapshot still holds it until the token moves
    cache.set(subs.TOKEN_KEY, "written-by-another-process")
    write(subject, "nurse 2")
    assert len(queued) == 2


def test_a_lost_token_reloads_the_snapshot(queued):
    subject = SubjectFactory()
    webhook_endpoint_create(actor=ACTOR, tenant=subject.tenant, url=URL, event_types=["version.applied"])
    write(subject, "nurse")
    cache.clear()  # Redis flushed or evicted the key
    assert endpoint_reads(write(subject, "nurse 1")) == 1 and len(queued) == 2


def test_what_a_transaction_read_is_not_kept_after_its_rollback():
    tenant = TenantFactory()
    with pytest.raises(RuntimeError), transaction.atomic():
        webhook_endpoint_create(actor=ACTOR, tenant=tenant, url=URL, event_types=["subject.erased"])
        assert subs.subscribers("subject.erased") != {}  # read inside the transaction, not kept
        raise RuntimeError("rolled back")
    assert subs.subscribers("subject.erased") == {}


def test_the_cache_failing_reads_the_endpoints_per_event(monkeypatch):
    tenant = TenantFactory()
    endpoint, _ = webhook_endpoint_create(actor=ACTOR, tenant=tenant, url=URL, event_types=["subject.erased"])

    def down(*args, **kwargs):
        raise ConnectionError("cache unreachable")

    monkeypatch.setattr(cache, "get", down)
    monkeypatch.setattr(subs, "_cache_failed_at", None)
    assert subs.subscribers("subject.erased") == {tenant.pk: (endpoint.pk,)}
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(is_active=False)  # no signal: only a read sees it
    assert subs.subscribers("subject.erased") == {}


def test_an_inactive_tenant_gets_no_event_from_the_snapshot():
    tenant = TenantFactory()
    webhook_endpoint_create(actor=ACTOR, tenant=tenant, url=URL, event_types=["subject.erased"])
    assert len(webhook_event_subject_erased(tenant_id=tenant.pk, external_id="alice")) == 1
    Tenant.objects.filter(pk=tenant.pk).update(is_active=False)
    assert webhook_event_subject_erased(tenant_id=tenant.pk, external_id="bob") == []


def test_an_endpoint_deleted_behind_a_stale_snapshot_costs_the_others_nothing(queued):
    """Another process deleted an endpoint and its token write was lost: the snapshot still names it,
    the delivery row for it cannot be inserted, and the tenant's other endpoints still get the event."""
    subject = SubjectFactory()
    gone, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=subject.tenant, url=URL, event_types=["version.applied"]
    )
    kept, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=subject.tenant, url=URL + "2", event_types=["version.applied"]
    )
    write(subject, "nurse")
    assert len(queued) == 2
    with connection.cursor() as cursor:  # deleted elsewhere: no signal reaches this process's snapshot
        cursor.execute(
            "DELETE FROM memory_webhookattempt WHERE delivery_id IN "
            "(SELECT id FROM memory_webhookdelivery WHERE endpoint_id = %s)",
            [gone.pk],
        )
        cursor.execute("DELETE FROM memory_webhookdelivery WHERE endpoint_id = %s", [gone.pk])
        cursor.execute("DELETE FROM memory_webhookendpoint WHERE id = %s", [gone.pk])

    write(subject, "nurse 1")

    assert len(queued) == 3
    from memory.models import WebhookDelivery

    last = WebhookDelivery.objects.get(pk=queued[-1].delivery_id)
    assert last.endpoint_id == kept.pk
