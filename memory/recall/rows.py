"""What the evidence index stores and returns, and the only way a filter is formed: from typed
integers (`Scope`; anything else is a `TypeError`), so no request string can reach a Milvus
expression (milvus-lite 3.2 rejects `filter_params` templates).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from numbers import Integral

from .layout import TEXT_MAX_BYTES

OUTPUT_FIELDS = ["subject_id", "start_seq", "end_seq", "ts_ms", "session", "text"]
#: The ``k`` of reciprocal-rank fusion, here and in Milvus's RRFRanker (hybrid searches agree).
RRF_K = 60


def typed_int(value: object, name: str) -> int:
    """Return `value` if it is a genuine integer (not bool, not str); else raise TypeError."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return int(value)


@dataclass(frozen=True)
class Scope:
    """What a search may see: one tenant, one subject, optionally only evidence up to a point or in a
    time range (``min_ts_ms``..``max_ts_ms``, the message time in ms)."""

    tenant_id: int
    subject_id: int
    max_seq: int | None = None
    max_ts_ms: int | None = None
    min_ts_ms: int | None = None

    #: The optional bounds: (attribute, row field, comparison).
    BOUNDS = (("max_seq", "end_seq", "<="), ("max_ts_ms", "ts_ms", "<="), ("min_ts_ms", "ts_ms", ">="))

    def __post_init__(self) -> None:  # :meth:`expr` writes the values into a filter as they are
        typed_int(self.tenant_id, "tenant_id")
        typed_int(self.subject_id, "subject_id")
        for name, _field, _op in self.BOUNDS:
            if getattr(self, name) is not None:
                typed_int(getattr(self, name), name)

    def expr(self) -> str:
        parts = [f"tenant_id == {int(self.tenant_id)}", f"subject_id == {int(self.subject_id)}"]
        for name, row_field, op in self.BOUNDS:
            if getattr(self, name) is not None:
                parts.append(f"{row_field} {op} {int(getattr(self, name))}")
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
class Span:
    """A stored span of a subject's dialogue as a search finds it, with its score."""

    pk: str
    start_seq: int
    end_seq: int
    ts_ms: int
    session: str
    text: str
    score: float

    def source(self) -> dict:
        """Where the span is in the dialogue, as the API shows it (``ts``: ISO 8601, or None)."""
        ts = datetime.fromtimestamp(self.ts_ms / 1000, tz=UTC).isoformat() if self.ts_ms else None
        return {
            "start_seq": self.start_seq,
            "end_seq": self.end_seq,
            "ts": ts,
            "session": self.session or None,
        }


@dataclass
class Hit(Span):
    """A search's hit: the span, its subject and the queries that found it."""

    subject_id: int
    queries: list[str] = field(default_factory=list)


def evidence_pk(tenant_id: int, subject_id: int, start_seq: int) -> str:
    """Deterministic primary key: re-indexing the same span upserts the same row."""
    key = f"{typed_int(tenant_id, 'tenant_id')}:{typed_int(subject_id, 'subject_id')}:{typed_int(start_seq, 'start_seq')}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def hybrid_candidates(limit: int) -> int:
    """Hits asked of each side (dense, BM25) of a hybrid search before RRF keeps `limit`."""
    return max(limit * 3, 20)


def clip_text(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= TEXT_MAX_BYTES:
        return text
    return data[:TEXT_MAX_BYTES].decode("utf-8", errors="ignore")


def to_hit(raw: dict, score: float | None = None) -> Hit:
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


def rrf_fuse(rankings: Sequence[Sequence[Hit]]) -> list[Hit]:
    """Reciprocal-rank fusion (sum of 1 / (RRF_K + rank)) by primary key; a hit keeps its queries."""
    fused: dict[str, Hit] = {}
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.pk] = scores.get(hit.pk, 0.0) + 1.0 / (RRF_K + rank)
            if hit.pk in fused:
                for q in hit.queries:
                    if q not in fused[hit.pk].queries:
                        fused[hit.pk].queries.append(q)
            else:
                fused[hit.pk] = Hit(**{**hit.__dict__, "queries": list(hit.queries)})
    for pk, hit in fused.items():
        hit.score = scores[pk]
    return sorted(fused.values(), key=lambda h: (-h.score, h.start_seq))
