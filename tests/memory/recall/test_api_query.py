"""POST /v1/subjects/<id>/context and /answer over HTTP (DRF test client), real Milvus Lite + MiniLM."""

import pytest
from django.urls import reverse

from memory.recall import runtime
from memory.recall.indexing import evidence_index_span
from serving.engines.base import Generation
from tests.factories import SubjectFactory
from tests.memory.recall.conftest import add_messages, put_version

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

PAIRS = [
    ("I adopted a grey cat called Pixel", "Lovely name!"),
    ("my knee hurts after running, so I switched to swimming", "Swimming is gentle on joints."),
    ("we moved to Lisbon in March", "Exciting move!"),
]
TREE = {
    "behaviour/habits/exercise": "swimming",
    "body/health/injuries": "knee pain from running",  # special tier
}


class FixedEngine:
    model_id = "test-double"

    def __init__(self, text):
        self.text = text
        self.prompts = []

    def generate(self, prompts, json_schema=None):
        self.prompts.extend(prompts)
        return [Generation(text=self.text, model_id=self.model_id) for _ in prompts]


@pytest.fixture
def world(recall_settings, tenant, other_tenant, make_api_client):
    alice = SubjectFactory(tenant=tenant, external_id="alice")
    last = add_messages(alice, PAIRS)
    put_version(alice, {"behaviour/habits/exercise": "running"}, span=(1, 2))
    put_version(alice, TREE, span=(3, last))
    evidence_index_span(subject_id=alice.pk, start_seq=1, end_seq=last)
    mallory_subject = SubjectFactory(
        tenant=other_tenant, external_id="alice"
    )  # same external id, other tenant
    add_messages(mallory_subject, [("my secret password is hunter2 and my cat is Pixel", "ok")])
    evidence_index_span(subject_id=mallory_subject.pk, start_seq=1, end_seq=2)
    client, _ = make_api_client(tenant, scopes=["read"])
    special_client, _ = make_api_client(tenant, scopes=["read", "read_special"])
    foreign_client, _ = make_api_client(other_tenant, scopes=["read", "read_special"])
    return {"alice": alice, "client": client, "special": special_client, "foreign": foreign_client}


def _post(client, name, external_id, body):
    return client.post(reverse(name, args=[external_id]), body, format="json")


def test_fast_mode_renders_tree_without_special_tier(world):
    r = _post(world["client"], "subject-context", "alice", {"query": "what sport", "mode": "fast"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["mode_used"] == "fast" and body["version"] == 2 and body["evidence"] == []
    assert "swimming" in body["context"]["text"] and "knee" not in body["context"]["text"]
    assert body["context"]["paths"] == ["behaviour/habits/exercise"]
    assert body["context"]["tokens"] > 0 and "total_ms" in body["timings_ms"]


def test_read_special_scope_sees_special_leaves(world):
    r = _post(world["special"], "subject-context", "alice", {"query": "injuries", "mode": "fast"})
    assert "knee pain" in r.json()["context"]["text"]


def test_fast_mode_query_count(world, django_assert_max_num_queries):
    # A key's first request of a minute also writes its last_used_at (one UPDATE): measure after it.
    _post(world["client"], "subject-context", "alice", {"query": "what sport", "mode": "fast"})
    with django_assert_max_num_queries(2):  # api key lookup + subject with its head version
        r = _post(world["client"], "subject-context", "alice", {"query": "what sport", "mode": "fast"})
    assert r.status_code == 200


def test_deep_mode_returns_scoped_evidence_and_says_expansion_was_skipped(world):
    r = _post(world["special"], "subject-context", "alice", {"query": "my cat Pixel", "mode": "deep"})
    body = r.json()
    assert body["mode_used"] == "deep"
    assert body["evidence"][0]["source"]["start_seq"] == 1
    assert "Pixel" in body["evidence"][0]["text"]
    assert all("hunter2" not in e["text"] for e in body["evidence"])
    assert body["recall"]["expansion"]["status"] == "unavailable"
    assert any("query expansion skipped" in n for n in body["notices"])
    assert body["tokens"] == body["context"]["tokens"] + sum(e["tokens"] for e in body["evidence"])


def test_auto_mode_reports_router_decision(world):
    fast = _post(world["client"], "subject-context", "alice", {"query": "exercise habits: swimming?"}).json()
    assert fast["mode"] == "auto" and fast["router"]["mode"] == "fast" and fast["mode_used"] == "fast"
    deep = _post(world["special"], "subject-context", "alice", {"query": "why did I move to Lisbon?"}).json()
    assert deep["router"]["mode"] == "deep" and deep["mode_used"] == "deep"
    assert "cue" in deep["router"]["reason"]


def _no_index(*args, **kwargs):
    raise AssertionError("the evidence index must not be searched for a key that may not see evidence")


@pytest.mark.parametrize("mode", ["deep", "auto"])
def test_evidence_is_withheld_from_keys_without_read_special(world, monkeypatch, mode):
    # Raw dialogue is unclassified: "my knee hurts after running" is the special-tier health fact
    # verbatim. A key that may not see special leaves gets no evidence and no search at all.
    monkeypatch.setattr(runtime, "configured_index", _no_index)
    body = _post(world["client"], "subject-context", "alice", {"query": "why do I swim now?", "mode": mode})
    body = body.json()
    assert body["router"]["mode"] == "deep" and body["mode_used"] == "fast"
    assert body["evidence"] == [] and body["recall"]["status"] == "withheld"
    assert any("evidence withheld" in n and "read_special" in n for n in body["notices"])
    assert "knee" not in str(body) and "swimming" in body["context"]["text"]


def test_as_of_uses_old_tree_and_hides_later_evidence(world):
    r = _post(
        world["special"], "subject-context", "alice", {"query": "Lisbon move", "mode": "deep", "as_of": 1}
    )
    body = r.json()
    assert body["version"] == 1 and "running" in body["context"]["text"]
    assert body["recall"]["evidence_cutoff_seq"] == 2
    assert {e["source"]["end_seq"] for e in body["evidence"]} <= {2}


@pytest.mark.parametrize("name", ["subject-context", "subject-answer"])
@pytest.mark.parametrize(
    "external_id", ["alice", "nobody", "1 or tenant_id > 0", '" || true', "alice' OR 1=1 --"]
)
def test_other_tenants_subject_is_a_404_like_a_missing_one(world, name, external_id):
    # The foreign tenant also has an "alice": it must get its own, never ours; everything else is 404.
    r = _post(world["foreign"], name, external_id, {"query": "cat Pixel", "mode": "deep"})
    if external_id == "alice" and name == "subject-context":
        assert r.status_code == 200
        assert all("grey cat" not in e["text"] for e in r.json()["evidence"])
        assert "swimming" not in r.json()["context"]["text"]
    elif external_id == "alice":  # its own subject: an extractive answer from its own memory only
        assert r.status_code == 200
        assert "swimming" not in r.json()["answer"] and "grey cat" not in r.json()["answer"]
    else:
        assert r.status_code == 404
        assert (r.json()["code"], r.json()["detail"]) == ("not_found", "Subject not found.")


@pytest.mark.parametrize("query", ["1 or tenant_id > 0", '" || true', "subject_id >= 0 or true"])
def test_crafted_queries_do_not_cross_subjects(world, query):
    r = _post(world["special"], "subject-context", "alice", {"query": query, "mode": "deep"})
    assert r.status_code == 200 and r.json()["mode_used"] == "deep"
    assert all("hunter2" not in e["text"] for e in r.json()["evidence"])


@pytest.mark.parametrize(
    "body,field",
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({}, "query"),
        ({"query": "ok", "mode": "slow"}, "mode"),
        ({"query": "ok", "as_of": "yesterday"}, "as_of"),
        ({"query": "ok", "as_of": -1}, "as_of"),
        # as_of naming a version the subject lacks is a 404: tests/memory/api/test_pages.py
        ({"query": "ok", "token_budget": 0}, "token_budget"),
        ({"query": "ok", "token_budget": "lots"}, "token_budget"),
    ],
)
def test_bad_input_is_400_naming_the_field(world, body, field):
    r = _post(world["client"], "subject-context", "alice", body)
    assert r.status_code == 400, r.content
    assert r.json()["field"] == field


def test_scope_read_is_required(world, make_api_client, tenant):
    client, _ = make_api_client(tenant, scopes=["ingest"])
    assert _post(client, "subject-context", "alice", {"query": "x"}).status_code == 403


def test_milvus_down_falls_back_to_fast_and_says_so(world, settings):
    runtime.reset_runtime()
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MILVUS_URI": "http://127.0.0.1:9",
        "MILVUS_TIMEOUT_S": 1.0,
    }
    body = _post(world["special"], "subject-context", "alice", {"query": "cat", "mode": "deep"}).json()
    assert body["mode_used"] == "fast" and body["recall"]["fallback"] == "fast"
    assert any("evidence recall unavailable" in n for n in body["notices"])
    assert "swimming" in body["context"]["text"]


@pytest.fixture
def model_mode(settings):
    """Answers by the responder model (PERSONATREE_ANSWER_MODE=model); extractive is the default."""
    settings.PERSONATREE = {**settings.PERSONATREE, "ANSWER_MODE": "model"}


@pytest.mark.usefixtures("model_mode")
def test_answer_uses_query_tree_and_evidence(world, monkeypatch):
    engine = FixedEngine("Your cat is Pixel.")
    monkeypatch.setattr(runtime, "responder_engine", lambda: (engine, ""))
    r = _post(
        world["special"], "subject-answer", "alice", {"query": "what is my cat called?", "mode": "deep"}
    )
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["answer"] == "Your cat is Pixel." and body["model"]["model_id"] == "test-double"
    answer_prompt = engine.prompts[-1].dynamic
    assert (
        "what is my cat called?" in answer_prompt and "swimming" in answer_prompt and "Pixel" in answer_prompt
    )
    assert "answer_ms" in body["timings_ms"]


@pytest.mark.usefixtures("model_mode")
def test_answer_without_read_special_sees_neither_special_leaves_nor_evidence(world, monkeypatch):
    engine = FixedEngine("You swim.")
    monkeypatch.setattr(runtime, "responder_engine", lambda: (engine, ""))
    r = _post(world["client"], "subject-answer", "alice", {"query": "why do I swim?", "mode": "deep"})
    assert r.status_code == 200, r.content
    answer_prompt = engine.prompts[-1].dynamic
    assert "swimming" in answer_prompt and "Conversation evidence" not in answer_prompt
    assert "knee" not in answer_prompt  # neither the special leaf nor the dialogue that stated it
    assert r.json()["recall"]["status"] == "withheld"


@pytest.mark.usefixtures("model_mode")
def test_answer_without_model_is_503(world):
    r = _post(world["client"], "subject-answer", "alice", {"query": "cat?", "mode": "fast"})
    assert r.status_code == 503 and r.json()["code"] == "model_unavailable"


def test_extractive_answer_quotes_tree_and_evidence_without_a_model(world):
    # the default answer mode; RESPONDER_BACKEND is "none" here: no model can be asked
    r = _post(world["special"], "subject-answer", "alice", {"query": "what sport do I do?", "mode": "fast"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["model"]["model_id"] == "extractive"
    assert body["answer"].startswith("Swimming [behaviour/habits/exercise]")
    first = body["citations"][0]
    assert (first["kind"], first["cite"], first["quote"]) == ("leaf", "behaviour/habits/exercise", "swimming")
    deep = _post(
        world["special"], "subject-answer", "alice", {"query": "what is my cat called?", "mode": "deep"}
    )
    assert deep.status_code == 200, deep.content
    answer = deep.json()["answer"]
    assert "Pixel" in answer and "[evidence " in answer and "(the user" in answer


def test_openapi_schema_documents_query_endpoints(world, client):
    r = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert r.status_code == 200
    paths = r.json()["paths"]
    op = paths["/v1/subjects/{external_id}/context"]["post"]
    assert "examples" in str(op["requestBody"]) and "/v1/subjects/{external_id}/answer" in paths


def test_as_of_datetime_selects_the_version_at_that_time(world):
    later = _post(
        world["client"],
        "subject-context",
        "alice",
        {"query": "x", "mode": "fast", "as_of": "2999-01-01T00:00:00"},
    )
    assert later.status_code == 200 and later.json()["version"] == 2
    before = _post(
        world["special"],
        "subject-context",
        "alice",
        {"query": "x", "mode": "deep", "as_of": "2000-01-01T00:00:00Z"},
    ).json()
    assert before["version"] == 0 and before["context"]["text"] == "" and before["evidence"] == []
    assert before["recall"]["evidence_cutoff_seq"] == -1
