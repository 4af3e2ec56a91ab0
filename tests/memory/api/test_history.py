"""A leaf's history, the diff of two versions and a revert over the API: tiers, scopes, tenants."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory import selectors
from memory.models import Subject
from tests.factories import SubjectFactory
from tests.memory.recall.conftest import put_version

pytestmark = pytest.mark.django_db

SPORT, CITY, INJURY = "behaviour/habits/exercise", "identity/location/current_city", "body/health/injuries"


@pytest.fixture
def world(tenant, other_tenant, make_api_client):
    alice = SubjectFactory(tenant=tenant, external_id="alice")
    writer, key = make_api_client(tenant, scopes=["read", "write"])
    for path, value in ((SPORT, "running"), (SPORT, "swimming"), (CITY, "Lisbon")):  # versions 1, 2, 3
        r = writer.put(reverse("subject-leaf", args=["alice", path]), {"value": value}, format="json")
        assert r.status_code == 200, r.content
    alice.refresh_from_db()
    put_version(alice, {**selectors.tree_current(alice).to_dict(), INJURY: "knee pain"})  # version 4
    special, _ = make_api_client(tenant, scopes=["read", "read_special", "write"])
    reader, _ = make_api_client(tenant, scopes=["read"])
    foreign, _ = make_api_client(other_tenant, scopes=["read", "read_special", "write"])
    SubjectFactory(tenant=other_tenant, external_id="bob")
    return {"writer": writer, "key": key, "special": special, "reader": reader, "foreign": foreign}


def _history(client, path, **params):
    return client.get(reverse("subject-leaf-history", args=["alice", path]), params)


def test_leaf_history_lists_every_value_oldest_first(world):
    r = _history(world["reader"], SPORT)
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["path"] == SPORT and body["next"] is None
    assert [(c["version"], c["op"], c["previous"], c["value"]) for c in body["changes"]] == [
        (1, "ADD", None, "running"),
        (2, "UPDATE", "running", "swimming"),
    ]
    assert body["changes"][0]["actor"]["kind"] == "api_key"
    assert body["changes"][0]["actor"]["name"] == world["key"].prefix


def test_leaf_history_pages(world):
    first = _history(world["reader"], SPORT, page_size=1).json()
    assert [c["value"] for c in first["changes"]] == ["running"] and first["next"]
    second = world["reader"].get(first["next"]).json()
    assert [c["value"] for c in second["changes"]] == ["swimming"] and second["next"] is None


def test_leaf_history_of_a_special_leaf_needs_read_special(world):
    assert _history(world["reader"], INJURY).status_code == 403
    assert _history(world["special"], INJURY).status_code == 200
    r = _history(world["reader"], "no/such/leaf")
    assert r.status_code == 404 and r.json()["code"] == "unknown_leaf"


def test_diff_between_versions_over_the_visible_leaves(world):
    r = world["reader"].get(reverse("subject-version-diff", args=["alice", 1, 3]))
    assert r.status_code == 200, r.content
    assert r.json()["changes"] == [
        {"path": SPORT, "old": "running", "new": "swimming", "op": "UPDATE"},
        {"path": CITY, "old": None, "new": "Lisbon", "op": "ADD"},
    ]
    hidden = world["reader"].get(reverse("subject-version-diff", args=["alice", 3, 4])).json()
    assert hidden["changes"] == []
    seen = world["special"].get(reverse("subject-version-diff", args=["alice", 3, 4])).json()
    assert seen["changes"] == [{"path": INJURY, "old": None, "new": "knee pain", "op": "ADD"}]
    missing = world["reader"].get(reverse("subject-version-diff", args=["alice", 1, 99]))
    assert missing.status_code == 404 and missing.json()["field"] == "b"


def test_revert_through_the_write_path(world):
    url = reverse("subject-version-revert", args=["alice", 3])
    hidden = world["writer"].post(url, {}, format="json")
    assert hidden.status_code == 403  # it would delete the special leaf this key cannot see
    stale = world["special"].post(url, {"base_version": 3}, format="json")
    assert stale.status_code == 409 and stale.json()["code"] == "version_conflict"
    r = world["special"].post(url, {"base_version": 4}, format="json")
    assert r.status_code in (200, 202), r.content  # the special leaf's delete may be held for review
    body = r.json()
    assert body["reverted_to"] == 3 and body["changes"] == [
        {"path": INJURY, "old": "knee pain", "new": None, "op": "DELETE"}
    ]
    subject = Subject.objects.get(tenant=world["key"].tenant, external_id="alice")
    assert subject.head.created_by == "revert" or body["status"] == "pending_review"


def test_revert_of_public_leaves_applies_and_again_is_unchanged(world):
    url = reverse("subject-version-revert", args=["alice", 1])
    world["special"].delete(reverse("subject-leaf", args=["alice", INJURY]))  # held or applied: may stay
    subject = Subject.objects.get(tenant=world["key"].tenant, external_id="alice")
    put_version(subject, {SPORT: "swimming", CITY: "Lisbon"})  # no special leaf at the head
    r = world["writer"].post(url, {}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["status"] == "applied" and r.json()["changes"] == [
        {"path": SPORT, "old": "swimming", "new": "running", "op": "UPDATE"},
        {"path": CITY, "old": "Lisbon", "new": None, "op": "DELETE"},
    ]
    subject.refresh_from_db()
    assert selectors.tree_current(subject).to_dict() == {SPORT: "running"}
    assert subject.head.created_by == "revert" and r.json()["head_version"] == subject.head_version
    again = world["writer"].post(url, {}, format="json")
    assert again.status_code == 200 and again.json()["status"] == "unchanged"


def test_scopes_and_tenants(world):
    assert world["reader"].post(reverse("subject-version-revert", args=["alice", 1])).status_code == 403
    for response in (
        _history(world["foreign"], SPORT),
        world["foreign"].get(reverse("subject-version-diff", args=["alice", 1, 2])),
        world["foreign"].post(reverse("subject-version-revert", args=["alice", 1])),
    ):
        assert response.status_code == 404, response.content
        assert "swimming" not in response.content.decode()
    missing = world["writer"].post(reverse("subject-version-revert", args=["alice", 99]))
    assert missing.status_code == 404


def test_get_one_subject(world, make_api_client, tenant):
    r = world["reader"].get(reverse("subject-detail", args=["alice"]))
    assert r.status_code == 200, r.content
    assert r.json()["external_id"] == "alice" and r.json()["head_version"] == 4
    assert r.json()["schema_id"] == "personatree-default"
    assert world["foreign"].get(reverse("subject-detail", args=["alice"])).status_code == 404
    ingest_only, _ = make_api_client(tenant, scopes=["ingest"])
    assert ingest_only.get(reverse("subject-detail", args=["alice"])).status_code == 403
