"""POST /v1/subjects/<id>/search with evidence: real Milvus Lite + MiniLM, time range, tenants."""

import pytest
from django.urls import reverse

from memory.recall.indexing import evidence_index_span
from tests.factories import SubjectFactory
from tests.memory.recall.conftest import add_messages, put_version

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

# add_messages dates pair i at T0 (2024-03-01 09:00 UTC) + seq + i minutes: 09:01, 09:04, 09:07
PAIRS = [
    ("I adopted a grey cat called Pixel", "Lovely name!"),
    ("my knee hurts after running, so I switched to swimming", "Swimming is gentle on joints."),
    ("we moved to Lisbon in March and I feed Pixel twice a day", "Exciting move!"),
]


@pytest.fixture
def world(recall_settings, tenant, other_tenant, make_api_client):
    alice = SubjectFactory(tenant=tenant, external_id="alice")
    last = add_messages(alice, PAIRS)
    put_version(alice, {"behaviour/habits/exercise": "swimming"}, span=(1, last))
    evidence_index_span(subject_id=alice.pk, start_seq=1, end_seq=last)
    other = SubjectFactory(tenant=other_tenant, external_id="alice")  # same id, other tenant
    add_messages(other, [("my secret password is hunter2 and my cat is Pixel", "ok")])
    evidence_index_span(subject_id=other.pk, start_seq=1, end_seq=2)
    special, _ = make_api_client(tenant, scopes=["read", "read_special"])
    foreign, _ = make_api_client(other_tenant, scopes=["read", "read_special"])
    return {"special": special, "foreign": foreign}


def _search(client, body):
    return client.post(reverse("subject-search", args=["alice"]), body, format="json")


def test_evidence_is_ranked_and_stays_in_its_tenant(world):
    r = _search(world["special"], {"query": "my cat Pixel"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["evidence_status"] == "ok" and body["evidence"]
    assert "Pixel" in body["evidence"][0]["text"]
    assert all("hunter2" not in e["text"] for e in body["evidence"])
    assert body["evidence"][0]["source"]["ts"].startswith("2024-03-01T09:")
    foreign = _search(world["foreign"], {"query": "my cat Pixel"}).json()
    assert all("hunter2" in e["text"] for e in foreign["evidence"])


def test_time_range_filters_evidence_in_the_index(world):
    late = _search(world["special"], {"query": "Pixel", "since": "2024-03-01T09:05:00Z"}).json()
    assert late["evidence"] and all(e["source"]["start_seq"] == 5 for e in late["evidence"])
    early = _search(world["special"], {"query": "Pixel", "until": "2024-03-01T09:02:00Z"}).json()
    assert [e["source"]["start_seq"] for e in early["evidence"]] == [1]
    none = _search(world["special"], {"query": "Pixel", "since": "2025-01-01T00:00:00Z"}).json()
    assert none["evidence"] == [] and none["evidence_status"] == "ok"
