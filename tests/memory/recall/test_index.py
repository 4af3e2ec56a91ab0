"""The evidence index on a real Milvus Lite file with real MiniLM embeddings."""

import time

import numpy as np
import pytest

from memory.recall.index import EvidenceIndex, EvidenceRow, IndexUnavailable, Scope
from memory.recall.rows import evidence_pk
from memory.recall.search import rrf_fuse, search_many

pytestmark = pytest.mark.integration

TEXTS = [
    "user: I adopted a grey cat called Pixel\nassistant: Lovely name!",
    "user: my knee hurts after running, so I switched to swimming\nassistant: Swimming is gentle on joints.",
    "user: the quarterly report uses code ZX-4471\nassistant: Noted.",
]


def _rows(embedder, tenant_id, subject_id, texts=TEXTS):
    vecs = embedder.embed(texts)
    return [
        EvidenceRow(
            tenant_id, subject_id, 2 * i + 1, 2 * i + 2, t, vecs[i], ts_ms=1000 * (i + 1), session="s1"
        )
        for i, t in enumerate(texts)
    ]


@pytest.mark.parametrize("bad", ["1 or tenant_id > 0", '" || true', "1", 1.0, True, None])
def test_scope_refuses_anything_but_int(bad):
    with pytest.raises(TypeError):
        Scope(tenant_id=bad, subject_id=1)
    with pytest.raises(TypeError):
        Scope(tenant_id=1, subject_id=bad)
    with pytest.raises(TypeError):
        Scope(tenant_id=1, subject_id=1, max_seq=bad) if bad is not None else Scope(1, "x")


def test_scope_expression_is_built_from_ints_only():
    assert Scope(7, 42, max_seq=10).expr() == "tenant_id == 7 and subject_id == 42 and end_seq <= 10"
    assert evidence_pk(1, 2, 3) == evidence_pk(1, 2, 3) != evidence_pk(2, 2, 3)


def test_upsert_is_idempotent_and_tenants_are_isolated(index, embedder):
    assert index.upsert(_rows(embedder, 1, 10)) == 3
    assert index.upsert(_rows(embedder, 1, 10)) == 3  # same keys: replaced, not duplicated
    index.upsert(_rows(embedder, 2, 10))  # same subject id under another tenant
    assert index.count(Scope(1, 10)) == 3
    assert index.count(Scope(2, 10)) == 3
    index.delete_subject(2, 10)
    assert index.count(Scope(2, 10)) == 0
    assert index.count(Scope(1, 10)) == 3


def test_dense_bm25_and_hybrid_find_the_right_unit(index, embedder):
    index.upsert(_rows(embedder, 1, 10))
    index.upsert(_rows(embedder, 1, 11, ["user: unrelated chatter about ZX-4471 weather\nassistant: ok"]))
    scope = Scope(1, 10)
    dense = search_many(index, embedder, scope, ["why did I start swimming?"], limit=3, method="dense")[0]
    assert dense[0].start_seq == 3 and dense[0].score > dense[-1].score
    bm25 = search_many(index, embedder, scope, ["ZX-4471"], limit=3, method="bm25")[0]
    assert bm25[0].start_seq == 5 and bm25[0].score > 0  # Lite's negative BM25 distances are flipped
    hybrid = search_many(index, embedder, scope, ["my cat Pixel", "ZX-4471"], limit=2, method="hybrid")
    assert hybrid[0][0].start_seq == 1 and hybrid[1][0].start_seq == 5
    # subject 11's row never leaks into subject 10's results
    assert {h.subject_id for hits in hybrid for h in hits} == {10}


def test_crafted_query_text_is_data_not_filter(index, embedder):
    index.upsert(_rows(embedder, 1, 10))
    index.upsert(_rows(embedder, 2, 99))
    for q in ["1 or tenant_id > 0", '" || true', "subject_id >= 0 or true"]:
        for method in ("dense", "bm25", "hybrid"):
            hits = search_many(index, embedder, Scope(1, 10), [q], limit=10, method=method)[0]
            assert {(h.subject_id) for h in hits} <= {10}


def test_max_seq_cutoff_hides_later_evidence(index, embedder):
    index.upsert(_rows(embedder, 1, 10))
    hits = search_many(
        index, embedder, Scope(1, 10, max_seq=4), ["ZX-4471 report"], limit=5, method="hybrid"
    )[0]
    assert {h.end_seq for h in hits} <= {2, 4}


def test_rrf_fuse_dedupes_and_keeps_queries(index, embedder):
    index.upsert(_rows(embedder, 1, 10))
    runs = search_many(index, embedder, Scope(1, 10), ["Pixel cat", "grey cat"], limit=3, method="hybrid")
    fused = rrf_fuse(runs)
    assert len({h.pk for h in fused}) == len(fused)
    assert fused[0].start_seq == 1 and set(fused[0].queries) == {"Pixel cat", "grey cat"}


def test_wrong_vector_dim_is_refused(index):
    with pytest.raises(ValueError):
        index.upsert([EvidenceRow(1, 1, 1, 2, "x", np.zeros(3))])


def test_unreachable_milvus_raises_index_unavailable():

    idx = EvidenceIndex("http://127.0.0.1:9", dim=4, timeout=1.0)
    with pytest.raises(IndexUnavailable):
        idx.count(Scope(1, 1))


def test_batch_and_thread_strategies_agree(index, embedder):
    index.upsert(_rows(embedder, 1, 10))
    qs = ["my cat Pixel", "ZX-4471", "knee swimming"]
    for method in ("dense", "bm25", "hybrid"):
        batch = search_many(index, embedder, Scope(1, 10), qs, limit=3, method=method, strategy="batch")
        threads = search_many(index, embedder, Scope(1, 10), qs, limit=3, method=method, strategy="threads")
        assert [[h.pk for h in r] for r in batch] == [[h.pk for h in r] for r in threads]
        assert [r[0].queries for r in batch] == [[q] for q in qs]
    with pytest.raises(ValueError):
        search_many(index, embedder, Scope(1, 10), qs, limit=3, strategy="psychic")


def test_overlapped_hybrid_fuses_like_milvus_rrf(index, embedder):
    """BM25 during embedding + client-side RRF gives Milvus's hybrid ranking (ties aside)."""
    index.upsert(_rows(embedder, 1, 10) + _rows(embedder, 1, 11))
    qs = ["my cat Pixel", "ZX-4471", "knee swimming"]
    server = search_many(index, embedder, Scope(1, 10), qs, limit=3, method="hybrid", strategy="batch")
    client = search_many(index, embedder, Scope(1, 10), qs, limit=3, method="hybrid", strategy="overlap")
    for s, c, q in zip(server, client, qs, strict=True):
        assert sorted((round(h.score, 6), h.pk) for h in s) == sorted((round(h.score, 6), h.pk) for h in c)
        assert all(h.queries == [q] for h in c)
        assert {h.pk for h in c} <= {evidence_pk(1, 10, seq) for seq in (1, 3, 5)}  # subject scope held
    assert client[1][0].start_seq == 5  # the exact-token query still ranks its pair first


def test_overlapped_hybrid_reports_milvus_down():
    idx = EvidenceIndex("http://127.0.0.1:9", dim=4, timeout=1.0)

    class Fixed:
        dim = 4

        def embed(self, texts):
            return np.ones((len(texts), 4), dtype="float32")

    with pytest.raises(IndexUnavailable):
        search_many(idx, Fixed(), Scope(1, 1), ["q"], limit=3, method="hybrid", strategy="overlap")


def test_flush_seals_and_keeps_rows_searchable(index, embedder):
    index.upsert(_rows(embedder, 1, 10), flush=True)
    assert index.count(Scope(1, 10)) == 3
    hits = search_many(index, embedder, Scope(1, 10), ["ZX-4471"], limit=1, method="hybrid")[0]
    assert hits[0].start_seq == 5


# MiniLM's vectors against FlagModel.encode: tests/memory/recall/test_embedder_minilm.py.


def test_small_writes_are_flushed_after_an_idle_period(tmp_path, embedder, monkeypatch):
    idx = EvidenceIndex(str(tmp_path / "idle.db"), dim=embedder.dim, collection="idle", flush_idle_s=1.0)
    flushed = []
    rows, more = _rows(embedder, 1, 10), _rows(embedder, 1, 11)
    try:
        real_flush = idx.client.flush
        monkeypatch.setattr(idx.client, "flush", lambda name: (flushed.append(name), real_flush(name)))
        idx.upsert(rows[:1])
        idx.upsert(rows[1:])  # written again before the timer fires: one flush, a quiet period later
        assert idx.unflushed_rows == 3 and flushed == []
        deadline = time.monotonic() + 10
        while not flushed and time.monotonic() < deadline:
            time.sleep(0.05)
        assert flushed == [idx.collection_of(10)] and idx.unflushed_rows == 0
        assert index_hits(idx, embedder) == 5
        idx.upsert(more, flush=False)  # an explicit flush=False is left to the caller
        assert idx.unflushed_rows == 0 and idx._idle_timer is None
    finally:
        idx.close()


def index_hits(idx, embedder):
    return search_many(idx, embedder, Scope(1, 10), ["ZX-4471"], limit=1, method="hybrid")[0][0].start_seq
