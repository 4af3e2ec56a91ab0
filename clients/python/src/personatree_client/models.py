"""What the client sends (:class:`Message`) and the typed results it returns.

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


@dataclass(frozen=True, slots=True)
class Tree:
    """A subject's tree at one version: ``{leaf path: value}`` (tiers the key may read)."""

    subject: str
    version: int
    schema_id: str
    schema_version: int
    tree: dict[str, str]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tree:
        return cls(
            subject=data["subject"],
            version=data["version"],
            schema_id=data["schema_id"],
            schema_version=data["schema_version"],
            tree=dict(data["tree"]),
            raw=data,
        )


@dataclass(frozen=True, slots=True)
class Version:
    number: int
    parent: int | None
    created_by: str
    chunk_id: int | None
    note: str
    created_at: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Version:
        return cls(
            number=data["number"],
            parent=data.get("parent"),
            created_by=data["created_by"],
            chunk_id=data.get("chunk_id"),
            note=data.get("note", ""),
            created_at=_dt(data.get("created_at")),
        )


@dataclass(frozen=True, slots=True)
class Versions:
    """A subject's version history, newest first (every page of it)."""

    subject: str
    head_version: int
    versions: tuple[Version, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Versions:
        return cls.from_pages([data])

    @classmethod
    def from_pages(cls, pages: list[dict[str, Any]]) -> Versions:
        """The pages of a paginated answer, in order; ``raw`` is the first page."""
        return cls(
            subject=pages[0]["subject"],
            head_version=pages[0]["head_version"],
            versions=tuple(Version.from_json(v) for page in pages for v in page["versions"]),
            raw=pages[0],
        )


@dataclass(frozen=True, slots=True)
class Export:
    """Everything the store holds about a subject (versions and ops as the server writes them, every
    page of them)."""

    subject: str
    head_version: int
    schema: dict[str, Any]
    tree: dict[str, str]
    versions: tuple[dict[str, Any], ...]
    ops: tuple[dict[str, Any], ...]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Export:
        return cls.from_pages([data])

    @classmethod
    def from_pages(cls, pages: list[dict[str, Any]]) -> Export:
        """The pages of a paginated export, in order: versions and ops are concatenated; subject,
        schema, head and tree are the last page's (the newest, matching the last versions read)."""
        last = pages[-1]
        return cls(
            subject=last["subject"],
            head_version=last["head_version"],
            schema=dict(last.get("schema") or {}),
            tree=dict(last.get("tree") or {}),
            versions=tuple(v for page in pages for v in page.get("versions") or ()),
            ops=tuple(op for page in pages for op in page.get("ops") or ()),
            raw=last,
        )


@dataclass(frozen=True, slots=True)
class Erasure:
    """The answer to ``erase``: the tombstone left and what was deleted, by kind."""

    erased: bool
    tombstone_id: int
    counts: dict[str, int]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Erasure:
        return cls(
            erased=bool(data["erased"]), tombstone_id=data["tombstone_id"], counts=dict(data["counts"])
        )


@dataclass(frozen=True, slots=True)
class RenderedContext:
    """The tree leaves rendered for a prompt."""

    text: str
    paths: tuple[str, ...]
    tokens: int


@dataclass(frozen=True, slots=True)
class Context:
    """Memory context for a query (``POST .../context``)."""

    subject: str
    query: str
    mode: str
    mode_used: str
    version: int
    context: RenderedContext
    evidence: tuple[dict[str, Any], ...]
    router: dict[str, Any]
    recall: dict[str, Any] | None
    token_budget: int
    tokens: int
    notices: tuple[str, ...]
    timings_ms: dict[str, float]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @staticmethod
    def _fields(data: dict[str, Any]) -> dict[str, Any]:
        ctx = data.get("context") or {}
        return {
            "subject": data["subject"],
            "query": data["query"],
            "mode": data["mode"],
            "mode_used": data["mode_used"],
            "version": data["version"],
            "context": RenderedContext(
                text=ctx.get("text", ""), paths=tuple(ctx.get("paths", ())), tokens=ctx.get("tokens", 0)
            ),
            "evidence": tuple(data.get("evidence") or ()),
            "router": dict(data.get("router") or {}),
            "recall": data.get("recall"),
            "token_budget": data["token_budget"],
            "tokens": data["tokens"],
            "notices": tuple(data.get("notices") or ()),
            "timings_ms": dict(data.get("timings_ms") or {}),
            "raw": data,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Context:
        return cls(**cls._fields(data))


@dataclass(frozen=True, slots=True)
class Answer(Context):
    """The responder model's answer over the same context (``POST .../answer``)."""

    answer: str = ""
    model: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Answer:
        return cls(**cls._fields(data), answer=data["answer"], model=dict(data.get("model") or {}))


@dataclass(frozen=True)
class SubjectSummary:
    """One subject of the key's tenant, as ``GET /v1/subjects`` lists it."""

    external_id: str
    schema_id: str
    schema_version: int
    head_version: int
    created_at: datetime | None
    updated_at: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SubjectSummary:
        return cls(
            external_id=data["external_id"],
            schema_id=data["schema_id"],
            schema_version=int(data["schema_version"]),
            head_version=int(data["head_version"]),
            created_at=_dt(data.get("created_at")),
            updated_at=_dt(data.get("updated_at")),
        )


@dataclass(frozen=True)
class Leaf:
    """One leaf of a subject's tree. After a write, ``status`` is ``applied``, ``unchanged`` or
    ``pending_review`` (held for a moderator: ``value`` is not set yet) and ``op_id`` names the
    audit record; both are None on a read."""

    subject: str
    path: str
    tier: str
    budget: int
    value: str | None
    version: int
    status: str | None = None
    op_id: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Leaf:
        return cls(
            subject=data["subject"],
            path=data["path"],
            tier=data["tier"],
            budget=int(data["budget"]),
            value=data["value"],
            version=int(data["version"]),
            status=data.get("status"),
            op_id=data.get("op_id"),
            raw=data,
        )
