"""Typed results of the read services: frozen dataclasses that also read as the JSON object they
become (a read-only mapping of their fields in order: ``result["mode_used"]``, ``dict(result)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import cache
from typing import Any


@cache
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


@dataclass(frozen=True, eq=False)  # eq=False: Mapping's equality, so a result equals the same dict
class ServiceResult(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        if key not in _names(type(self)):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_names(type(self)))

    def __len__(self) -> int:
        return len(_names(type(self)))

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _names(type(self))}


@dataclass(frozen=True, eq=False)
class ContextResult(ServiceResult):
    """:func:`memory.services.query.context_build`: the body of ``POST /v1/subjects/<id>/context``."""

    subject: str  # external id
    query: str
    mode: str  # asked for: fast | deep | auto
    mode_used: str  # fast | deep
    version: int  # tree version used (0 = empty tree)
    router: dict[str, Any]  # the router's decision, or the caller's mode
    context: dict[str, Any]  # the rendered tree: {text, paths, tokens}
    evidence: list[dict[str, Any]]  # deep mode: units in rank order
    recall: dict[str, Any] | None  # deep mode: status, queries, expansion, ... (None in fast mode)
    token_budget: int
    tokens: int  # tree + evidence
    notices: list[str]
    timings_ms: dict[str, float]


@dataclass(frozen=True, eq=False)
class AnswerResult(ContextResult):
    """:func:`memory.services.query.answer_build`: the context plus the answer."""

    answer: str
    model: dict[str, Any]  # model_id, prompt_version, prompt_tokens, completion_tokens
    # extractive mode: the quoted passages (kind, cite: leaf path or "evidence N", quote, score)
    citations: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, eq=False)
class IngestStatus(ServiceResult):
    """:func:`memory.services.ingest.ingest_status`: what the pipeline knows about a subject."""

    cursor: int  # highest message seq
    chunked_through_seq: int
    applied_through_seq: int
    unchunked_messages: int
    chunks: dict[str, int]  # count per chunk status
    pending_chunks: int  # pending + processing
    head_version: int
    last_applied_version: int | None  # last version a chunk produced
    last_applied_at: datetime | None
    blocked: bool  # a failed chunk holds the subject's later chunks back
    failures: list[dict[str, Any]]  # failed chunks and chunks with an error, by start seq (<= 50)
