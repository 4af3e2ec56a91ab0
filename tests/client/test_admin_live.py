"""The client's tenant administration against a live server (real HTTP on 127.0.0.1): API keys
(create, list, get, rotate, revoke) and webhooks (register, list, update, rotate the secret,
deliveries, delete), sync and async. Server: ``api_server`` (tests/client/conftest.py)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from personatree_client import (
    ApiKey,
    AsyncPersonaTree,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Message,
    NotFoundError,
    PermissionDeniedError,
    PersonaTree,
    WebhookEndpoint,
)

from tests.webhooks.conftest import _serving

pytestmark = pytest.mark.django_db(transaction=True)

ADMIN = ("admin", "ingest", "read")


def test_api_keys_create_list_rotate_revoke(base_url, make_key):
    with PersonaTree(base_url, make_key(ADMIN)) as admin:
        created = admin.create_api_key(["read", "ingest"], name="reader")
        assert isinstance(created, ApiKey) and created.key and created.key.startswith(created.prefix)
        assert created.scopes == ("ingest", "read") and created.name == "reader" and not created.revoked

        with PersonaTree(base_url, created.key) as reader:  # the raw key works at once
            assert list(reader.subjects()) == []

        listed = list(admin.api_keys(page_size=1))  # two keys, two pages
        assert [k.prefix for k in listed][-1] == created.prefix and len(listed) == 2
        assert all(k.key is None for k in listed)  # raw keys are never listed
        assert admin.api_key(created.prefix).name == "reader"

        rotated = admin.rotate_api_key(created.prefix)
        assert rotated.key and rotated.prefix != created.prefix
        assert (rotated.name, rotated.scopes) == ("reader", created.scopes)
        assert admin.api_key(created.prefix).revoked
        with pytest.raises(ConflictError):
            admin.rotate_api_key(created.prefix)  # a revoked key cannot be rotated

        revoked = admin.revoke_api_key(rotated.prefix)
        assert revoked.revoked and admin.revoke_api_key(rotated.prefix).revoked  # idempotent
        with PersonaTree(base_url, rotated.key, max_retries=0) as gone, pytest.raises(AuthenticationError):
            list(gone.subjects())

        with pytest.raises(PermissionDeniedError):
            admin.create_api_key(["erase"])  # a key hands out no scope it lacks
        with pytest.raises(NotFoundError):
            admin.api_key("pt_live_nosuchkey")


def test_admin_calls_need_the_admin_scope(base_url, make_key):
    with PersonaTree(base_url, make_key(("ingest", "read"))) as pt:
        with pytest.raises(PermissionDeniedError):
            list(pt.api_keys())
        with pytest.raises(PermissionDeniedError):
            next(pt.webhooks())


def test_another_tenants_key_is_not_found(base_url, make_key):
    with PersonaTree(base_url, make_key(ADMIN)) as one, PersonaTree(base_url, make_key(ADMIN)) as two:
        prefix = one.create_api_key(["read"]).prefix
        with pytest.raises(NotFoundError):
            two.revoke_api_key(prefix)
        assert not one.api_key(prefix).revoked


def test_webhooks_register_update_deliveries_delete(base_url, make_key, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_ALLOW_PRIVATE_TARGETS": True}
    with _serving() as receiver, PersonaTree(base_url, make_key(ADMIN)) as pt:
        hook = pt.register_webhook(receiver.url, ["version.applied"], description="tests")
        assert isinstance(hook, WebhookEndpoint) and hook.secret and hook.secret.startswith("whsec_")
        assert (hook.url, hook.event_types, hook.is_active) == (receiver.url, ("version.applied",), True)
        assert [w.id for w in pt.webhooks()] == [hook.id] and pt.webhook(hook.id).secret is None

        pt.ingest("user-1", [Message("user", "I work as a nurse at the city hospital.", "k1")])
        pt.wait_until_applied("user-1", timeout=30)
        deliveries = list(pt.webhook_deliveries(str(hook.id)))
        assert deliveries and deliveries[0].event_type == "version.applied"
        assert deliveries[0].status == "delivered" and deliveries[0].attempts[0].status_code == 200
        assert len(receiver.requests) == len(deliveries)

        changed = pt.update_webhook(hook.id, is_active=False, event_types=["subject.erased"])
        assert (changed.is_active, changed.event_types, changed.url) == (
            False,
            ("subject.erased",),
            receiver.url,
        )
        new_secret = pt.rotate_webhook_secret(hook.id).secret
        assert new_secret and new_secret != hook.secret

        pt.delete_webhook(hook.id)
        assert list(pt.webhooks()) == []
        with pytest.raises(NotFoundError):
            pt.delete_webhook(hook.id)
        with pytest.raises(NotFoundError):
            pt.webhook(uuid.uuid4())


def test_webhook_url_must_be_public_by_default(base_url, make_key):
    with PersonaTree(base_url, make_key(ADMIN)) as pt:
        with pytest.raises(BadRequestError) as err:
            pt.register_webhook("http://127.0.0.1:9/hook", ["version.applied"])
        assert err.value.code == "invalid_url"
        with pytest.raises(ValueError):
            pt.webhook("not-a-uuid")  # refused before anything is sent


def test_async_client_admin_operations(base_url, make_key):
    raw = make_key(ADMIN)  # the ORM outside the event loop

    async def main() -> None:
        async with AsyncPersonaTree(base_url, raw) as pt:
            key = await pt.create_api_key(["read"], name="async")
            assert key.key and (await pt.api_key(key.prefix)).name == "async"
            assert (await pt.revoke_api_key(key.prefix)).revoked
            hook = await pt.register_webhook("https://hooks.example.com/pt", ["review.decided"])
            assert [w.id async for w in pt.webhooks()] == [hook.id]
            assert [d async for d in pt.webhook_deliveries(hook.id)] == []
            await pt.delete_webhook(hook.id)
            assert [w async for w in pt.webhooks()] == []

    asyncio.run(main())
