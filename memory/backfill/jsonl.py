"""Reader of PersonaTree's own backfill format: JSON Lines, one subject's history (or a further part
of it) a line, as docs/BACKFILL.md specifies. A message's optional ``id`` is its idempotency key
verbatim; without it the key is derived from the source label and the message's position.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from memory.backfill.records import (
    BackfillFormatError,
    SubjectHistory,
    derive_key,
    nonblank_lines,
    role_and_content,
    source_label,
    unknown_keys,
)
from memory.messages import IncomingMessage

LINE_KEYS = {"subject", "messages"}
MESSAGE_KEYS = {"role", "content", "ts", "session_id", "id"}


def parse_ts(value: object, where: str) -> datetime | None:
    """An ISO 8601 timestamp (``Z`` allowed); naive times are taken as UTC."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BackfillFormatError(where, "ts must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise BackfillFormatError(where, f"ts {value!r} is not ISO 8601") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _message(raw: object, *, where: str, label: str, line_no: int, index: int) -> IncomingMessage:
    if not isinstance(raw, dict):
        raise BackfillFormatError(where, "a message must be an object")
    unknown_keys(raw, MESSAGE_KEYS, where)
    role, content = role_and_content(raw, where)
    session_id = raw.get("session_id") or ""
    if not isinstance(session_id, str):
        raise BackfillFormatError(f"{where}.session_id", "session_id must be a string")
    given = raw.get("id")
    if given is not None and (not isinstance(given, str) or not given.strip()):
        raise BackfillFormatError(f"{where}.id", "id must be a non-empty string")
    key = given if given is not None else derive_key(label, line_no, index)
    return IncomingMessage(role, content, key, parse_ts(raw.get("ts"), f"{where}.ts"), session_id)


class JsonlSource:
    def __init__(self, path: str | Path, *, label: str | None = None):
        self.path = Path(path)
        self.label = source_label(self.path, label)

    def __len__(self) -> int:
        return sum(1 for _ in self._lines())

    def __iter__(self) -> Iterator[SubjectHistory]:
        for line_no, raw_line in self._lines():
            yield self._line(raw_line, line_no)

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        return nonblank_lines(self.path)

    def _line(self, raw_line: bytes, line_no: int) -> SubjectHistory:
        where = f"{self.path.name}:{line_no}"
        try:
            record = json.loads(raw_line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise BackfillFormatError(where, f"not UTF-8 ({exc.reason} at byte {exc.start})") from exc
        except json.JSONDecodeError as exc:
            raise BackfillFormatError(where, f"not JSON ({exc.msg}, column {exc.colno})") from exc
        if not isinstance(record, dict):
            raise BackfillFormatError(where, "a line must be a JSON object")
        unknown_keys(record, LINE_KEYS, where)
        subject = record.get("subject")
        if not isinstance(subject, str) or not subject.strip():
            raise BackfillFormatError(f"{where} subject", "subject must be a non-empty string")
        messages = record.get("messages")
        if not isinstance(messages, list):
            raise BackfillFormatError(f"{where} messages", "messages must be a list")
        parsed = tuple(
            _message(m, where=f"{where} messages[{i}]", label=self.label, line_no=line_no, index=i)
            for i, m in enumerate(messages)
        )
        return SubjectHistory(external_id=subject, messages=parsed, location=where)
