"""API keys (memory/services/keys.py): every change is audited like a tree change, never with a secret."""

import json

import pytest

from memory.models import ApiKey, AuditEvent
from memory.services.keys import KeyRevoked, api_key_create, api_key_rotate, api_keys_revoke
from memory.services.tree import Actor
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

ADMIN = Actor.system("ops")


def test_create_revoke_rotate_each_write_one_audit_event_with_the_actor():
    tenant = TenantFactory()
    key, raw = api_key_create(tenant=tenant, scopes=["read", "ingest"], name="app", actor=ADMIN)
    new, new_raw = api_key_rotate(key=key, scopes=["read"], actor=ADMIN)
    assert api_keys_revoke(keys=[new, key], actor=Actor("admin", "alice")) == 1  # key is revoked already

    events = list(AuditEvent.objects.filter(tenant=tenant).order_by("id"))
    assert [(e.action, e.object_id) for e in events] == [
        ("key.created", key.prefix),
        ("key.created", new.prefix),
        ("key.rotated", key.prefix),
        ("key.revoked", new.prefix),
    ]
    assert events[0].detail == {"scopes": ["ingest", "read"], "name": "app"}
    assert (events[-1].actor_kind, events[-1].actor_name) == ("admin", "alice")
    stored = json.dumps([[e.detail, e.object_id, str(e)] for e in events])
    for secret in (raw, new_raw, key.hashed, new.hashed):
        assert secret not in stored


def test_a_refused_change_writes_no_audit_event():
    tenant = TenantFactory()
    key, _ = api_key_create(tenant=tenant, scopes=["read"], actor=ADMIN)
    api_keys_revoke(keys=[key], actor=ADMIN)
    before = AuditEvent.objects.count()
    with pytest.raises(KeyRevoked):
        api_key_rotate(key=ApiKey.objects.get(pk=key.pk), scopes=["read"], actor=ADMIN)
    assert AuditEvent.objects.count() == before and ApiKey.objects.filter(tenant=tenant).count() == 1
