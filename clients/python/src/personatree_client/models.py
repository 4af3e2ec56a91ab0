"""What the client sends (:class:`Message`), the typed results of ingest, and what every result
type shares (the store and query results are in ``results.py``).

Results are frozen dataclasses built from the server's JSON by ``from_json``; fields the client
does not know yet are kept in ``raw`` (the whole decoded body), so a newer server never breaks an
older client. Datetimes are parsed to aware :class:`datetime.datetime` objects.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Role = Literal["user", "assistant", "system"]
Mode = Literal["auto", "fast", "deep"]
AsOf = int | datetime | str


def new_idempotency_key() -> str:
    return uuid.uuid4().hex


def _dt(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True)
class Message:
    """One message to ingest.

    ``idempotency_key`` defaults to a random key made when the object is created: sending the
    same ``Message`` objects again (after a timeout, a crash between batches) is reported as
    duplicates, never stored twice. Pass your own key (e.g. your message id) to be safe across
    processes too.
    """

    role: Role
    content: str
    idempotency_key: str = field(default_factory=new_idempotency_key)
    ts: datetime | str | None = None
    session_id: str = ""

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "idempotency_key": self.idempotency_key,
        }
        if self.ts is not None:
            body["ts"] = self.ts.isoformat() if isinstance(self.ts, datetime) else self.ts
        if self.session_id:
            body["session_id"] = self.session_id
        return body

    @classmethod
    def coerce(cls, value: Message | dict[str, Any]) -> Message:
        """A :class:`Message` as is, or one built from a dict with the same keys."""
        if isinstance(value, Message):
            return value
        if isinstance(value, dict):
            return cls(**value)
        raise TypeError(f"a message must be a Message or a dict, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class Receipt:
    """Where one message landed in the subject's log."""

    idempotency_key: str
    seq: int


@dataclass(frozen=True, slots=True)
class IngestResult:
    """The merged answer of every batch of one ``ingest`` call.

    ``accepted`` were stored now, ``duplicates`` had been stored before (their original seq).
    ``cursor`` is the highest seq of the subject's log after the last batch; compare it with
    :attr:`IngestStatus.applied_through_seq`.
    """

    subject: str
    subject_created: bool
    accepted: tuple[Receipt, ...]
    duplicates: tuple[Receipt, ...]
    cursor: int
    chunks_created: int
    batches: int

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IngestResult:
        return cls(
            subject=data["subject"],
            subject_created=bool(data["subject_created"]),
            accepted=tuple(Receipt(r["idempotency_key"], r["seq"]) for r in data["accepted"]),
            duplicates=tuple(Receipt(r["idempotency_key"], r["seq"]) for r in data["duplicates"]),
            cursor=data["cursor"],
            chunks_created=data["chunks_created"],
            batches=1,
        )

    def merge(self, later: IngestResult) -> IngestResult:
        """This result followed by the next batch's."""
        return IngestResult(
            subject=self.subject,
            subject_created=self.subject_created or later.subject_created,
            accepted=self.accepted + later.accepted,
            duplicates=self.duplicates + later.duplicates,
            cursor=max(self.cursor, later.cursor),
            chunks_created=self.chunks_created + later.chunks_created,
            batches=self.batches + later.batches,
        )


@dataclass(frozen=True, slots=True)
class ChunkFailure:
    chunk_id: int
    status: str
    start_seq: int
    end_seq: int
    attempts: int
    error: str


@dataclass(frozen=True, slots=True)
class RequeuedChunk:
    """A failed chunk back in the queue: ``status`` pending, ``attempts`` 0; ``last_error`` is why it
    failed (kept until it runs again)."""

    chunk_id: int
    subject: str
    start_seq: int
    end_seq: int
    status: str
    attempts: int
    last_error: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RequeuedChunk:
        return cls(
            chunk_id=int(data["chunk_id"]),
            subject=data["subject"],
            start_seq=int(data["start_seq"]),
            end_seq=int(data["end_seq"]),
            status=data["status"],
            attempts=int(data["attempts"]),
            last_error=data.get("last_error", ""),
        )


@dataclass(frozen=True, slots=True)
class IngestStatus:
    """Where a subject's messages are in the pipeline (``GET .../ingest``)."""

    subject: str
    cursor: int
    chunked_through_seq: int
    applied_through_seq: int
    unchunked_messages: int
    chunks: dict[str, int]
    pending_chunks: int
    head_version: int
    last_applied_version: int | None
    last_applied_at: datetime | None
    blocked: bool
    failures: tuple[ChunkFailure, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def caught_up(self) -> bool:
        """Every message of the log up to ``cursor`` has reached the tree."""
        return self.applied_through_seq >= self.cursor and self.pending_chunks == 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IngestStatus:
        return cls(
            subject=data["subject"],
            cursor=data["cursor"],
            chunked_through_seq=data["chunked_through_seq"],
            applied_through_seq=data["applied_through_seq"],
            unchunked_messages=data["unchunked_messages"],
            chunks=dict(data["chunks"]),
            pending_chunks=data["pending_chunks"],
            head_version=data["head_version"],
            last_applied_version=data.get("last_applied_version"),
            last_applied_at=_dt(data.get("last_applied_at")),
            blocked=bool(data["blocked"]),
            failures=tuple(ChunkFailure(**f) for f in data.get("failures", ())),
            raw=data,
        )


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    chunk_id: int
    start_seq: int
    end_seq: int


@dataclass(frozen=True, slots=True)
class FlushResult:
    """The chunks ``flush`` closed now, and the ingest status right after."""

    chunks_created: tuple[ChunkSpan, ...]
    status: IngestStatus

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FlushResult:
        return cls(
            chunks_created=tuple(ChunkSpan(**c) for c in data["chunks_created"]),
            status=IngestStatus.from_json(data),
        )
