"""Direct reads of an embedded Milvus Lite (memory/recall/lite.py): the same hits as the gRPC path."""

import pytest

from memory.recall import lite
from memory.recall.index import EvidenceIndex, EvidenceRow, Scope
from memory.recall.rows import evidence_pk
from memory.recall.search import search_many

pytestmark = pytest.mark.integration

TEXTS = [
    "user: I adopted a grey cat called Pixel\nassistant: Lovely name!",
    "user: my knee hurts after running, so I switched to swimming\nassistant: Swimming is gentle on joints.",
    "user: the quarterly report uses code ZX-4471\nassistant: Noted.",
    "user: my sister Ana moved to Lisbon for a design job\nassistant: Exciting!",
    "user: I cook Thai green curry every Friday\nassistant: Yum.",
    "user: Pixel the cat knocked my coffee over\nassistant: Classic cat.",
]
QUERIES = ["my cat Pixel", "ZX-4471", "why did I start swimming?", "where does Ana live"]


def _rows(embedder, subject_id, texts=TEXTS, first_seq=1):
    vecs = embedder.embed(texts)
    return [
        EvidenceRow(1, subject_id, first_seq + 2 * i, first_seq + 2 * i + 1, t, vecs[i], ts_ms=1000 * (i + 1))
        for i, t in enumerate(texts)
    ]


@pytest.fixture
def pair(tmp_path, embedder):
    """The same Lite file read directly and over gRPC; both subjects in one collection (shards=1)."""
    uri = str(tmp_path / "lite.db")
    direct = EvidenceIndex(uri, dim=embedder.dim, collection="lite_test", shards=1)
    grpc = EvidenceIndex(uri, dim=embedder.dim, collection="lite_test", shards=1, direct_reads=False)
    direct.upsert(_rows(embedder, 10))
    direct.upsert(_rows(embedder, 11, ["user: my cat Pixel ate ZX-4471 stickers\nassistant: oh no"]))
    yield direct, grpc
    grpc.close()
    direct.close()  # stops the file's server (one for both)


def _pairs(results):
    return [[(h.pk, round(h.score, 5)) for h in hits] for hits in results]


def test_local_collection_is_found_only_for_an_embedded_file_served_here(pair, tmp_path):
    direct, _ = pair
    name = direct.collection_of(10)
    assert lite.local_collection(direct.uri, name) is not None
    assert lite.local_collection(direct.uri, "no_such_collection") is None
    assert lite.local_collection("http://127.0.0.1:19530", name) is None
    assert lite.local_collection(str(tmp_path / "never-opened.db"), name) is None


def test_direct_dense_and_bm25_hits_equal_the_grpc_hits(pair, embedder):
    direct, grpc = pair
    scope, vecs = Scope(1, 10), embedder.embed(QUERIES)
    assert _pairs(direct.search_dense(vecs, scope, limit=4)) == _pairs(
        grpc.search_dense(vecs, scope, limit=4)
    )
    assert _pairs(direct.search_bm25(QUERIES, scope, limit=4)) == _pairs(
        grpc.search_bm25(QUERIES, scope, limit=4)
    )
    hit = direct.search_bm25(["ZX-4471"], scope, limit=1)[0][0]
    assert (hit.start_seq, hit.subject_id, hit.ts_ms) == (5, 10, 3000) and hit.score > 0
    assert hit.text == TEXTS[2]


def test_direct_hybrid_ranks_like_lites_hybrid_search(pair, embedder):
    """Client-side RRF over the two direct sub-searches = Lite's HybridSearch (ties aside)."""
    direct, grpc = pair
    scope = Scope(1, 10)
    a = search_many(direct, embedder, scope, QUERIES, limit=3, method="hybrid")
    b = search_many(grpc, embedder, scope, QUERIES, limit=3, method="hybrid")
    for x, y in zip(a, b, strict=True):
        assert sorted((round(h.score, 5), h.pk) for h in x) == sorted((round(h.score, 5), h.pk) for h in y)
    assert [hits[0].start_seq for hits in a] == [1, 5, 3, 7]
    assert all(h.subject_id == 10 for hits in a for h in hits)  # subject 11 shares the collection


def test_direct_reads_see_rows_written_after_the_first_search(pair, embedder):
    direct, _ = pair
    scope = Scope(1, 10)
    before = direct.search_bm25(["Lisbon flat"], scope, limit=10)[0]
    direct.upsert(_rows(embedder, 10, ["user: I rent a flat in Lisbon now\nassistant: Nice."], first_seq=101))
    after = direct.search_bm25(["Lisbon flat"], scope, limit=10)[0]
    assert evidence_pk(1, 10, 101) not in {h.pk for h in before}
    assert after[0].pk == evidence_pk(1, 10, 101)
    cut = direct.search_hybrid(
        embedder.embed(["Lisbon flat"]), ["Lisbon flat"], Scope(1, 10, max_seq=50), limit=10
    )
    assert evidence_pk(1, 10, 101) not in {h.pk for h in cut[0]}  # the cut-off filter holds on this path too


def test_each_subjects_rows_are_in_the_partition_named_for_it(tmp_path, embedder):
    """Lite's bucket rule as lite.subject_partitions applies it: every row of a subject, none missed."""
    uri = str(tmp_path / "buckets.db")
    idx = EvidenceIndex(uri, dim=embedder.dim, collection="bucket_test", shards=1)
    try:
        subjects = [7, 10, 11, 12, 999, 10_000_007, 20_000_123] + list(range(100, 140))
        vec = embedder.embed(["user: hello\nassistant: hi"])[0]
        idx.upsert(
            [EvidenceRow(1, s, k, k + 1, f"user: note {k} of {s}", vec) for s in subjects for k in (1, 3)]
        )
        col = lite.local_collection(uri, idx.collection_of(7))
        named = {s: lite.subject_partitions(col, s) for s in subjects}
        assert all(p is not None and len(p) == 1 for p in named.values())
        assert len({p[0] for p in named.values()}) > 1  # the subjects do spread over buckets
        for s in subjects:
            rows = col.query(expr=f"subject_id == {s}", output_fields=["subject_id"])
            inside = col.query(
                expr=f"subject_id == {s}", output_fields=["subject_id"], partition_names=named[s]
            )
            assert len(rows) == len(inside) == 2, s
            hits = idx.search_bm25([f"note 3 of {s}"], Scope(1, s), limit=5)[0]
            assert {h.start_seq for h in hits} == {1, 3} and {h.subject_id for h in hits} == {s}
    finally:
        idx.close()


def test_no_partition_is_named_for_a_collection_without_the_subject_key():
    class Other:
        _partition_key_field = "tenant_id"
        _num_partition_buckets = 16

        def has_partition(self, name):
            return True

    assert lite.subject_partitions(Other(), 7) is None
    assert lite.subject_partitions(object(), 7) is None
