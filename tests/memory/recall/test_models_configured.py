"""The configured-model paths: BGE-M3 embedder and FlagReranker, on tiny locally built models."""

import numpy as np
import pytest

from memory.recall.agentic import agentic_recall
from memory.recall.index import EvidenceIndex, EvidenceRow, Scope
from memory.recall.rerank import Reranker, RerankerUnavailable
from serving.embedder import BGEM3Embedder, EmbedderUnavailable, build_embedder
from tests.memory.recall.tiny_models import build_tiny_bge_m3, build_tiny_reranker

pytestmark = pytest.mark.integration

TEXTS = ["I adopted a grey cat called Pixel", "we moved to Lisbon in March", "my sister Mia is visiting"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tiny_models")


@pytest.fixture(scope="module")
def bge_m3(tiny_dir):
    return BGEM3Embedder(str(build_tiny_bge_m3(tiny_dir / "bge-m3")))


@pytest.fixture(scope="module")
def reranker(tiny_dir):
    return Reranker(str(build_tiny_reranker(tiny_dir / "reranker")))


def test_bge_m3_embedder_gives_unit_dense_vectors(bge_m3):
    vecs = bge_m3.embed(TEXTS)
    assert vecs.shape == (3, 32) and bge_m3.dim == 32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_bge_m3_needs_a_path_and_bad_paths_fail_clearly(tmp_path):
    with pytest.raises(EmbedderUnavailable, match="EMBEDDER_PATH"):
        build_embedder("bge-m3", "")
    with pytest.raises(EmbedderUnavailable, match="unknown embedder"):
        build_embedder("word2vec")
    with pytest.raises(EmbedderUnavailable):
        BGEM3Embedder(str(tmp_path / "missing")).embed(["x"])


def test_reranker_scores_and_reorders_agentic_results(bge_m3, reranker, tmp_path):
    scores = reranker.score("where do I live", TEXTS)
    assert len(scores) == 3 and all(0.0 <= s <= 1.0 for s in scores)
    index = EvidenceIndex(str(tmp_path / "ev.db"), dim=bge_m3.dim)
    try:
        vecs = bge_m3.embed(TEXTS)
        index.upsert(EvidenceRow(1, 1, 2 * i + 1, 2 * i + 2, t, vecs[i]) for i, t in enumerate(TEXTS))
        res = agentic_recall("Lisbon", {}, scope=Scope(1, 1), index=index, embedder=bge_m3, reranker=reranker)
    finally:
        index.close()
    assert res.reranked and len(res.evidence) == 3
    assert all(e.rerank_score is not None and e.score == e.rerank_score for e in res.evidence)
    assert [e.score for e in res.evidence] == sorted((e.score for e in res.evidence), reverse=True)
    expected = reranker.score("Lisbon", [e.text for e in res.evidence])
    assert [round(e.rerank_score, 5) for e in res.evidence] == [round(s, 5) for s in expected]


def test_missing_reranker_fails_clearly(tmp_path):
    with pytest.raises(RerankerUnavailable):
        Reranker(str(tmp_path / "nope")).score("q", ["t"])
