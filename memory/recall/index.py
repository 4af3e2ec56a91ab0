"""The evidence index: one Milvus collection, the tenant as partition key.

Each row is one retrieval unit (a user turn and the assistant reply that
follows it, see `units.py`) with its subject, message span, time, text, a dense
vector and a BM25 sparse vector computed by Milvus from `text`.

Filters are built only from typed integers (`Scope`): a value that is not an
`int` is refused with `TypeError` before any expression is formed, so no
request string can ever reach a Milvus expression. (milvus-lite 3.2 rejects
`filter_params` templates, so typed formatting is the safe path here.)

Flushing: Milvus searches rows in unsealed (growing) segments by brute force,
and the indexing tasks write a chunk's few rows at a time. Bulk writes
(>= FLUSH_AT_ROWS) flush at once; smaller writes arm an idle timer in the
writing process: `flush_idle_s` after the last write, the collection is
flushed (one flush per quiet period, not one per chunk: every flush seals a
small segment). The Celery beat task `workers.flush_evidence` flushes
periodically as a backstop for a process that exits before its timer fires.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

logger = logging.getLogger(__name__)

TEXT_MAX_BYTES = 16000
SESSION_MAX = 128
# Bulk writes of at least this many rows are flushed: Milvus searches unsealed (growing) segments
# by brute force; measured on Milvus Lite with 20k rows: hybrid 10.2 s before flush, 0.66 s after.
FLUSH_AT_ROWS = 1000
# Smaller writes are flushed once the writing process has been idle this long.
FLUSH_IDLE_S = 10.0
OUTPUT_FIELDS = ["subject_id", "start_seq", "end_seq", "ts_ms", "session", "text"]


class IndexUnavailable(RuntimeError):
    """Milvus cannot be reached or refused the operation."""


def typed_int(value: object, name: str) -> int:
    """Return `value` if it is a genuine integer (not bool, not str); else raise TypeError."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return int(value)


@dataclass(frozen=True)
class Scope:
    """What a search may see: one tenant, one subject, optionally only evidence up to a point."""

    tenant_id: int
    subject_id: int
    max_seq: int | None = None
    max_ts_ms: int | None = None

    def __post_init__(self) -> None:
        typed_int(self.tenant_id, "tenant_id")
        typed_int(self.subject_id, "subject_id")
        if self.max_seq is not None:
            typed_int(self.max_seq, "max_seq")
        if self.max_ts_ms is not None:
            typed_int(self.max_ts_ms, "max_ts_ms")

    def expr(self) -> str:
        parts = [
            f"tenant_id == {typed_int(self.tenant_id, 'tenant_id')}",
            f"subject_id == {typed_int(self.subject_id, 'subject_id')}",
        ]
        if self.max_seq is not None:
            parts.append(f"end_seq <= {typed_int(self.max_seq, 'max_seq')}")
        if self.max_ts_ms is not None:
            parts.append(f"ts_ms <= {typed_int(self.max_ts_ms, 'max_ts_ms')}")
        return " and ".join(parts)


@dataclass(frozen=True)
class EvidenceRow:
    tenant_id: int
    subject_id: int
    start_seq: int
    end_seq: int
    text: str
    dense: Sequence[float]
    ts_ms: int = 0
    session: str = ""

    @property
    def pk(self) -> str:
        return evidence_pk(self.tenant_id, self.subject_id, self.start_seq)


@dataclass
class Hit:
    pk: str
    subject_id: int
    start_seq: int
    end_seq: int
    ts_ms: int
    session: str
    text: str
    score: float
    queries: list[str] = field(default_factory=list)


def evidence_pk(tenant_id: int, subject_id: int, start_seq: int) -> str:
    """Deterministic primary key: re-indexing the same span upserts the same row."""
    key = f"{typed_int(tenant_id, 'tenant_id')}:{typed_int(subject_id, 'subject_id')}:{typed_int(start_seq, 'start_seq')}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def hybrid_candidates(limit: int) -> int:
    """Hits asked of each side (dense, BM25) of a hybrid search before RRF keeps `limit`."""
    return max(limit * 3, 20)


def _clip_text(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= TEXT_MAX_BYTES:
        return text
    return data[:TEXT_MAX_BYTES].decode("utf-8", errors="ignore")


def _hit(raw: dict, score: float | None = None) -> Hit:
    ent = raw.get("entity", raw)
    return Hit(
        pk=str(raw.get("pk", raw.get("id"))),
        subject_id=int(ent["subject_id"]),
        start_seq=int(ent["start_seq"]),
        end_seq=int(ent["end_seq"]),
        ts_ms=int(ent["ts_ms"]),
        session=str(ent["session"]),
        text=str(ent["text"]),
        score=float(raw["distance"] if score is None else score),
    )


class EvidenceIndex:
    """Thin wrapper over `pymilvus.MilvusClient` for the evidence collection."""

    def __init__(
        self,
        uri: str,
        *,
        dim: int,
        collection: str = "evidence",
        token: str = "",
        timeout: float = 10.0,
        flush_idle_s: float = FLUSH_IDLE_S,
    ):
        self.uri = uri
        self.dim = typed_int(dim, "dim")
        self.collection = collection
        self.token = token
        self.timeout = timeout
        self.flush_idle_s = float(flush_idle_s)  # <= 0: small writes are never flushed by this process
        self._client = None
        self._ready = False
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._idle_timer: threading.Timer | None = None
        self._last_write = 0.0
        self.unflushed_rows = 0

    # -- connection ----------------------------------------------------------
    @property
    def client(self):
        if self._client is None:
            with self._lock:
                if self._client is None:
                    from pymilvus import MilvusClient

                    try:
                        self._client = MilvusClient(uri=self.uri, token=self.token, timeout=self.timeout)
                    except Exception as exc:  # noqa: BLE001
                        raise IndexUnavailable(f"cannot connect to Milvus at {self.uri}: {exc}") from exc
        return self._client

    def _call(self, what: str, fn, *args, **kwargs):
        try:
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
                self._ready = False
                if "://" not in self.uri:  # Milvus Lite: stop its in-process server and free the file
                    from milvus_lite.server_manager import server_manager_instance

                    server_manager_instance.release_server(self.uri)

    # -- schema --------------------------------------------------------------
    def ensure_collection(self) -> None:
        if self._ready:
            return
        self._call("ensure_collection", self._ensure)
        self._ready = True

    def _ensure(self) -> None:
        from pymilvus import DataType, Function, FunctionType

        c = self.client
        if c.has_collection(self.collection):
            fields = {f["name"]: f for f in c.describe_collection(self.collection)["fields"]}
            have = int(fields["dense"]["params"]["dim"])
            if have != self.dim:
                raise IndexUnavailable(
                    f"collection {self.collection!r} has dim {have}, embedder has {self.dim}: "
                    "use another PERSONATREE_MILVUS_COLLECTION or re-index"
                )
            # A collection reopened from disk (or released by another client) is not searchable
            # until loaded; loading an already loaded collection is a no-op.
            c.load_collection(self.collection)
            return
        s = c.create_schema(auto_id=False, enable_dynamic_field=False)
        s.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=64)
        s.add_field("tenant_id", DataType.INT64, is_partition_key=True)
        s.add_field("subject_id", DataType.INT64)
        s.add_field("start_seq", DataType.INT64)
        s.add_field("end_seq", DataType.INT64)
        s.add_field("ts_ms", DataType.INT64)
        s.add_field("session", DataType.VARCHAR, max_length=SESSION_MAX * 4)
        s.add_field("text", DataType.VARCHAR, max_length=TEXT_MAX_BYTES, enable_analyzer=True)
        s.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
        s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        s.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        ip = c.prepare_index_params()
        ip.add_index("dense", index_type="AUTOINDEX", metric_type="COSINE")
        ip.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        c.create_collection(self.collection, schema=s, index_params=ip, num_partitions=16)
        logger.info("created evidence collection %s (dim %d)", self.collection, self.dim)

    # -- writes --------------------------------------------------------------
    def upsert(
        self, rows: Iterable[EvidenceRow], *, batch_size: int = 1000, flush: bool | None = None
    ) -> int:
        self.ensure_collection()
        payload = []
        for r in rows:
            vec = np.asarray(r.dense, dtype=np.float32)
            if vec.shape != (self.dim,):
                raise ValueError(f"dense vector has shape {vec.shape}, expected ({self.dim},)")
            payload.append(
                {
                    "pk": r.pk,
                    "tenant_id": typed_int(r.tenant_id, "tenant_id"),
                    "subject_id": typed_int(r.subject_id, "subject_id"),
                    "start_seq": typed_int(r.start_seq, "start_seq"),
                    "end_seq": typed_int(r.end_seq, "end_seq"),
                    "ts_ms": typed_int(r.ts_ms, "ts_ms"),
                    "session": (r.session or "")[:SESSION_MAX],
                    "text": _clip_text(r.text),
                    "dense": vec.tolist(),
                }
            )
        total = 0
        for i in range(0, len(payload), batch_size):
            res = self._call("upsert", self.client.upsert, self.collection, payload[i : i + batch_size])
            total += int(res.get("upsert_count", 0))
        if flush or (flush is None and len(payload) >= FLUSH_AT_ROWS):
            self.flush()
        elif total and flush is None:
            self._note_small_write(total)
        return total

    def flush(self) -> None:
        """Seal growing segments so searches use the built indexes (call after bulk loads)."""
        self.ensure_collection()
        with self._flush_lock:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
                self._idle_timer = None
            self.unflushed_rows = 0
        self._call("flush", self.client.flush, self.collection)

    def _note_small_write(self, rows: int) -> None:
        if self.flush_idle_s <= 0:
            return
        with self._flush_lock:
            self.unflushed_rows += rows
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
        try:
            self._call("flush", self.client.flush, self.collection)
            logger.info("idle flush of %s: %d small-batch rows sealed", self.collection, rows)
        except IndexUnavailable as exc:  # the beat backstop (workers.flush_evidence) retries later
            logger.warning("idle flush of %s failed: %s", self.collection, exc)

    def delete_subject(self, tenant_id: int, subject_id: int) -> int:
        """Delete the subject's rows (erasure), then flush and ask for a compaction.

        A Milvus delete only marks rows: until then their text stays on disk. The flush rewrites
        the write-ahead log without them (on Milvus Lite the rows written since the last flush
        live there, text included); the compaction drops them from sealed segments on a Milvus
        server. Milvus Lite compacts on its own schedule only (its ``compact`` is a no-op), so
        text of rows sealed before the erasure stays in its segment files until then
        (docs/RELIABILITY.md, Erasure).
        """
        self.ensure_collection()
        expr = Scope(tenant_id, subject_id).expr()
        res = self._call("delete", self.client.delete, self.collection, filter=expr)
        self.flush()
        self._call("compact", self.client.compact, self.collection)
        return int(res.get("delete_count", 0)) if isinstance(res, dict) else 0

    # -- reads ---------------------------------------------------------------
    def count(self, scope: Scope) -> int:
        self.ensure_collection()
        res = self._call(
            "count", self.client.query, self.collection, filter=scope.expr(), output_fields=["count(*)"]
        )
        return int(res[0]["count(*)"]) if res else 0

    def fetch(self, scope: Scope, *, limit: int = 1000) -> list[Hit]:
        self.ensure_collection()
        res = self._call(
            "query",
            self.client.query,
            self.collection,
            filter=scope.expr(),
            output_fields=["pk", *OUTPUT_FIELDS],
            limit=limit,
        )
        return sorted((_hit(r, 0.0) for r in res), key=lambda h: h.start_seq)

    # Each search takes a list of queries and sends them as ONE request (nq = len(queries)): Milvus
    # parallelises the queries server-side, and per-request overhead dominates on Milvus Lite.
    def search_dense(
        self, vectors: Sequence[Sequence[float]], scope: Scope, *, limit: int
    ) -> list[list[Hit]]:
        self.ensure_collection()
        res = self._call(
            "search",
            self.client.search,
            self.collection,
            data=[list(map(float, v)) for v in vectors],
            anns_field="dense",
            limit=limit,
            filter=scope.expr(),
            output_fields=OUTPUT_FIELDS,
            search_params={"metric_type": "COSINE"},
        )
        return [[_hit(r) for r in hits] for hits in res]

    def search_bm25(self, texts: Sequence[str], scope: Scope, *, limit: int) -> list[list[Hit]]:
        self.ensure_collection()
        res = self._call(
            "search",
            self.client.search,
            self.collection,
            data=list(texts),
            anns_field="sparse",
            limit=limit,
            filter=scope.expr(),
            output_fields=OUTPUT_FIELDS,
            search_params={"metric_type": "BM25"},
        )
        # Milvus Lite reports BM25 distances negated; flip so larger is better everywhere.
        return [[_hit(r, abs(float(r["distance"]))) for r in hits] for hits in res]

    def search_hybrid(
        self,
        vectors: Sequence[Sequence[float]],
        texts: Sequence[str],
        scope: Scope,
        *,
        limit: int,
        candidates: int | None = None,
        rrf_k: int = 60,
    ) -> list[list[Hit]]:
        """Dense + BM25 fused with RRF, per query (vectors[i] pairs with texts[i])."""
        from pymilvus import AnnSearchRequest, RRFRanker

        if len(vectors) != len(texts):
            raise ValueError("hybrid search needs one vector per text")
        self.ensure_collection()
        expr = scope.expr()
        n = candidates or hybrid_candidates(limit)
        reqs = [
            AnnSearchRequest(
                data=[list(map(float, v)) for v in vectors],
                anns_field="dense",
                param={"metric_type": "COSINE"},
                limit=n,
                expr=expr,
            ),
            AnnSearchRequest(
                data=list(texts), anns_field="sparse", param={"metric_type": "BM25"}, limit=n, expr=expr
            ),
        ]
        res = self._call(
            "hybrid_search",
            self.client.hybrid_search,
            self.collection,
            reqs,
            ranker=RRFRanker(rrf_k),
            limit=limit,
            output_fields=OUTPUT_FIELDS,
        )
        return [[_hit(r) for r in hits] for hits in res]
