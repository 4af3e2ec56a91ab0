"""Evidence layout 2 on a real Milvus Lite file: one collection per subject shard (Lite), the server
layout (one collection, subject partition key, scalar indexes), and the move from layout 1."""

from __future__ import annotations

import pytest

from memory.recall import layout
from memory.recall.index import EvidenceIndex, EvidenceRow, IndexUnavailable, Scope
from memory.recall.search import search_many

pytestmark = pytest.mark.integration

TEXTS = [
    "user: I adopted a grey cat called Pixel\nassistant: Lovely name!",
    "user: my knee hurts after running, so I switched to swimming\nassistant: Swimming is gentle.",
    "user: the quarterly report uses code ZX-4471\nassistant: Noted.",
]


def _rows(embedder, tenant_id, subject_id):
    vecs = embedder.embed(TEXTS)
    return [
        EvidenceRow(
            tenant_id, subject_id, 2 * i + 1, 2 * i + 2, t, vecs[i], ts_ms=1000 * (i + 1), session="s1"
        )
        for i, t in enumerate(TEXTS)
    ]


def _subjects_in(idx, name):
    rows = idx.client.query(name, filter="tenant_id >= 0", output_fields=["subject_id"])
    return sorted({r["subject_id"] for r in rows})


def test_lite_spreads_subjects_over_shards_and_reads_touch_one(index, embedder):
    assert index.shards == layout.LITE_SHARDS  # picked from the server version: Milvus Lite
    names = index.collection_names()
    assert len(set(names)) == layout.LITE_SHARDS and index.collection_of(10) == names[10 % layout.LITE_SHARDS]
    index.upsert(
        _rows(embedder, 1, 10) + _rows(embedder, 1, 11) + _rows(embedder, 1, 10 + layout.LITE_SHARDS)
    )
    assert _subjects_in(index, index.collection_of(10)) == [10, 10 + layout.LITE_SHARDS]
    assert _subjects_in(index, index.collection_of(11)) == [11]
    assert index.count(Scope(1, 10)) == index.count(Scope(1, 11)) == 3
    hits = search_many(index, embedder, Scope(1, 10), ["my cat Pixel", "ZX-4471"], limit=3, method="hybrid")
    assert hits[0][0].start_seq == 1 and hits[1][0].start_seq == 5
    assert {h.subject_id for r in hits for h in r} == {10}  # the shard-mate never leaks
    # A subject whose shard was never written: empty answers, and nothing is created by reading.
    empty = index.collection_of(12)
    assert index.count(Scope(1, 12)) == 0
    assert search_many(index, embedder, Scope(1, 12), ["cat"], limit=3) == [[]]
    assert not index.client.has_collection(empty)
    assert index.delete_subject(1, 12) == 0
    index.delete_subject(1, 10)
    assert index.count(Scope(1, 10)) == 0 and index.count(Scope(1, 10 + layout.LITE_SHARDS)) == 3


def test_server_layout_runs_on_lite_with_subject_partition_key_and_scalar_indexes(tmp_path, embedder):
    idx = EvidenceIndex(str(tmp_path / "one.db"), dim=embedder.dim, collection="ev", shards=1)
    try:
        idx.upsert(_rows(embedder, 1, 10) + _rows(embedder, 2, 10) + _rows(embedder, 1, 11), flush=True)
        assert idx.collection_names() == ["ev_v2"] and idx.collection_of(11) == "ev_v2"
        fields = {f["name"]: f for f in idx.client.describe_collection("ev_v2")["fields"]}
        assert fields["subject_id"].get("is_partition_key") and not fields["tenant_id"].get(
            "is_partition_key"
        )
        assert set(layout.SCALAR_INDEXED) <= set(idx.client.list_indexes("ev_v2"))
        hits = search_many(idx, embedder, Scope(1, 10, max_seq=4), ["ZX-4471 report", "cat"], limit=5)
        assert {(h.subject_id, h.end_seq) for r in hits for h in r} <= {(10, 2), (10, 4)}
        assert idx.count(Scope(2, 10)) == 3  # same subject id under another tenant stays apart
        idx.delete_subject(2, 10)
        assert idx.count(Scope(2, 10)) == 0 and idx.count(Scope(1, 10)) == 3
    finally:
        idx.close()


def test_reopening_with_another_vector_size_is_refused(tmp_path, embedder):
    path = str(tmp_path / "dim.db")
    idx = EvidenceIndex(path, dim=embedder.dim, collection="ev")
    idx.upsert(_rows(embedder, 1, 10))
    idx.close()
    other = EvidenceIndex(path, dim=4, collection="ev")
    try:
        with pytest.raises(IndexUnavailable, match="has dim"):
            other.count(Scope(1, 10))
    finally:
        other.close()
