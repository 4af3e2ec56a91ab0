"""The typed results of reading a subject and of querying its memory: tree, versions, export,
leaves, subjects, erasure, context and answer (conventions: ``models.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from personatree_client.models import _dt


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
    #: Extractive answers: the quoted passages (``kind``, ``cite``, ``quote``, ``score``); else empty.
    citations: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Answer:
        return cls(
            **cls._fields(data),
            answer=data["answer"],
            model=dict(data.get("model") or {}),
            citations=tuple(data.get("citations") or ()),
        )


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


@dataclass(frozen=True, slots=True)
class LeafHit:
    """A leaf matching a search: its value now, its score and when the value was set."""

    path: str
    tier: str
    value: str
    score: float
    set_at: datetime | None


@dataclass(frozen=True, slots=True)
class EvidenceHit:
    """A past-dialogue unit matching a search (keys with ``read_special`` only)."""

    id: str
    text: str
    score: float
    start_seq: int
    end_seq: int
    ts: datetime | None
    session: str | None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """``search``: ranked leaves and evidence; ``evidence_status`` is ``ok``, ``withheld`` (the key
    lacks ``read_special``) or ``unavailable`` (the index is down; ``notices`` say so)."""

    subject: str
    query: str
    version: int
    leaves: tuple[LeafHit, ...]
    evidence: tuple[EvidenceHit, ...]
    evidence_status: str
    notices: tuple[str, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchResult:
        return cls(
            subject=data["subject"],
            query=data["query"],
            version=int(data["version"]),
            leaves=tuple(
                LeafHit(h["path"], h["tier"], h["value"], float(h["score"]), _dt(h.get("set_at")))
                for h in data["leaves"]
            ),
            evidence=tuple(
                EvidenceHit(
                    id=h["id"],
                    text=h["text"],
                    score=float(h["score"]),
                    start_seq=int(h["source"]["start_seq"]),
                    end_seq=int(h["source"]["end_seq"]),
                    ts=_dt(h["source"].get("ts")),
                    session=h["source"].get("session"),
                )
                for h in data["evidence"]
            ),
            evidence_status=data["evidence_status"],
            notices=tuple(data.get("notices", ())),
            raw=data,
        )


@dataclass(frozen=True, slots=True)
class Change:
    """One leaf's net change between two trees (``op``: ADD, UPDATE or DELETE)."""

    path: str
    op: str
    old: str | None
    new: str | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Change:
        return cls(path=data["path"], op=data["op"], old=data.get("old"), new=data.get("new"))


@dataclass(frozen=True, slots=True)
class LeafChange:
    """One value a leaf was given: in which version, by whom, from which sentence."""

    version: int | None
    op: str
    previous: str | None
    value: str | None
    actor_kind: str
    actor_name: str
    source_text: str
    chunk_id: int | None
    created_at: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LeafChange:
        actor = data.get("actor") or {}
        return cls(
            version=data.get("version"),
            op=data["op"],
            previous=data.get("previous"),
            value=data.get("value"),
            actor_kind=actor.get("kind", ""),
            actor_name=actor.get("name", ""),
            source_text=data.get("source_text", ""),
            chunk_id=data.get("chunk_id"),
            created_at=_dt(data.get("created_at")),
        )


@dataclass(frozen=True, slots=True)
class Revert:
    """A revert: ``status`` applied, unchanged (the head already equals that version) or
    pending_review (held for a moderator); ``changes`` what it changes."""

    subject: str
    reverted_to: int
    status: str
    head_version: int
    changes: tuple[Change, ...]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Revert:
        return cls(
            subject=data["subject"],
            reverted_to=int(data["reverted_to"]),
            status=data["status"],
            head_version=int(data["head_version"]),
            changes=tuple(Change.from_json(c) for c in data["changes"]),
        )
