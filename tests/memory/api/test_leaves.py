"""One leaf through the API (issue 17): read, set and empty, gated and audited as the API key."""

from urllib.parse import quote

import pytest
from django.urls import reverse

from memory.engine.ops import Op
from memory.engine.schema import default_schema
from memory.models import OpRecord, Subject, TreeVersion
from memory.services.tree import Actor, tree_apply_ops

pytestmark = pytest.mark.django_db

STYLE = "body/appearance/style"  # normal tier
ROLE = "identity/occupation/current_role"  # personal tier
HEALTH = "body/health/conditions"  # special tier


def leaf_url(subject, path, external_id=None):
    return reverse(
        "subject-leaf", kwargs={"external_id": external_id or subject.external_id, "leaf_path": path}
    )


@pytest.fixture
def filled(subject, admin_user):
    actor = Actor.for_admin(admin_user)
    tree_apply_ops(
        subject=subject, base_version=0, ops=[Op.add(STYLE, "linen"), Op.add(HEALTH, "asthma")], actor=actor
    )
    tree_apply_ops(subject=subject, base_version=1, ops=[Op.update(STYLE, "denim")], actor=actor)
    return subject


def head(subject) -> int:
    return Subject.objects.get(pk=subject.pk).head_version


def test_read_a_leaf_now_and_as_of(filled, make_api_client):
    client, _ = make_api_client(filled.tenant, scopes=["read"])
    body = client.get(leaf_url(filled, STYLE)).json()
    assert body == {
        "subject": filled.external_id,
        "path": STYLE,
        "tier": "normal",
        "budget": default_schema().leaf(STYLE).budget,
        "value": "denim",
        "version": 2,
    }
    assert client.get(leaf_url(filled, STYLE), {"as_of": 1}).json()["value"] == "linen"
    assert client.get(leaf_url(filled, ROLE)).json()["value"] is None  # a known, empty leaf
    # The path's slashes may come encoded.
    encoded = (
        reverse("subject-tree", kwargs={"external_id": filled.external_id})
        + "/leaves/"
        + quote(STYLE, safe="")
    )
    assert client.get(encoded).json()["value"] == "denim"
    missing = client.get(leaf_url(filled, STYLE), {"as_of": 9})
    assert missing.status_code == 404 and missing.json()["field"] == "as_of"


@pytest.mark.parametrize("path", ["body/appearance", "no/such/leaf", "body/appearance/style/x", "a\x00b"])
def test_a_path_the_schema_lacks_is_a_404_and_writes_nothing(filled, make_api_client, path):
    client, _ = make_api_client(filled.tenant, scopes=["read", "write"])
    records = OpRecord.objects.count()
    for response in (
        client.get(leaf_url(filled, path)),
        client.put(leaf_url(filled, path), {"value": "x"}, format="json"),
        client.delete(leaf_url(filled, path)),
    ):
        assert response.status_code == 404, response.content[:300]
        assert response.json()["code"] == "unknown_leaf"
    assert OpRecord.objects.count() == records and head(filled) == 2


def test_special_tier_leaf_needs_read_special_for_every_method(filled, make_api_client):
    plain, _ = make_api_client(filled.tenant, scopes=["read", "write"])
    for response in (
        plain.get(leaf_url(filled, HEALTH)),
        plain.put(leaf_url(filled, HEALTH), {"value": "none"}, format="json"),
        plain.delete(leaf_url(filled, HEALTH)),
    ):
        assert response.status_code == 403 and "read_special" in response.json()["detail"]
    special, _ = make_api_client(filled.tenant, scopes=["read", "read_special"])
    assert special.get(leaf_url(filled, HEALTH)).json()["value"] == "asthma"


def test_writes_need_the_write_scope_and_another_tenant_sees_a_404(filled, make_api_client, other_tenant):
    reader, _ = make_api_client(filled.tenant, scopes=["read", "ingest", "admin"])
    assert reader.put(leaf_url(filled, STYLE), {"value": "wool"}, format="json").status_code == 403
    assert reader.delete(leaf_url(filled, STYLE)).status_code == 403
    foreign, _ = make_api_client(other_tenant, scopes=["read", "write"])
    assert foreign.put(leaf_url(filled, STYLE), {"value": "wool"}, format="json").status_code == 404
    assert head(filled) == 2


def test_put_sets_the_leaf_through_the_gate_audited_as_the_key(filled, make_api_client):
    client, key = make_api_client(filled.tenant, scopes=["read", "write"])
    response = client.put(
        leaf_url(filled, STYLE), {"value": "  wool   coats ", "base_version": 2}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["value"], body["version"]) == (
        "applied",
        "wool coats",
        3,
    )  # normalised by the gate
    record = OpRecord.objects.get(pk=body["op_id"])
    assert (record.actor_kind, record.actor_name, record.api_key_id) == ("api_key", key.prefix, key.pk)
    assert (record.op_type, record.old_value, record.new_value, record.status) == (
        "UPDATE",
        "denim",
        "wool coats",
        "applied",
    )
    version = TreeVersion.objects.get(subject=filled, number=3)
    assert version.snapshot[STYLE] == "wool coats" and record.version_id == version.pk

    added = client.put(leaf_url(filled, ROLE), {"value": "nurse"}, format="json").json()
    assert (added["status"], added["version"]) == ("applied", 4)
    assert OpRecord.objects.get(pk=added["op_id"]).op_type == "ADD"

    same = client.put(leaf_url(filled, ROLE), {"value": "nurse"}, format="json")
    assert same.status_code == 200 and same.json()["status"] == "unchanged" and head(filled) == 4


def test_the_gates_refusal_is_a_400_with_its_reason_and_is_audited(filled, make_api_client):
    client, _ = make_api_client(filled.tenant, scopes=["write"])
    budget = default_schema().leaf(STYLE).budget
    response = client.put(leaf_url(filled, STYLE), {"value": "x" * (budget + 1)}, format="json")
    assert response.status_code == 400
    error = response.json()
    assert (error["code"], error["reason"], error["field"]) == ("gate_rejected", "OVER_BUDGET", "value")
    assert f"budget {budget}" in error["detail"]
    assert OpRecord.objects.get(pk=error["op_id"]).status == "rejected"
    blank = client.put(leaf_url(filled, STYLE), {"value": "   "}, format="json").json()
    assert blank["reason"] == "EMPTY_VALUE"
    assert head(filled) == 2


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"value": None},
        {"value": ""},
        {"value": 5},
        {"value": "x" * 5000},
        {"value": "ok", "base_version": -1},
    ],
)
def test_bad_bodies_are_json_400s(filled, make_api_client, body):
    client, _ = make_api_client(filled.tenant, scopes=["write"])
    response = client.put(leaf_url(filled, STYLE), body, format="json")
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert response.json()["field"] in ("value", "base_version")


def test_stale_base_version_is_a_409(filled, make_api_client):
    client, _ = make_api_client(filled.tenant, scopes=["write"])
    response = client.put(leaf_url(filled, STYLE), {"value": "wool", "base_version": 1}, format="json")
    assert response.status_code == 409
    assert response.json()["current_version"] == 2
    stale_delete = client.delete(leaf_url(filled, STYLE) + "?base_version=1")
    assert stale_delete.status_code == 409 and head(filled) == 2


def test_delete_empties_the_leaf_and_an_empty_leaf_is_a_404(filled, make_api_client):
    client, key = make_api_client(filled.tenant, scopes=["write"])
    response = client.delete(leaf_url(filled, STYLE) + "?base_version=2")
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["value"], body["version"]) == ("applied", None, 3)
    record = OpRecord.objects.get(pk=body["op_id"])
    assert (record.op_type, record.old_value, record.api_key_id) == ("DELETE", "denim", key.pk)
    assert STYLE not in TreeVersion.objects.get(subject=filled, number=3).snapshot
    again = client.delete(leaf_url(filled, STYLE))
    assert again.status_code == 404
    assert (again.json()["code"], again.json()["reason"]) == (
        "leaf_empty",
        "DELETE_ON_EMPTY",
    )


def test_special_tier_writes_are_held_for_review(filled, make_api_client):
    client, _ = make_api_client(filled.tenant, scopes=["read", "read_special", "write"])
    response = client.put(leaf_url(filled, HEALTH), {"value": "asthma, hay fever"}, format="json")
    assert response.status_code == 202
    body = response.json()
    assert (body["status"], body["value"], body["version"]) == ("pending_review", "asthma", 2)
    assert OpRecord.objects.get(pk=body["op_id"]).status == "pending_review"
    deleted = client.delete(leaf_url(filled, HEALTH))
    assert deleted.status_code == 202 and head(filled) == 2
