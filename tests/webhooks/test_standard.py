"""Standard Webhooks: ``webhook-id``, ``webhook-timestamp``, ``webhook-signature`` that the reference
verifier (the ``standardwebhooks`` package) accepts, and the ``ingest.failed`` event."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from memory.models import Chunk, WebhookEndpoint
from memory.services.webhook_deliveries import standard_key, standard_signature
from memory.services.webhooks import webhook_endpoint_create, webhook_endpoint_rotate_secret
from tests.factories import ChunkFactory, SubjectFactory, TenantFactory
from tests.webhooks.conftest import ACTOR, subscribed
from tests.webhooks.test_delivery import apply_seed
from workers.ordering import chunk_release, chunks_claim

pytestmark = pytest.mark.django_db

# The specification's published test vector (standard-webhooks/standard-webhooks, the libraries' tests).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID, SPEC_TS, SPEC_BODY = "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_signature_matches_the_specs_test_vector():
    assert standard_signature(SPEC_SECRET, SPEC_ID, SPEC_TS, SPEC_BODY) == SPEC_SIGNATURE
    reference = Webhook(SPEC_SECRET).sign(SPEC_ID, datetime.fromtimestamp(SPEC_TS, tz=UTC), SPEC_BODY)
    assert reference == SPEC_SIGNATURE


def test_new_secrets_follow_the_whsec_base64_convention():
    secret = WebhookEndpoint.generate_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 24
    assert standard_key(secret) == base64.b64decode(secret.removeprefix("whsec_"))
    assert standard_key("whsec_not-base64_") == b"whsec_not-base64_"  # an older secret signs as it is


def test_real_deliveries_pass_the_reference_verifier(receiver, commit):
    subject, endpoint, secret = subscribed(receiver.url, "version.applied", external_id="alice")
    receiver.script = [503]

    apply_seed(subject, commit)

    assert len(receiver.requests) == 2
    for request in receiver.requests:
        event = Webhook(secret).verify(request.body, request.headers)
        assert event["type"] == "version.applied" and event["data"]["subject"] == "alice"
        assert request.headers["webhook-id"] == event["id"] == request.headers["personatree-delivery"]
        assert abs(int(request.headers["webhook-timestamp"]) - time.time()) < 60
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(request.body + b" ", request.headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(WebhookEndpoint.generate_secret()).verify(request.body, request.headers)
    first, second = receiver.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"]  # receivers de-duplicate on it

    rotated = webhook_endpoint_rotate_secret(actor=ACTOR, endpoint=endpoint)
    assert rotated != secret and Webhook(rotated)  # a rotated secret is one the reference accepts


def test_a_chunk_given_up_for_good_sends_ingest_failed_without_any_text(receiver, commit, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_MAX_ATTEMPTS": 1}
    subject, _, secret = subscribed(receiver.url, "ingest.failed", external_id="bob")
    chunk = ChunkFactory(subject=subject, start_seq=7, end_seq=12)
    (claim,) = chunks_claim(limit=1)

    with commit():
        status = chunk_release(claim, error="ValueError: model said 'my diagnosis is asthma'", retryable=True)

    assert status == Chunk.Status.FAILED
    (request,) = receiver.requests
    event = Webhook(secret).verify(request.body, request.headers)
    assert event["type"] == "ingest.failed"
    data = event["data"]
    assert {k: data[k] for k in ("subject", "chunk", "from_seq", "to_seq", "attempts")} == {
        "subject": "bob",
        "chunk": chunk.pk,
        "from_seq": 7,
        "to_seq": 12,
        "attempts": 1,
    }
    assert data["error"].startswith("ValueError") and b"asthma" not in request.body
    assert json.loads(request.body)["id"] == request.headers["webhook-id"]


def test_a_chunk_released_for_another_try_sends_nothing(receiver, commit):
    subject, _, _ = subscribed(receiver.url, "ingest.failed")
    ChunkFactory(subject=subject)
    (claim,) = chunks_claim(limit=1)

    with commit():
        assert chunk_release(claim, error="TimeoutError", retryable=True) == Chunk.Status.PENDING

    assert receiver.requests == []


def test_the_documented_library_call_verifies_a_real_delivery(receiver, commit):
    """docs/WEBHOOKS.md's Python example for the Standard Webhooks library, run against a delivery."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "WEBHOOKS.md").read_text(encoding="utf-8")
    blocks = [part.split("```", 1)[0] for part in text.split("```python\n")[1:]]
    (example,) = [block for block in blocks if "standardwebhooks" in block]
    tenant = TenantFactory()
    _, secret = webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url=receiver.url, event_types=["version.applied"]
    )
    apply_seed(SubjectFactory(tenant=tenant), commit)
    (request,) = receiver.requests

    namespace = {"secret": secret, "raw_body": request.body, "request_headers": request.headers}
    exec(compile(example, "docs/WEBHOOKS.md", "exec"), namespace)

    assert namespace["event"]["type"] == "version.applied"
    namespace["raw_body"] = request.body.replace(b"version.applied", b"version.Applied")
    with pytest.raises(WebhookVerificationError):
        exec(compile(example, "docs/WEBHOOKS.md", "exec"), namespace)
