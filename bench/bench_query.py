"""Query benchmarks: fast mode through HTTP and at service level; deep mode at 50k and 200k evidence rows.

Django runs with the test settings against a scratch Postgres database
(``bench_pt_query``, created and dropped here); the evidence index is a Milvus
Lite file in a temp dir.

- ``query.fast_http_p50_ms``: ``POST /v1/subjects/<id>/context`` mode=fast over
  localhost against a real server (``bench_client.Server``: gunicorn, 1 sync worker;
  runserver when gunicorn is absent) started on a free 127.0.0.1 port, keep-alive client. The
  server keeps its database connection (``conn_max_age=60``) as production does
  (docs/DEPLOY.md ``DATABASE_CONN_MAX_AGE``); the test settings alone would open a
  new Postgres connection per request, which is what earlier runs measured.
- ``query.fast_service_p50_ms``: ``subject_get`` + ``context_build(mode="fast")``.
- ``query.deep_p50_ms``: ``context_build(mode="deep")`` on a subject whose tenant has
  50k evidence rows, excluding model calls: the expansion "model" is a zero-latency
  test double returning 3 fixed queries, so 4 hybrid searches run (the 4 query
  embeddings are real MiniLM calls, on one torch intra-op thread as on the request
  path). Bulk rows carry random unit vectors and synthetic word texts (embedding
  50k rows with MiniLM takes minutes here); the subject's own 200 rows carry real
  embeddings. The bulk load ends with a flush.
  Milvus Lite then builds the segment's vector index (HNSW via faiss) in a
  background thread (~1.5 min for 50k rows here); timing starts after it is done
  (steady state: the build is a one-off after a bulk load, and timing searches
  while it runs measures the build's CPU use, which earlier runs did).
- ``query.search_p50_ms``: ``memories_search`` (``POST /v1/subjects/<id>/search``'s service: the
  visible leaves scored, one hybrid evidence search, read_special caller) on the same subject at
  50k rows, right after ``query.deep_p50_ms``.
- ``query.deep_p50_ms_200k``: the same, in the same run, after 150k more rows (random unit
  vectors, synthetic texts) of 300 other subjects of the same tenant were added and flushed
  (200k rows; the subject's own rows unchanged), timed after Lite's index build again.
- ``query.deep_ratio_200k_50k``: the ratio of the two medians (issue 18: <= 1.5, i.e. deep
  recall costs what the subject holds, not what the collection holds).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import load_note, print_rows  # noqa: E402
from bench.scratch import scratch_db  # noqa: E402

SCRATCH_DB = os.environ.get("PERSONATREE_BENCH_QUERY_DB", "bench_pt_query")
BULK_ROWS = 50_000
GROW_ROWS = 150_000  # added after the 50k measurement: 200k rows in all
GROW_SUBJECTS = 300
OWN_ROWS = 200
N_FAST = 300
N_DEEP = 15
N_SEARCH = 30


def _tree(schema) -> dict:
    leaves = [leaf for leaf in schema.leaves if leaf.tier != "special"][:40]
    return {
        leaf.path: f"{leaf.path.rsplit('/', 1)[-1].replace('_', ' ')} detail number {i}"
        for i, leaf in enumerate(leaves)
    }


def _world():
    from memory import selectors
    from memory.models import Subject, TreeVersion
    from memory.services.keys import api_key_create
    from memory.services.subjects import subject_get_or_create, tenant_create
    from memory.services.tree import Actor

    tenant = tenant_create(name="bench-query")
    _key, raw = api_key_create(actor=Actor.system("bench"), tenant=tenant, scopes=["read"])
    subject, _ = subject_get_or_create(tenant=tenant, external_id="bench-user")
    tree = _tree(selectors.subject_schema(subject))
    version = TreeVersion.objects.create(subject=subject, number=1, snapshot=tree, created_by="import")
    Subject.objects.filter(pk=subject.pk).update(head=version, head_version=1)
    return tenant, raw, selectors.subject_get(tenant=tenant, external_id="bench-user")


def _http_fast(raw_key: str, db_name: str) -> tuple[list[float], str]:
    import logging

    import httpx

    from bench.bench_client import Server

    logging.getLogger("httpx").setLevel(logging.WARNING)  # per-request INFO lines would be timed too
    server = Server(db_name)
    try:
        server.wait_ready()
        url = f"{server.url}/v1/subjects/bench-user/context"
        headers = {"Authorization": f"Bearer {raw_key}"}
        body = {"query": "what does the user like", "mode": "fast"}
        with httpx.Client(timeout=10.0) as client:
            for _ in range(30):
                r = client.post(url, json=body, headers=headers)
                assert r.status_code == 200, f"server answered {r.status_code}: {r.text[:300]}"
            samples = []
            for _ in range(N_FAST):
                t = time.perf_counter()
                r = client.post(url, json=body, headers=headers)
                samples.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200 and r.json()["mode_used"] == "fast"
        return samples, server.kind
    finally:
        server.stop()


def _service_fast(tenant, *, cold: bool = False) -> list[float]:
    """subject_get + context_build(fast); `cold` empties the rendered-tree cache before each call."""
    from memory import selectors
    from memory.services.query import context_build, render_cache_clear

    samples = []
    for _ in range(N_FAST):
        if cold:
            render_cache_clear()
        t = time.perf_counter()
        subject = selectors.subject_get(tenant=tenant, external_id="bench-user")
        out = context_build(subject=subject, query="what does the user like", mode="fast")
        samples.append((time.perf_counter() - t) * 1000)
        assert out["context"]["tokens"] > 0
    return samples


class _ZeroLatencyExpander:
    """Stands in for the expansion model so only retrieval is timed (not a model, not a recording)."""

    model_id = "bench-zero-latency"

    def generate(self, prompts, json_schema=None):
        from serving.engines.base import Generation

        text = (
            '{"queries": ["favourite food and cooking", "trip abroad last summer", "new job at the studio"]}'
        )
        return [Generation(text=text, model_id=self.model_id) for _ in prompts]


def _bulk_rows(dim: int, tenant_id: int, subject_of, start: int, n: int, seed: int):
    """Yield `n` rows with random unit vectors and synthetic word texts, in batches of 2000."""
    import numpy as np

    from memory.recall.index import EvidenceRow

    rng = np.random.default_rng(seed)
    pyrng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)] + "food trip job cooking summer studio city music dog run".split()
    batch = []
    for i in range(start, start + n):
        vec = rng.standard_normal(dim).astype("float32")
        vec /= np.linalg.norm(vec)
        text = (
            "user: "
            + " ".join(pyrng.choices(words, k=25))
            + "\nassistant: "
            + " ".join(pyrng.choices(words, k=10))
        )
        batch.append(EvidenceRow(tenant_id, subject_of(i), 10_000 + 2 * i, 10_001 + 2 * i, text, vec))
        if len(batch) == 2000:
            yield batch
            batch = []
    if batch:
        yield batch


def _fill_index(index, embedder, tenant_id: int, subject_id: int) -> float:
    from memory.recall.index import EvidenceRow

    t0 = time.perf_counter()
    others = 50  # the tenant's other subjects share the bulk rows

    def subject_of(i: int) -> int:
        return subject_id if i % 2 == 0 else 10_000_000 + i % others

    for batch in _bulk_rows(embedder.dim, tenant_id, subject_of, 0, BULK_ROWS - OWN_ROWS, seed=7):
        index.upsert(batch, flush=False)
    topics = [
        "I love cooking Thai food",
        "we went to Japan last summer",
        "I started a new job at a design studio",
        "my dog Rex likes the beach",
        "I run 5k every morning",
    ]
    texts = [f"user: {topics[i % 5]} (note {i})\nassistant: tell me more" for i in range(OWN_ROWS)]
    vecs = embedder.embed(texts)
    own = [EvidenceRow(tenant_id, subject_id, 2 * i + 1, 2 * i + 2, t, vecs[i]) for i, t in enumerate(texts)]
    index.upsert(own, flush=False)
    index.flush()  # a bulk load ends with a flush (growing segments are searched brute force)
    return time.perf_counter() - t0


def _grow_index(index, dim: int, tenant_id: int) -> float:
    """Add GROW_ROWS rows of GROW_SUBJECTS other subjects of the same tenant, then flush."""
    t0 = time.perf_counter()
    for batch in _bulk_rows(
        dim, tenant_id, lambda i: 20_000_000 + i % GROW_SUBJECTS, BULK_ROWS, GROW_ROWS, seed=11
    ):
        index.upsert(batch, flush=False)
    index.flush()
    return time.perf_counter() - t0


def _wait_for_lite_index_build(index) -> float | None:
    """Wait until Milvus Lite's background index build is done; seconds waited (None: not Lite).

    Milvus Lite (3.x, in process) builds segment indexes on a single background worker after a
    flush and reports every index as finished through the API, so the bench drains that worker
    through Lite's own objects. A Milvus server needs no such wait here (not used by this bench).
    """
    if "://" in index.uri:
        return None
    from milvus_lite.server_manager import server_manager_instance

    entry = server_manager_instance._servers.get(os.path.abspath(index.uri))  # noqa: SLF001 - bench only
    if entry is None:
        return None
    t0 = time.perf_counter()
    for name in index.collection_names():  # the subjects' shards that were written to
        if entry[1].has_collection(name):
            entry[1].get_collection(name)._wait_for_bg()  # noqa: SLF001 - bench only
    return time.perf_counter() - t0


QUERIES = ["what food do I like to cook?", "where did I travel last summer?", "what is my new job?"]
EXPANSIONS = ["favourite food and cooking", "trip abroad last summer", "new job at the studio"]


def _deep_samples(subject) -> tuple[list[float], dict]:
    """N_DEEP timed context_build(mode=deep) after 3 untimed ones; the last result as a plain dict."""
    from memory import selectors
    from memory.services.query import context_build

    # Evidence is returned to callers that may see every tier (read_special): raw dialogue is
    # unclassified (memory/services/query.py); other callers never reach the index.
    tiers = selectors.ALL_TIERS
    for q in QUERIES:
        context_build(subject=subject, query=q, mode="deep", tiers=tiers)
    samples, last = [], {}
    for i in range(N_DEEP):
        t = time.perf_counter()
        last = context_build(
            subject=subject, query=QUERIES[i % 3], mode="deep", token_budget=2000, tiers=tiers
        ).to_dict()  # a plain dict: the run's notes are added to it below
        samples.append((time.perf_counter() - t) * 1000)
        assert last["mode_used"] == "deep" and last["evidence"], last["notices"]
    return samples, last


def _search_samples(subject) -> tuple[list[float], dict]:
    """N_SEARCH timed memories_search after 3 untimed ones (read_special: leaves and evidence)."""
    from memory import selectors
    from memory.services.search import memories_search

    for q in QUERIES:
        memories_search(subject=subject, query=q, tiers=selectors.ALL_TIERS)
    samples, last = [], {}
    for i in range(N_SEARCH):
        t = time.perf_counter()
        last = memories_search(subject=subject, query=QUERIES[i % 3], tiers=selectors.ALL_TIERS)
        samples.append((time.perf_counter() - t) * 1000)
        assert last["evidence_status"] == "ok" and last["evidence"], last["notices"]
    return samples, last


def _deep(tenant, subject) -> tuple[list[float], list[float], dict]:
    from django.conf import settings
    from django.test import override_settings

    from memory.recall import runtime
    from memory.recall.index import EvidenceIndex, Scope
    from memory.recall.search import STRATEGIES, one_intraop_thread, search_many

    tmp = tempfile.mkdtemp(prefix="bench_query_")
    pt = {
        **settings.PERSONATREE,
        "MILVUS_URI": str(Path(tmp) / "ev.db"),
        "MILVUS_COLLECTION": "bench",
        "RERANKER_PATH": "",
        "RESPONDER_BACKEND": "none",
    }
    real_engine = runtime.responder_engine
    try:
        with override_settings(PERSONATREE=pt):
            runtime.reset_runtime()
            runtime.responder_engine = lambda: (_ZeroLatencyExpander(), "")
            index, embedder = runtime.configured_index(), runtime.configured_embedder()
            fill_s = _fill_index(index, embedder, tenant.pk, subject.pk)
            build_s = _wait_for_lite_index_build(index)
            samples, last = _deep_samples(subject)
            last["search_samples"], last["search_last"] = _search_samples(subject)
            # The same searches (embedding included) sent each way, interleaved, for comparison (same run).
            scope = Scope(tenant.pk, subject.pk)
            per_strategy: dict[str, list[float]] = {name: [] for name in STRATEGIES}
            # The batch strategy again over Lite's loop-back gRPC (the same server: lite.py's direct
            # reads off), and the query embedding alone: where the search time goes.
            grpc_index = EvidenceIndex(
                index.uri, dim=embedder.dim, collection=index.collection, direct_reads=False
            )
            per_strategy["batch_grpc"], per_strategy["embed_only"] = [], []
            for i in range(N_DEEP):
                qs = [QUERIES[i % 3], *EXPANSIONS]
                for name in STRATEGIES:
                    t = time.perf_counter()
                    search_many(index, embedder, scope, qs, limit=8, strategy=name)
                    per_strategy[name].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                search_many(grpc_index, embedder, scope, qs, limit=8)
                per_strategy["batch_grpc"].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                with one_intraop_thread():
                    embedder.embed(qs)
                per_strategy["embed_only"].append((time.perf_counter() - t) * 1000)
            grow_s = _grow_index(index, embedder.dim, tenant.pk)
            build_200k_s = _wait_for_lite_index_build(index)
            samples_200k, last_200k = _deep_samples(subject)
            last["strategy_search_ms"] = {k: statistics.median(v) for k, v in per_strategy.items()}
            last["strategy"] = runtime.recall_config().strategy
            last["fill_s"], last["index_build_s"] = fill_s, build_s
            last["grow_s"], last["index_build_200k_s"] = grow_s, build_200k_s
            last["timings_200k_ms"] = last_200k["timings_ms"]
            last["collections"] = len(index.collection_names())
            return samples, samples_200k, last
    finally:
        runtime.responder_engine = real_engine
        runtime.reset_runtime()
        shutil.rmtree(tmp, ignore_errors=True)


def _lite_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("milvus-lite")
    except PackageNotFoundError:
        return "?"


def _p(samples, q):
    return statistics.quantiles(samples, n=100)[q - 1]


def run() -> dict[str, dict]:
    with scratch_db(SCRATCH_DB) as connection:
        tenant, raw, subject = _world()
        service = _service_fast(tenant)
        service_cold = _service_fast(tenant, cold=True)
        http, server = _http_fast(raw, connection.settings_dict["NAME"])
        deep, deep_200k, last = _deep(tenant, subject)
    sp, hp, dp = statistics.median(service), statistics.median(http), statistics.median(deep)
    dp200 = statistics.median(deep_200k)
    load = f"; machine {load_note()}"
    timing_keys = ("recall_expansion_ms", "recall_search_ms", "recall_rerank_ms")
    parts = ", ".join(f"{k} {last['timings_ms'].get(k, 0):.1f}" for k in timing_keys)
    parts_200k = ", ".join(f"{k} {last['timings_200k_ms'].get(k, 0):.1f}" for k in timing_keys)
    layout = f"{last['collections']} collection(s)"
    return {
        "query.fast_http_p50_ms": {
            "value": round(hp, 3),
            "unit": "ms",
            "target": "<= 15",
            "note": f"median of {N_FAST} POST .../context mode=fast on 127.0.0.1 via {server}, keep-alive httpx "
            f"client, 40-leaf tree, key auth + subject read (2 queries); p90 {_p(http, 90):.2f} ms; "
            f"service-level median in the same run {sp:.2f} ms ({hp / sp:.1f}x){load}",
        },
        "query.fast_service_p50_ms": {
            "value": round(sp, 3),
            "unit": "ms",
            "target": "<= 2",
            "note": f"median of {N_FAST} subject_get + context_build(mode=fast) on Postgres (1 query), "
            f"40-leaf tree rendered with token count (cached per head version and tiers after the first "
            f"call); p90 {_p(service, 90):.2f} ms; with the rendered-tree cache emptied before every call "
            f"{statistics.median(service_cold):.2f} ms (same run){load}",
        },
        "query.deep_p50_ms": {
            "value": round(dp, 3),
            "unit": "ms",
            "target": "<= 100",
            "note": f"median of {N_DEEP} context_build(mode=deep) excluding model calls (zero-latency expansion "
            f"double -> 4 hybrid searches, RRF, no reranker, 2000-token budget, read_special caller); "
            f"Milvus Lite {_lite_version()} in process ({layout}) "
            f"with {BULK_ROWS} rows in the tenant ({BULK_ROWS // 2} in the subject; bulk rows random unit "
            f"vectors + synthetic texts, {OWN_ROWS} real MiniLM rows), filled in {last['fill_s']:.0f} s, timed "
            f"after Lite's background index build ({last['index_build_s'] or 0:.0f} s); query "
            f"embeddings real MiniLM; p90 {_p(deep, 90):.1f} ms; last run: {parts}; search strategy "
            f"{last['strategy']!r}; query embeddings on one torch intra-op thread, Lite searched in "
            f"process without its loop-back gRPC and only in the subject's partition-key bucket "
            f"(memory/recall/lite.py); embed + search of the 4 queries "
            f"by strategy (medians, same run; batch_grpc: batch over Lite's gRPC, embed_only: the "
            f"embedding alone): "
            + ", ".join(f"{k} {v:.1f} ms" for k, v in last["strategy_search_ms"].items())
            + load,
        },
        "query.search_p50_ms": {
            "value": round(statistics.median(last["search_samples"]), 3),
            "unit": "ms",
            "target": "<= 100",
            "note": f"median of {N_SEARCH} memories_search (POST .../search's service; limit 10, read_special "
            f"caller: visible leaves scored by MiniLM cosine + word overlap, one hybrid evidence search) on "
            f"the subject of query.deep_p50_ms, same run, {BULK_ROWS} rows in the tenant; p90 "
            f"{_p(last['search_samples'], 90):.1f} ms; last run: "
            + ", ".join(f"{k} {v:.1f}" for k, v in last["search_last"]["timings_ms"].items())
            + f"; query.deep_p50_ms in the same run {dp:.1f} ms (search/deep "
            f"{statistics.median(last['search_samples']) / dp:.2f})" + load,
        },
        "query.deep_p50_ms_200k": {
            "value": round(dp200, 3),
            "unit": "ms",
            "target": "<= 100",
            "note": f"median of {N_DEEP} context_build(mode=deep) as query.deep_p50_ms, same run, after "
            f"{GROW_ROWS} more rows of {GROW_SUBJECTS} other subjects of the same tenant were added "
            f"({BULK_ROWS + GROW_ROWS} rows in all, the subject's unchanged; added and flushed in "
            f"{last['grow_s']:.0f} s, timed after Lite's index build ({last['index_build_200k_s'] or 0:.0f} s)); "
            f"p90 {_p(deep_200k, 90):.1f} ms; last run: {parts_200k}{load}",
        },
        "query.deep_ratio_200k_50k": {
            "value": round(dp200 / dp, 3),
            "unit": "ratio",
            "target": "<= 1.5",
            "note": f"query.deep_p50_ms_200k / query.deep_p50_ms in the same run ({dp200:.1f} / {dp:.1f} ms): "
            f"what deep recall costs as the collection grows 4x around a subject whose rows do not{load}",
        },
    }


if __name__ == "__main__":
    print_rows(run())
