"""Agentic recall on a real index; the expansion model is a test double that returns fixed text
(not a recording of a real model: it exercises our parsing and fallbacks, not model quality)."""

import pytest

from memory.recall.agentic import Evidence, _parse_expansions, agentic_recall, fuse_under_budget
from memory.recall.index import EvidenceRow, Scope
from serving.engines.base import EngineUnavailable, Generation

pytestmark = pytest.mark.integration

TEXTS = [
    "user: I adopted a grey cat called Pixel\nassistant: Lovely name!",
    "user: my knee hurts after running, so I switched to swimming\nassistant: Swimming is gentle on joints.",
    "user: we moved to Lisbon in March\nassistant: Exciting move!",
    "user: my sister Mia is visiting next week\nassistant: Have fun together.",
]
TREE = {"behavioral/sport/current": "swimming", "identity/location/city": "Lisbon"}
SUBJECT = Scope(1, 5)  # tenant 1, subject 5: whose evidence the index holds


class FixedEngine:
    model_id = "test-double"

    def __init__(self, text="", error=None, raises=None):
        self.text, self.error, self.raises = text, error, raises
        self.prompts = []

    def generate(self, prompts, json_schema=None):
        self.prompts.extend(prompts)
        self.schema = json_schema
        if self.raises:
            raise self.raises
        return [Generation(text=self.text, model_id=self.model_id, error=self.error) for _ in prompts]


@pytest.fixture
def filled(index, embedder):
    vecs = embedder.embed(TEXTS)
    index.upsert(EvidenceRow(1, 5, 2 * i + 1, 2 * i + 2, t, vecs[i]) for i, t in enumerate(TEXTS))
    return index


@pytest.fixture
def recall(filled, embedder):
    """``agentic_recall(query, TREE, ...)`` on the filled index, for SUBJECT unless ``scope`` says."""

    def run(query: str, *, scope: Scope = SUBJECT, **kwargs):
        return agentic_recall(query, TREE, scope=scope, index=filled, embedder=embedder, **kwargs)

    return run


def test_expansion_conditioned_on_tree_and_searched_in_parallel(recall):
    engine = FixedEngine('{"queries": ["knee injury running", "started swimming", "knee injury running"]}')
    res = recall("Why did I change sport?", engine=engine, token_budget=1000)
    assert res.expansion["status"] == "ok"
    assert res.queries == ["Why did I change sport?", "knee injury running", "started swimming"]
    prompt = engine.prompts[0]
    assert (
        "behavioral/sport/current: swimming" in prompt.dynamic and "Why did I change sport?" in prompt.dynamic
    )
    assert engine.schema["properties"]["queries"]["maxItems"] == 3
    assert res.evidence[0].start_seq == 3
    assert len({e.pk for e in res.evidence}) == len(res.evidence)
    assert "knee injury running" in res.evidence[0].queries
    assert not res.reranked and res.evidence[0].rerank_score is None


@pytest.mark.parametrize(
    "engine,status",
    [
        (None, "unavailable"),
        (FixedEngine(raises=EngineUnavailable("down")), "unavailable"),
        (FixedEngine(error="timeout"), "unavailable"),
        (FixedEngine("I think you should look at your knee"), "unreadable"),
    ],
)
def test_expansion_failure_searches_with_original_only(recall, engine, status):
    res = recall("my cat Pixel", engine=engine)
    assert res.expansion["status"] == status
    assert "original query only" in res.expansion["detail"]
    assert res.queries == ["my cat Pixel"]
    assert res.evidence[0].start_seq == 1


def test_token_budget_limits_evidence(recall):
    full = recall("family and pets")
    small = recall("family and pets", token_budget=full.evidence[0].tokens)
    assert len(full.evidence) == 4
    assert len(small.evidence) >= 1 and small.tokens <= full.evidence[0].tokens
    zero = recall("family", token_budget=0)
    assert zero.evidence == [] and zero.candidates == 4


def test_other_subject_evidence_never_returned(recall):
    res = recall("cat", scope=Scope(1, 6))
    assert res.evidence == []


def test_parse_expansions_cleans_output():
    text = 'sure: {"queries": ["  a  b ", "A B", "x", 3, "original q"]}'
    assert _parse_expansions(text, "original q", 3) == ["a b"]


def test_fuse_under_budget_skips_items_that_do_not_fit():
    def ev(n):
        return Evidence("p", 1, 1, 0, "", "t", 1.0, 1.0, None, [], n)

    kept, used = fuse_under_budget([ev(5), ev(10), ev(3)], 9)
    assert [e.tokens for e in kept] == [5, 3] and used == 8
