"""POST /v1/subjects/<id>/search: ranked leaves, tiers, prefix, time range, scopes, tenants, bad input.

Leaves are written through the one write service (so each has its audit row and a set time);
evidence needs the index and is tested in tests/memory/recall/test_api_search.py. Here the key
without read_special gets ``evidence_status == "withheld"`` and the index is never touched.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from memory.models import OpRecord
from memory.recall import runtime
from memory.services.tree import Actor, leaf_edit
from tests.factories import SubjectFactory
from tests.memory.recall.conftest import put_version

pytestmark = pytest.mark.django_db

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
MAY = datetime(2026, 5, 1, tzinfo=UTC)


def _set(subject, path, value, when):
    outcome = leaf_edit(subject=subject, path=path, value=value, actor=Actor("system", "test"))
    assert outcome.applied, outcome
    OpRecord.objects.filter(subject=subject, path=path).update(created_at=when)
    subject.refresh_from_db()


@pytest.fixture
def alice(tenant):
    subject = SubjectFactory(tenant=tenant, external_id="alice")
    put_version(subject, {"body/health/injuries": "knee pain from running"})  # special tier, no op row
    _set(subject, "behaviour/habits/exercise", "swims three times a week", MARCH)
    _set(subject, "identity/location/current_city", "Lisbon", MAY)
    _set(subject, "behaviour/hobbies/creative", "plays the cello in an orchestra", MAY)
    return subject


def _search(client, external_id, body):
    return client.post(reverse("subject-search", args=[external_id]), body, format="json")


@pytest.fixture
def no_index(monkeypatch):
    def refuse():
        raise AssertionError("the evidence index must not be searched for this key")

    monkeypatch.setattr(runtime, "configured_index", refuse)


def test_leaves_ranked_public_tiers_only_and_evidence_withheld(alice, make_api_client, no_index):
    client, _ = make_api_client(alice.tenant, scopes=["read"])
    r = _search(client, "alice", {"query": "what sport does she do for exercise"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["leaves"][0]["path"] == "behaviour/habits/exercise"
    assert body["leaves"][0]["set_at"].startswith("2026-03-01")
    assert all(h["tier"] != "special" for h in body["leaves"])
    scores = [h["score"] for h in body["leaves"]]
    assert scores == sorted(scores, reverse=True)
    assert body["evidence"] == [] and body["evidence_status"] == "withheld"
    assert any("read_special" in n for n in body["notices"])
    assert body["version"] == alice.head_version


def test_read_special_key_finds_special_leaves(alice, make_api_client, monkeypatch):
    monkeypatch.setattr("memory.services.search._evidence", lambda *a, **k: ("ok", []))
    client, _ = make_api_client(alice.tenant, scopes=["read", "read_special"])
    body = _search(client, "alice", {"query": "knee injury"}).json()
    assert body["leaves"][0]["path"] == "body/health/injuries"
    assert body["leaves"][0]["set_at"] is None  # written without an op (an import): time unknown


def test_prefix_and_time_range_filter_leaves(alice, make_api_client, no_index):
    client, _ = make_api_client(alice.tenant, scopes=["read"])
    under = _search(client, "alice", {"query": "cello orchestra hobby", "prefix": "identity/"}).json()
    assert all(h["path"].startswith("identity/") for h in under["leaves"])
    assert "behaviour/hobbies/creative" not in [h["path"] for h in under["leaves"]]
    since = _search(client, "alice", {"query": "exercise sport swimming", "since": "2026-04-01"}).json()
    assert "behaviour/habits/exercise" not in [h["path"] for h in since["leaves"]]
    until = _search(client, "alice", {"query": "exercise sport swimming", "until": "2026-04-01T00:00:00Z"})
    assert [h["path"] for h in until.json()["leaves"]] == ["behaviour/habits/exercise"]


def test_limit_caps_the_leaves(alice, make_api_client, no_index):
    client, _ = make_api_client(alice.tenant, scopes=["read"])
    body = _search(client, "alice", {"query": "where does she live and what does she do", "limit": 1}).json()
    assert len(body["leaves"]) <= 1


def test_other_tenants_subject_is_404_and_scope_read_is_needed(alice, other_tenant, make_api_client):
    foreign, _ = make_api_client(other_tenant, scopes=["read", "read_special"])
    r = _search(foreign, "alice", {"query": "Lisbon"})
    assert r.status_code == 404 and "Lisbon" not in r.content.decode()
    ingest_only, _ = make_api_client(alice.tenant, scopes=["ingest"])
    r = _search(ingest_only, "alice", {"query": "Lisbon"})
    assert r.status_code == 403 and "read" in r.json()["detail"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 51}, "limit"),
        ({"query": "x", "since": "12"}, "since"),
        ({"query": "x", "until": "yesterday"}, "until"),
        ({"query": "x", "since": "2026-05-01", "until": "2026-04-01"}, "since"),
        ({"query": "x", "prefix": ["health/"]}, "prefix"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice, make_api_client, body, field, no_index):
    client, _ = make_api_client(alice.tenant, scopes=["read"])
    r = _search(client, "alice", body)
    assert r.status_code == 400, r.content
    fields = {e.get("field") for e in r.json().get("errors", [])} | {r.json().get("field")}
    assert field in fields, r.json()


def test_a_query_on_nothing_the_tree_holds_finds_no_leaf(alice, make_api_client, no_index):
    client, _ = make_api_client(alice.tenant, scopes=["read"])
    body = _search(client, "alice", {"query": "which car brand"}).json()
    assert body["leaves"] == []
