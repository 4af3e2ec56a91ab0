"""`answer_build` in both answer modes (PERSONATREE_ANSWER_MODE): extractive quotes the tree with
citations and never calls a model; model asks the responder; a bad value is a settings error."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory import conf
from memory.engine.answer import NOTHING
from memory.recall import runtime
from memory.services.query import ModelUnavailable, answer_build
from personatree_site.settings import base
from serving.embedder import EmbedderUnavailable
from serving.engines.base import Generation
from tests.factories import SubjectFactory
from tests.memory.recall.conftest import put_version

pytestmark = pytest.mark.django_db

TREE = {
    "identity/occupation/current_role": "Data engineer at a logistics startup",
    "behaviour/habits/exercise": "Swims three times a week at the municipal pool",
}


class FixedEngine:
    model_id = "test-double"

    def __init__(self, text: str) -> None:
        self.text, self.prompts = text, []

    def generate(self, prompts, json_schema=None):
        self.prompts.extend(prompts)
        return [Generation(text=self.text, model_id=self.model_id) for _ in prompts]


def _no_model():
    raise AssertionError("the extractive answer must not ask for a model")


class WordEmbedder:
    """Stand-in for MiniLM: one dimension per topic (any of its words), so cosine is cheap and predictable."""

    TOPICS = (("work", "living", "job", "engineer", "occupation"), ("swim", "fit", "pool", "exercise"))

    def embed(self, texts):
        return [[float(any(w in t.lower() for w in topic)) for topic in self.TOPICS] for t in texts]


@pytest.fixture
def subject(tenant, settings):
    runtime.reset_runtime()
    s = SubjectFactory(tenant=tenant, external_id="maya")
    put_version(s, TREE)
    yield s
    runtime.reset_runtime()


def _mode(settings, mode: str) -> None:
    settings.PERSONATREE = {**settings.PERSONATREE, "ANSWER_MODE": mode, "RESPONDER_BACKEND": "none"}


def test_default_mode_is_extractive():
    assert conf.build(base.PERSONATREE).answer.mode == "extractive"


def test_bad_answer_mode_names_the_variable():
    with pytest.raises(conf.SettingsError, match="PERSONATREE_ANSWER_MODE='llm'"):
        conf.build({**base.PERSONATREE, "ANSWER_MODE": "llm"})


def test_extractive_answer_quotes_the_job_leaf_without_a_model(subject, settings, monkeypatch):
    _mode(settings, "extractive")
    monkeypatch.setattr(runtime, "responder_engine", _no_model)
    monkeypatch.setattr(runtime, "configured_embedder", WordEmbedder)
    out = answer_build(subject=subject, query="What does Maya do for a living (her job)?", mode="fast")
    assert out.answer.startswith("Data engineer at a logistics startup [identity/occupation/current_role]")
    assert "not" not in out.answer.split()
    assert out.model["model_id"] == "extractive" and out.model["prompt_tokens"] is None
    assert out.citations[0]["cite"] == "identity/occupation/current_role" and "answer_ms" in out.timings_ms
    assert out["citations"] == out.citations  # part of the JSON body


def test_extractive_answer_says_when_memory_holds_nothing(subject, settings, monkeypatch):
    _mode(settings, "extractive")
    monkeypatch.setattr(runtime, "configured_embedder", WordEmbedder)
    out = answer_build(subject=subject, query="What is the capital of Peru?", mode="fast")
    assert out.answer == NOTHING and out.citations == []


def test_extractive_answer_falls_back_to_words_when_the_embedder_is_down(subject, settings, monkeypatch):
    _mode(settings, "extractive")

    def down():
        raise EmbedderUnavailable("no model files")

    monkeypatch.setattr(runtime, "configured_embedder", down)
    out = answer_build(subject=subject, query="How often does Maya swim at the pool?", mode="fast")
    assert out.citations[0]["cite"] == "behaviour/habits/exercise"
    assert any("word overlap only" in n for n in out.notices)


def test_model_mode_asks_the_responder(subject, settings, monkeypatch):
    _mode(settings, "model")
    engine = FixedEngine("She is a data engineer.")
    monkeypatch.setattr(runtime, "responder_engine", lambda: (engine, ""))
    out = answer_build(subject=subject, query="What does Maya do for a living?", mode="fast")
    assert out.answer == "She is a data engineer." and out.model["model_id"] == "test-double"
    assert out.citations == [] and "Data engineer" in engine.prompts[-1].dynamic


def test_model_mode_without_a_model_is_unavailable(subject, settings):
    _mode(settings, "model")
    with pytest.raises(ModelUnavailable):
        answer_build(subject=subject, query="What does Maya do?", mode="fast")


def test_answer_endpoint_returns_citations(subject, settings, monkeypatch, make_api_client):
    _mode(settings, "extractive")
    monkeypatch.setattr(runtime, "configured_embedder", WordEmbedder)
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    r = client.post(
        reverse("subject-answer", args=["maya"]),
        {"query": "Where does Maya swim?", "mode": "fast"},
        format="json",
    )
    assert r.status_code == 200, r.content
    body = r.json()
    assert (
        body["citations"][0]["cite"] == "behaviour/habits/exercise"
        and body["model"]["model_id"] == "extractive"
    )


def test_passage_vectors_are_embedded_once_per_process(subject, settings, monkeypatch):
    _mode(settings, "extractive")
    seen: list[str] = []

    class CountingEmbedder(WordEmbedder):
        def embed(self, texts):
            seen.extend(texts)
            return super().embed(texts)

    monkeypatch.setattr(runtime, "configured_embedder", CountingEmbedder)
    first = answer_build(subject=subject, query="Where does Maya swim?", mode="fast")
    n = len(seen)
    assert n == 1 + len(TREE)  # the question and each leaf clause
    again = answer_build(subject=subject, query="Where does Maya swim?", mode="fast")
    assert len(seen) == n and again.answer == first.answer
    answer_build(subject=subject, query="What is her job?", mode="fast")
    assert seen[n:] == ["What is her job?"]
