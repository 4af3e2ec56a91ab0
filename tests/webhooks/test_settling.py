"""No delivery stays ``pending`` for good: every attempt is recorded whatever happens, a sweep finds the
deliveries whose task was lost, and a finished delivery stays finished."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.utils import timezone

from memory.models import WebhookAttempt, WebhookDelivery
from memory.services.tree import Actor
from memory.services.webhook_deliveries import webhook_attempt_record
from memory.services.webhooks import webhook_endpoint_create
from tests.factories import SubjectFactory, TenantFactory
from tests.webhooks.test_delivery import apply_seed

ACTOR = Actor.system("tests")

pytestmark = pytest.mark.django_db


def endpoint_for(receiver, **kwargs):
    tenant = TenantFactory()
    endpoint, secret = webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url=receiver.url, event_types=["version.applied"], **kwargs
    )
    return tenant, endpoint


def test_a_url_httpx_cannot_use_records_a_failed_attempt(receiver, commit):
    tenant, endpoint = endpoint_for(receiver)
    # Stored before today's checks: IDNA-2003 accepts the snowman, httpx's IDNA-2008 does not.
    type(endpoint).objects.filter(pk=endpoint.pk).update(url="http://\u2603.example/hook")

    apply_seed(SubjectFactory(tenant=tenant), commit)

    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and delivery.attempts == 1 and delivery.finished_at
    assert delivery.subject_external_id == ""
    assert WebhookAttempt.objects.get(delivery=delivery).error.startswith(("refused:", "invalid URL"))


def test_a_soft_time_limit_during_the_post_is_an_attempt_that_is_retried(receiver, commit, monkeypatch):
    tenant, endpoint = endpoint_for(receiver)
    real_send = httpx.Client.send
    calls = []

    def send(self, request, **kwargs):
        calls.append(request.url)
        if len(calls) == 1:
            raise SoftTimeLimitExceeded()
        return real_send(self, request, **kwargs)

    monkeypatch.setattr(httpx.Client, "send", send)

    apply_seed(SubjectFactory(tenant=tenant), commit)

    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "delivered" and delivery.attempts == 2
    errors = list(delivery.attempt_log.values_list("error", flat=True))
    assert errors[0].startswith("time limit") and errors[1] == ""
    assert len(receiver.requests) == 1


def test_an_unexpected_error_is_recorded_and_gives_up_after_the_attempts(
    receiver, commit, monkeypatch, settings
):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_ATTEMPTS": 2}
    tenant, endpoint = endpoint_for(receiver)

    def broken(self, request, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(httpx.Client, "send", broken)

    apply_seed(SubjectFactory(tenant=tenant), commit)

    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and delivery.attempts == 2 and delivery.subject_external_id == ""
    assert list(delivery.attempt_log.values_list("error", flat=True)) == ["error: RuntimeError"] * 2


def _orphan(endpoint, *, age_s: float, attempts: int = 0, attempt_age_s: float | None = None):
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event_type="version.applied", subject_external_id="lost", payload={"version": 1}
    )
    old = timezone.now() - timedelta(seconds=age_s)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(created_at=old, attempts=attempts)
    for number in range(1, attempts + 1):
        attempt = WebhookAttempt.objects.create(
            delivery=delivery, number=number, status_code=503, error="HTTP 503", duration_ms=1.0
        )
        when = timezone.now() - timedelta(seconds=attempt_age_s if attempt_age_s is not None else age_s)
        WebhookAttempt.objects.filter(pk=attempt.pk).update(created_at=when)
    return delivery.pk


def test_the_sweep_sends_lost_deliveries_again_and_closes_those_out_of_attempts(receiver, settings):
    from personatree_site.settings.base import CELERY_BEAT_SCHEDULE
    from workers.webhooks import ORPHAN_AFTER_S, sweep_webhooks

    assert CELERY_BEAT_SCHEDULE["personatree-sweep-webhooks"]["task"] == "workers.sweep_webhooks"
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_MAX_ATTEMPTS": 3}
    _, endpoint = endpoint_for(receiver)
    lost = _orphan(endpoint, age_s=ORPHAN_AFTER_S + 60)
    lost_after_retries = _orphan(endpoint, age_s=ORPHAN_AFTER_S + 600, attempts=2)
    out_of_attempts = _orphan(endpoint, age_s=ORPHAN_AFTER_S + 600, attempts=3)
    waiting_for_retry = _orphan(endpoint, age_s=ORPHAN_AFTER_S + 600, attempts=1, attempt_age_s=30)
    fresh = _orphan(endpoint, age_s=5)

    assert sweep_webhooks.apply().get() == {"resent": 2}

    status = dict(WebhookDelivery.objects.values_list("pk", "status"))
    assert status[lost] == status[lost_after_retries] == "delivered"
    assert status[out_of_attempts] == "failed"
    assert status[waiting_for_retry] == status[fresh] == "pending"
    assert len(receiver.requests) == 2
    for pk in (lost, lost_after_retries, out_of_attempts):
        assert WebhookDelivery.objects.get(pk=pk).subject_external_id == ""  # finished rows drop it
    assert WebhookDelivery.objects.get(pk=out_of_attempts).last_error.startswith("gave up")


def test_a_late_409_does_not_overwrite_delivered(receiver, commit):
    """Two tasks for one delivery (a redelivered task, a sweep): the first records the 200, the
    second's receiver answers 409 for an id it already has. The delivery stays delivered."""
    tenant, endpoint = endpoint_for(receiver)
    apply_seed(SubjectFactory(tenant=tenant), commit)
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "delivered"

    outcome = webhook_attempt_record(
        delivery_id=delivery.pk, status_code=409, error="HTTP 409", duration_ms=3.0, retryable=False
    )

    delivery.refresh_from_db()
    assert outcome == "delivered" and delivery.status == "delivered" and delivery.last_status_code == 200
    assert list(delivery.attempt_log.values_list("number", "status_code")) == [(1, 200), (2, 409)]


def test_a_late_success_does_not_reopen_a_failed_delivery(receiver, commit):
    tenant, endpoint = endpoint_for(receiver)
    receiver.script = [400]
    apply_seed(SubjectFactory(tenant=tenant), commit)
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed"
    finished_at = delivery.finished_at

    webhook_attempt_record(
        delivery_id=delivery.pk, status_code=200, error="", duration_ms=1.0, retryable=False
    )

    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.finished_at == finished_at
