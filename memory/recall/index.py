"""The evidence index: Milvus collections of retrieval units (`units.py`; layout `layout.py`, rows
and filters `rows.py`), each read and write naming one subject, each call a span when tracing.

Bulk writes (>= FLUSH_AT_ROWS) flush at once; smaller ones flush `flush_idle_s` after the writing
process's last write (every flush seals a small segment); `workers.flush_evidence` is the backstop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence

import numpy as np

from serving import tracing

from . import layout, lite
from .layout import SESSION_MAX, IndexUnavailable
from .rows import (
    OUTPUT_FIELDS,
    RRF_K,
    EvidenceRow,
    Hit,
    Scope,
    clip_text,
    hybrid_candidates,
    rrf_fuse,
    to_hit,
    typed_int,
)

logger = logging.getLogger(__name__)

# Bulk writes of at least this many rows are flushed: Milvus searches unsealed (growing) segments
# by brute force (on Lite with 20k rows, ~15x slower than after a flush).
FLUSH_AT_ROWS = 1000
UPSERT_BATCH = 1000  # rows per upsert request
# Smaller writes are flushed once the writing process has been idle this long.
FLUSH_IDLE_S = 10.0


class EvidenceIndex:
    """`pymilvus.MilvusClient` over the evidence collections of one base name. `shards` (None: by the
    server, `layout.py`); `direct_reads`: search an embedded Lite file without gRPC (`lite.py`)."""

    def __init__(
        self,
        uri: str,
        *,
        dim: int,
        collection: str = "evidence",
        token: str = "",
        timeout: float = 10.0,
        flush_idle_s: float = FLUSH_IDLE_S,
        shards: int | None = None,
        direct_reads: bool = True,
    ):
        self.uri = uri
        self.dim = typed_int(dim, "dim")
        self.collection = collection  # the base name; collection_names() are the real ones
        self.token = token
        self.timeout = timeout
        self.flush_idle_s = float(flush_idle_s)  # <= 0: small writes are never flushed by this process
        if shards is not None and typed_int(shards, "shards") < 1:
            raise ValueError("shards must be >= 1")
        self._shards = shards
        self.direct_reads = direct_reads  # False: embedded Lite searched over gRPC too (tests compare)
        self._client = None
        self._ready: set[str] = set()
        self._lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._idle_timer: threading.Timer | None = None
        self._last_write = 0.0
        self._dirty: set[str] = set()  # collections written since their last flush (small writes)
        self.unflushed_rows = 0

    @property
    def client(self):
        if self._client is None:
            with self._lock:
                if self._client is None:
                    from pymilvus import MilvusClient

                    try:
                        client = MilvusClient(uri=self.uri, token=self.token, timeout=self.timeout)
                        if self._shards is None:
                            self._shards = layout.LITE_SHARDS if layout.is_lite(client) else 1
                    except Exception as exc:  # noqa: BLE001
                        raise IndexUnavailable(f"cannot connect to Milvus at {self.uri}: {exc}") from exc
                    self._client = client
        return self._client

    def _call(self, what: str, fn, *args, **kwargs):
        try:
            with tracing.client_span(f"milvus.{what}", **{"db.system": "milvus", "db.operation": what}):
                return fn(*args, **kwargs)
        except IndexUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - pymilvus raises many types for transport errors
            raise IndexUnavailable(f"Milvus {what} failed: {exc}") from exc

    def close(self) -> None:
        with self._flush_lock:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
                self._idle_timer = None
        if self._client is not None:
            try:
                self._client.close()
            finally:
                self._client = None
                self._ready.clear()
                if "://" not in self.uri:  # Milvus Lite: stop its in-process server and free the file
                    from milvus_lite.server_manager import server_manager_instance

                    server_manager_instance.release_server(self.uri)

    @property
    def shards(self) -> int:
        if self._shards is None:
            self._call("connect", lambda: self.client)
        return int(self._shards or 1)

    def collection_names(self) -> list[str]:
        """Every collection of this index's layout (existing or not)."""
        return [layout.collection_of(self.collection, self.shards, k) for k in range(self.shards)]

    def collection_of(self, subject_id: int) -> str:
        """The collection holding the subject's rows."""
        return layout.collection_of(self.collection, self.shards, typed_int(subject_id, "subject_id"))

    def _open(self, name: str, *, create: bool) -> bool:
        """Make `name` usable (created when `create`); False when it does not exist and may not be made."""
        if name in self._ready:
            return True
        client = self.client
        with self._open_lock:  # one thread creates a collection; the others then find it
            if name in self._ready:
                return True
            if self._call("has_collection", client.has_collection, name):
                self._call("load_collection", layout.open_existing, client, name, self.dim)
            elif create:
                self._call("create_collection", layout.create, client, name, self.dim)
            else:
                return False
            self._ready.add(name)
        return True

    def _existing(self) -> list[str]:
        return [name for name in self.collection_names() if self._open(name, create=False)]

    def upsert(self, rows: Iterable[EvidenceRow], *, flush: bool | None = None) -> int:
        by_collection: dict[str, list[dict]] = {}
        for r in rows:
            vec = np.asarray(r.dense, dtype=np.float32)
            if vec.shape != (self.dim,):
                raise ValueError(f"dense vector has shape {vec.shape}, expected ({self.dim},)")
            subject_id = typed_int(r.subject_id, "subject_id")
            by_collection.setdefault(self.collection_of(subject_id), []).append(
                {
                    "pk": r.pk,
                    "tenant_id": typed_int(r.tenant_id, "tenant_id"),
                    "subject_id": subject_id,
                    "start_seq": typed_int(r.start_seq, "start_seq"),
                    "end_seq": typed_int(r.end_seq, "end_seq"),
                    "ts_ms": typed_int(r.ts_ms, "ts_ms"),
                    "session": (r.session or "")[:SESSION_MAX],
                    "text": clip_text(r.text),
                    "dense": vec.tolist(),
                }
            )
        total = rows_in = 0
        for name, payload in by_collection.items():
            self._open(name, create=True)
            rows_in += len(payload)
            for i in range(0, len(payload), UPSERT_BATCH):
                res = self._call("upsert", self.client.upsert, name, payload[i : i + UPSERT_BATCH])
                total += int(res.get("upsert_count", 0))
        if flush or (flush is None and rows_in >= FLUSH_AT_ROWS):
            self._flush_names(list(by_collection))
        elif total and flush is None:
            self._note_small_write(total, by_collection)
        return total

    def flush(self) -> None:
        """Seal growing segments of every existing collection (after bulk loads; the beat backstop)."""
        self._flush_names(self._existing())

    def _flush_names(self, names: list[str]) -> None:
        with self._flush_lock:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
                self._idle_timer = None
            names = sorted(set(names) | self._dirty)
            self._dirty.clear()
            self.unflushed_rows = 0
        for name in names:
            if self._open(name, create=False):
                self._call("flush", self.client.flush, name)

    def _note_small_write(self, rows: int, names: Iterable[str]) -> None:
        if self.flush_idle_s <= 0:
            return
        with self._flush_lock:
            self.unflushed_rows += rows
            self._dirty.update(names)
            self._last_write = time.monotonic()
            if self._idle_timer is None:
                self._arm(self.flush_idle_s)

    def _arm(self, delay: float) -> None:  # caller holds _flush_lock
        timer = threading.Timer(delay, self._idle_flush)
        timer.daemon = True
        timer.name = f"evidence-idle-flush-{self.collection}"
        self._idle_timer = timer
        timer.start()

    def _idle_flush(self) -> None:
        with self._flush_lock:
            if self._idle_timer is None or self._client is None:
                return  # flushed or closed meanwhile
            wait = self._last_write + self.flush_idle_s - time.monotonic()
            if wait > 0.05:  # written to since the timer was armed: wait for a quiet period
                self._arm(wait)
                return
            self._idle_timer = None
            rows, self.unflushed_rows = self.unflushed_rows, 0
            names, self._dirty = sorted(self._dirty), set()
        try:
            for name in names:
                self._call("flush", self.client.flush, name)
            logger.info("idle flush of %s: %d small-batch rows sealed", ", ".join(names), rows)
        except IndexUnavailable as exc:  # the beat backstop (workers.flush_evidence) retries later
            logger.warning("idle flush of %s failed: %s", self.collection, exc)

    def delete_subject(self, tenant_id: int, subject_id: int) -> int:
        """Delete the subject's rows (erasure), then flush (the write-ahead log loses their text) and
        ask for a compaction (sealed segments do; a no-op on Milvus Lite: docs/RELIABILITY.md)."""
        expr = Scope(tenant_id, subject_id).expr()
        name = self.collection_of(subject_id)
        if not self._open(name, create=False):
            return 0
        res = self._call("delete", self.client.delete, name, filter=expr)
        self._flush_names([name])
        self._call("compact", self.client.compact, name)
        return int(res.get("delete_count", 0)) if isinstance(res, dict) else 0

    # A subject whose collection does not exist yet has no evidence: reads answer empty and
    # create nothing.
    def count(self, scope: Scope) -> int:
        name = self.collection_of(scope.subject_id)
        if not self._open(name, create=False):
            return 0
        res = self._call("count", self.client.query, name, filter=scope.expr(), output_fields=["count(*)"])
        return int(res[0]["count(*)"]) if res else 0

    # Each search takes a list of queries and sends them as ONE request (nq = len(queries)): Milvus
    # parallelises the queries server-side, and per-request overhead dominates on Milvus Lite. An
    # embedded Lite file served by this process is searched without the gRPC hop (`lite.py`).
    def search_dense(
        self, vectors: Sequence[Sequence[float]], scope: Scope, *, limit: int
    ) -> list[list[Hit]]:
        return self._search("dense", [list(map(float, v)) for v in vectors], scope, limit)

    def search_bm25(self, texts: Sequence[str], scope: Scope, *, limit: int) -> list[list[Hit]]:
        return self._search("sparse", list(texts), scope, limit)

    def _search(self, field: str, data: list, scope: Scope, limit: int) -> list[list[Hit]]:
        name = self.collection_of(scope.subject_id)
        if not self._open(name, create=False):
            return [[] for _ in data]
        metric, expr = ("COSINE" if field == "dense" else "BM25"), scope.expr()
        local = lite.local_collection(self.uri, name) if self.direct_reads else None
        if local is not None:
            kw = {"anns_field": field, "expr": expr, "metric_type": metric, "top_k": limit}
            parts = lite.subject_partitions(local, scope.subject_id)
            res = self._call(
                "search", local.search, data, partition_names=parts, output_fields=OUTPUT_FIELDS, **kw
            )
        else:
            kw = {"anns_field": field, "filter": expr, "search_params": {"metric_type": metric}}
            res = self._call(
                "search", self.client.search, name, data=data, limit=limit, output_fields=OUTPUT_FIELDS, **kw
            )
        if field == "dense":
            return [[to_hit(r) for r in hits] for hits in res]
        # Milvus Lite reports BM25 distances negated; flip so larger is better everywhere.
        return [[to_hit(r, abs(float(r["distance"]))) for r in hits] for hits in res]

    def search_hybrid(
        self, vectors: Sequence[Sequence[float]], texts: Sequence[str], scope: Scope, *, limit: int
    ) -> list[list[Hit]]:
        """Dense + BM25 fused with RRF, per query (vectors[i] pairs with texts[i]); in-process Lite: the
        two sub-searches its HybridSearch handler runs, fused by the same rule (`rows.rrf_fuse`)."""
        from pymilvus import AnnSearchRequest, RRFRanker

        if len(vectors) != len(texts):
            raise ValueError("hybrid search needs one vector per text")
        name = self.collection_of(scope.subject_id)
        if not self._open(name, create=False):
            return [[] for _ in texts]
        expr = scope.expr()
        n = hybrid_candidates(limit)
        if self.direct_reads and lite.local_collection(self.uri, name) is not None:
            dense = self.search_dense(vectors, scope, limit=n)
            sparse = self.search_bm25(texts, scope, limit=n)
            return [rrf_fuse([d, s])[:limit] for d, s in zip(dense, sparse, strict=True)]
        sides = (("dense", "COSINE", [list(map(float, v)) for v in vectors]), ("sparse", "BM25", list(texts)))
        reqs = [
            AnnSearchRequest(data=data, anns_field=field, param={"metric_type": metric}, limit=n, expr=expr)
            for field, metric, data in sides
        ]
        kw = {"ranker": RRFRanker(RRF_K), "limit": limit, "output_fields": OUTPUT_FIELDS}
        res = self._call("hybrid_search", self.client.hybrid_search, name, reqs, **kw)
        return [[to_hit(r) for r in hits] for hits in res]
