"""Evidence search for one subject: dense, BM25 or hybrid (dense + BM25 fused with RRF).

Several queries are embedded in one batch and searched in parallel (strategies: :func:`search_many`).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from serving.embedder import Embedder, one_intraop_thread

from .index import EvidenceIndex, Hit, Scope, hybrid_candidates
from .rows import rrf_fuse

Method = Literal["dense", "bm25", "hybrid"]
METHODS: tuple[str, ...] = ("dense", "bm25", "hybrid")
Strategy = Literal["batch", "threads", "overlap"]
STRATEGIES: tuple[str, ...] = ("batch", "threads", "overlap")

_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="recall-search")


def search_many(
    index: EvidenceIndex,
    embedder: Embedder | None,
    scope: Scope,
    queries: Sequence[str],
    *,
    limit: int,
    method: Method = "hybrid",
    strategy: Strategy = "batch",
    vectors=None,
) -> list[list[Hit]]:
    """One ranked hit list per query. ``strategy`` "batch": all queries in one request (Milvus runs
    them in parallel); "threads": a request per query from a pool; "overlap" (hybrid only): BM25
    during the queries' embedding, fused per query by RRF. ``vectors``: the embeddings, if known.
    """
    if method not in METHODS:
        raise ValueError(f"unknown search method {method!r}; expected one of {METHODS}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown search strategy {strategy!r}; expected one of {STRATEGIES}")
    if not queries:
        return []
    queries = list(queries)
    if strategy == "overlap" and method == "hybrid":
        results = _hybrid_overlapped(index, embedder, scope, queries, limit=limit, vectors=vectors)
        return _tag(queries, results)
    if vectors is None and method in ("dense", "hybrid"):
        vectors = _embed(embedder, queries, method)

    def run(idx: list[int]) -> list[list[Hit]]:
        if method == "dense":
            return index.search_dense([vectors[i] for i in idx], scope, limit=limit)
        if method == "bm25":
            return index.search_bm25([queries[i] for i in idx], scope, limit=limit)
        return index.search_hybrid([vectors[i] for i in idx], [queries[i] for i in idx], scope, limit=limit)

    if strategy == "threads" and len(queries) > 1:
        results = [r[0] for r in _POOL.map(lambda i: run([i]), range(len(queries)))]
    else:
        results = run(list(range(len(queries))))
    return _tag(queries, results)


def _embed(embedder: Embedder | None, queries: list[str], method: str):
    if embedder is None:
        raise ValueError(f"method {method!r} needs an embedder")
    with one_intraop_thread():
        return embedder.embed(queries)


def _tag(queries: list[str], results: list[list[Hit]]) -> list[list[Hit]]:
    for q, hits in zip(queries, results, strict=True):
        for h in hits:
            h.queries.append(q)
    return results


def _hybrid_overlapped(index, embedder, scope, queries, *, limit, vectors) -> list[list[Hit]]:
    """BM25 on a pool thread while the caller embeds (model inference releases the GIL), then dense."""
    candidates = hybrid_candidates(limit)  # as many per side as EvidenceIndex.search_hybrid asks for
    bm25 = _POOL.submit(index.search_bm25, queries, scope, limit=candidates)
    try:
        if vectors is None:
            vectors = _embed(embedder, queries, "hybrid")
        dense = index.search_dense(vectors, scope, limit=candidates)
    finally:
        sparse = bm25.result()  # always collected: its error (e.g. Milvus down) is the one raised
    return [rrf_fuse([d, s])[:limit] for d, s in zip(dense, sparse, strict=True)]
