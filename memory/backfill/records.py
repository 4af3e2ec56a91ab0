"""What every backfill reader yields: one subject's history as plain, validated records (no database).
A message's idempotency key derives from the source label and its position, so a re-run finds it.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from memory.messages import IncomingMessage

ROLES = ("user", "assistant", "system")


class BackfillFormatError(ValueError):
    """The source file does not follow its format; ``location`` says where (``file:line`` or a key path)."""

    def __init__(self, location: str, message: str):
        super().__init__(f"{location}: {message}")
        self.location = location
        self.message = message


@dataclass(frozen=True)
class SubjectHistory:
    """All messages of one subject from one source, in conversation order."""

    external_id: str
    messages: tuple[IncomingMessage, ...]  # the ingest API's record: handed over as is
    location: str = ""
    meta: dict = field(default_factory=dict, compare=False)


class BackfillSource(Protocol):
    """A readable source: iterate histories; ``len()`` is the number of histories (for the progress bar)."""

    def __iter__(self) -> Iterator[SubjectHistory]: ...

    def __len__(self) -> int: ...


def derive_key(label: str, *position: object) -> str:
    """A stable idempotency key for the message at ``position`` of the source called ``label``."""
    raw = "\x1f".join([label, *(str(p) for p in position)])
    return "bf_" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:40]


def nonblank_lines(source: Path | bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every line that is not blank, of a file or of bytes in memory."""
    with source.open("rb") if isinstance(source, Path) else io.BytesIO(source) as fh:
        for line_no, raw in enumerate(fh, start=1):
            if raw.strip():
                yield line_no, raw


def role_and_content(raw: dict, where: str) -> tuple[str, str]:
    """A message's ``role`` and ``content``, or the error naming the one that is wrong."""
    role, content = raw.get("role"), raw.get("content")
    if role not in ROLES:
        raise BackfillFormatError(f"{where}.role", f"role must be one of {list(ROLES)}, got {role!r}")
    if not isinstance(content, str):
        raise BackfillFormatError(f"{where}.content", "content must be a string")
    return role, content


def unknown_keys(raw: dict, allowed: set[str], where: str) -> None:
    if unknown := set(raw) - allowed:
        raise BackfillFormatError(where, f"unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")


def source_label(path: str | Path, override: str | None = None) -> str:
    """The label that namespaces derived keys: ``override`` or the file's name (not its directory)."""
    return override if override else Path(path).name
