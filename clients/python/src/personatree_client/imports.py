"""Bulk imports (``/v1/imports``): a JSONL file of whole histories, run on the server's backfill."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from personatree_client.models import _dt

NDJSON = "application/x-ndjson"

#: What ``create_import`` sends: JSONL bytes or text, a path to a JSONL file, or the lines as
#: mappings (``{"subject": ..., "messages": [...]}``, docs/BACKFILL.md).
ImportSource = bytes | str | Path | Iterable[Mapping[str, Any]]


def jsonl_body(source: ImportSource) -> bytes:
    """The request body for ``source`` (a ``str`` is JSONL text, not a path: pass a ``Path``)."""
    if isinstance(source, bytes):
        return source
    if isinstance(source, str):
        return source.encode("utf-8")
    if isinstance(source, Path):
        return source.read_bytes()
    return b"".join(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n" for line in source)


@dataclass(frozen=True, slots=True)
class ImportJob:
    """An import and how far it got: ``status`` queued / ingesting / processing / done / failed;
    ``chunks`` by status (applied, pending, processing, failed, total); ``rate_chunks_per_s`` and
    ``eta_s`` are ``None`` until measured (no ETA while a failed chunk blocks its subject)."""

    id: str
    status: str
    source: str
    lines: int
    messages: int
    new_messages: int
    duplicates: int
    chunks_created: int
    chunks: dict[str, int]
    rate_chunks_per_s: float | None
    eta_s: float | None
    error: str
    created_at: datetime | None
    finished_at: datetime | None

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImportJob:
        return cls(
            id=str(data["id"]),
            status=data["status"],
            source=data.get("source", ""),
            lines=int(data["lines"]),
            messages=int(data["messages"]),
            new_messages=int(data["new_messages"]),
            duplicates=int(data["duplicates"]),
            chunks_created=int(data["chunks_created"]),
            chunks={k: int(v) for k, v in data["chunks"].items()},
            rate_chunks_per_s=data.get("rate_chunks_per_s"),
            eta_s=data.get("eta_s"),
            error=data.get("error", ""),
            created_at=_dt(data.get("created_at")),
            finished_at=_dt(data.get("finished_at")),
        )
