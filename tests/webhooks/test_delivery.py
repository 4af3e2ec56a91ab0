"""Signed events reach a real loopback receiver after the store's real write paths commit."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from memory.engine.ops import Op
from memory.models import WebhookAttempt, WebhookDelivery
from memory.services.governance import ops_review_approve, ops_review_decline
from memory.services.subjects import subject_erase
from memory.services.tree import Actor, Source, tree_apply_ops
from memory.services.webhooks import webhook_endpoint_create, webhook_endpoint_update
from tests.factories import ChunkFactory, SubjectFactory, TenantFactory
from tests.webhooks.conftest import ACTOR, subscribed

pytestmark = pytest.mark.django_db

ROLE = "identity/occupation/current_role"
RELIGION = "identity/beliefs/religion"  # special tier
HEALTH = "body/health/conditions"  # special tier
ALL = ["version.applied", "review.decided", "subject.erased"]


def documented_verify():
    """The receiver's check exactly as docs/WEBHOOKS.md shows it (its Python block defining ``verify``,
    run here)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "WEBHOOKS.md").read_text(encoding="utf-8")
    blocks = [part.split("```", 1)[0] for part in text.split("```python\n")[1:]]
    (code,) = [block for block in blocks if "def verify(" in block]
    namespace: dict = {}
    exec(compile(code, "docs/WEBHOOKS.md", "exec"), namespace)
    return namespace["verify"]


verify = documented_verify()


def apply_seed(subject, commit):
    with commit():
        return tree_apply_ops(
            subject=subject,
            base_version=subject.head_version,
            ops=[Op.add(ROLE, "nurse"), Op.add(RELIGION, "devout Zoroastrian")],
            actor=Actor.system("seed"),
        )


def events(receiver):
    return [json.loads(r.body) for r in receiver.requests]


def test_version_applied_is_delivered_signed_without_values(receiver, commit):
    subject, endpoint, secret = subscribed(receiver.url, "version.applied", external_id="alice")

    apply_seed(subject, commit)

    (request,) = receiver.requests
    assert request.path == "/hook"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["personatree-event"] == "version.applied"
    assert verify(secret, request.headers["personatree-signature"], request.body)
    assert not verify("whsec_wrong", request.headers["personatree-signature"], request.body)
    assert not verify(secret, request.headers["personatree-signature"], request.body + b" ")
    event = json.loads(request.body)
    assert event["type"] == "version.applied" and event["id"] == request.headers["personatree-delivery"]
    assert event["data"]["subject"] == "alice"
    assert event["data"]["version"] == 1 and event["data"]["created_by"] == "import"  # a system actor
    assert event["data"]["ops"] == {"ADD": 2, "UPDATE": 0, "DELETE": 0}
    for secret_text in (b"nurse", b"Zoroastrian", b"identity/", RELIGION.encode()):
        assert secret_text not in request.body
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "delivered" and delivery.attempts == 1
    assert delivery.subject_external_id == ""  # not kept once delivered
    (attempt,) = delivery.attempt_log.all()
    assert attempt.status_code == 200 and attempt.error == "" and attempt.duration_ms > 0


def test_500_then_200_is_retried_and_both_attempts_are_logged(receiver, commit):
    subject, endpoint, secret = subscribed(receiver.url, "version.applied")
    receiver.script = [500]

    apply_seed(subject, commit)

    assert len(receiver.requests) == 2
    first, second = receiver.requests
    assert first.body == second.body  # the same event, re-signed
    assert first.headers["personatree-delivery"] == second.headers["personatree-delivery"]
    assert all(verify(secret, r.headers["personatree-signature"], r.body) for r in receiver.requests)
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "delivered" and delivery.attempts == 2
    log = list(delivery.attempt_log.values_list("number", "status_code", "error"))
    assert log == [(1, 500, "HTTP 500"), (2, 200, "")]


def test_gives_up_after_max_attempts(receiver, commit, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_ATTEMPTS": 3}
    subject, endpoint, _ = subscribed(receiver.url, "version.applied", external_id="carol")
    receiver.script = [503] * 10

    apply_seed(subject, commit)

    assert len(receiver.requests) == 3
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and delivery.attempts == 3 and delivery.last_status_code == 503
    assert delivery.finished_at is not None and delivery.subject_external_id == ""
    assert list(delivery.attempt_log.values_list("status_code", flat=True)) == [503, 503, 503]


def test_a_4xx_answer_is_not_retried(receiver, commit):
    subject, endpoint, _ = subscribed(receiver.url, "version.applied")
    receiver.script = [410]

    apply_seed(subject, commit)

    assert len(receiver.requests) == 1
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and delivery.attempts == 1 and delivery.last_error == "HTTP 410"


def test_connection_errors_are_retried_then_given_up(allow_loopback, commit, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_ATTEMPTS": 2}
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    subject, endpoint, _ = subscribed(f"http://127.0.0.1:{port}/hook", "version.applied")

    apply_seed(subject, commit)

    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and delivery.attempts == 2
    errors = list(delivery.attempt_log.values_list("status_code", "error"))
    assert all(code is None and error.startswith("connection error") for code, error in errors)


def test_a_tenant_never_receives_another_tenants_events(receiver, other_receiver, commit):
    a, b = TenantFactory(), TenantFactory()
    alice = SubjectFactory(tenant=a, external_id="alice")
    bob = SubjectFactory(tenant=b, external_id="bob")
    webhook_endpoint_create(actor=ACTOR, tenant=a, url=receiver.url, event_types=ALL)
    webhook_endpoint_create(actor=ACTOR, tenant=b, url=other_receiver.url, event_types=ALL)

    apply_seed(bob, commit)
    with commit():
        subject_erase(subject=bob, erased_by="test")

    assert receiver.requests == []
    assert [(e["type"], e["data"]["subject"]) for e in events(other_receiver)] == [
        ("version.applied", "bob"),
        ("subject.erased", "bob"),
    ]
    apply_seed(alice, commit)
    assert [(e["type"], e["data"]["subject"]) for e in events(receiver)] == [("version.applied", "alice")]
    assert len(other_receiver.requests) == 2


def test_inactive_endpoint_and_unsubscribed_events_get_nothing(receiver, other_receiver, commit):
    tenant = TenantFactory()
    subject = SubjectFactory(tenant=tenant)
    inactive, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url=receiver.url, event_types=ALL, is_active=False
    )
    webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url=other_receiver.url, event_types=["subject.erased"]
    )

    apply_seed(subject, commit)

    assert receiver.requests == [] and other_receiver.requests == []
    assert not WebhookDelivery.objects.exists()
    webhook_endpoint_update(actor=ACTOR, endpoint=inactive, is_active=True)
    with commit():
        subject_erase(subject=subject)
    assert [e["type"] for e in events(receiver)] == ["subject.erased"]
    assert [e["type"] for e in events(other_receiver)] == ["subject.erased"]


def test_subject_erased_keeps_no_external_id_after_delivery(receiver, commit):
    subject, endpoint, secret = subscribed(receiver.url, "subject.erased", external_id="dave")

    with commit():
        subject_erase(subject=subject)

    (request,) = receiver.requests
    assert verify(secret, request.headers["personatree-signature"], request.body)
    event = json.loads(request.body)
    assert (
        event["type"] == "subject.erased"
        and event["data"]["subject"] == "dave"
        and event["data"]["erased_at"]
    )
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "delivered"
    stored = json.dumps([delivery.payload, delivery.subject_external_id, delivery.last_error])
    assert "dave" not in stored and delivery.subject_key  # the tombstone's keyed hash only


def test_review_decisions_are_delivered(receiver, commit, admin_user):
    subject, _, _ = subscribed(receiver.url, "review.decided", "version.applied", external_id="erin")
    chunk = ChunkFactory(subject=subject)
    with commit():
        held = tree_apply_ops(
            subject=subject,
            base_version=0,
            ops=[Op.add(HEALTH, "asthma"), Op.add(RELIGION, "Quaker")],
            actor=Actor.for_model(model_id="m"),
            source=Source(chunk.pk),
        ).pending_review
    assert len(held) == 2 and receiver.requests == []  # nothing applied, nothing announced

    with commit():
        ops_review_approve(op_ids=[held[0].pk], user=admin_user, note="ok")
    with commit():
        ops_review_decline(op_ids=[held[1].pk], user=admin_user, note="hearsay")

    got = [(e["type"], e["data"]) for e in events(receiver)]
    assert [t for t, _ in got] == ["version.applied", "review.decided", "review.decided"]
    assert got[0][1]["created_by"] == "review" and got[0][1]["ops"]["ADD"] == 1
    assert {k: got[1][1][k] for k in ("subject", "decision", "ops", "version")} == {
        "subject": "erin",
        "decision": "approved",
        "ops": {"approved": 1, "rejected": 0, "declined": 0},
        "version": 1,
    }
    assert got[2][1]["decision"] == "declined" and got[2][1]["ops"]["declined"] == 1
    assert b"asthma" not in b"".join(r.body for r in receiver.requests)
    assert b"Quaker" not in b"".join(r.body for r in receiver.requests)


def test_a_private_target_is_refused_at_delivery_when_not_allowed(receiver, commit, settings):
    subject, endpoint, _ = subscribed(receiver.url, "version.applied")
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_ALLOW_PRIVATE_TARGETS": False}

    apply_seed(subject, commit)

    assert receiver.requests == []
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and delivery.attempts == 1
    assert WebhookAttempt.objects.get(delivery=delivery).error.startswith("refused:")


def test_the_task_retries_through_celery_with_exponential_backoff():
    from celery.utils.time import get_exponential_backoff_interval

    from workers.webhooks import WebhookRetry, deliver_webhook

    assert deliver_webhook.autoretry_for == (WebhookRetry,) and deliver_webhook.max_retries == 5
    waits = [
        get_exponential_backoff_interval(
            deliver_webhook.retry_backoff, n, deliver_webhook.retry_backoff_max, full_jitter=False
        )
        for n in range(5)
    ]
    assert waits == [30, 60, 120, 240, 480]  # seconds before retries 1..5 (jitter draws below them)


def test_the_documented_check_refuses_stale_or_tampered_signatures():
    import time

    from memory.services.webhook_deliveries import signature

    body, now = b'{"id":"x"}', int(time.time())
    assert verify("whsec_k", signature("whsec_k", now, body), body)
    assert not verify("whsec_k", signature("whsec_k", now - 3600, body), body)  # a replay an hour later
    assert not verify("whsec_k", signature("whsec_k", now, body).replace(f"t={now}", f"t={now + 1}"), body)
    assert not verify("whsec_other", signature("whsec_k", now, body), body)


def test_a_receiver_slower_than_the_timeout_is_retried_then_given_up(receiver, commit, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_ATTEMPTS": 2, "WEBHOOK_TIMEOUT_S": 0.2}
    subject, endpoint, _ = subscribed(receiver.url, "version.applied")
    receiver.delay_s = 1.0

    apply_seed(subject, commit)

    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and delivery.attempts == 2 and delivery.last_status_code is None
    errors = list(delivery.attempt_log.values_list("error", flat=True))
    assert errors == ["timeout: ReadTimeout", "timeout: ReadTimeout"]
