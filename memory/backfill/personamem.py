"""Reader of PersonaMem shared contexts: one subject per context (docs/BACKFILL.md, "personamem").
``end_index`` (context id -> end index) imports only the prefix a PersonaMem question may see.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from memory.backfill.records import (
    BackfillFormatError,
    SubjectHistory,
    derive_key,
    nonblank_lines,
    role_and_content,
    source_label,
)
from memory.messages import IncomingMessage


class PersonamemSource:
    def __init__(
        self,
        path: str | Path,
        *,
        end_index: Mapping[str, int] | None = None,
        prefix: str = "",
        label: str | None = None,
    ):
        self.path = Path(path)
        self.label = source_label(self.path, label)
        self.end_index = dict(end_index) if end_index else None
        self.prefix = prefix

    def __len__(self) -> int:
        return sum(1 for _ in nonblank_lines(self.path))

    def __iter__(self) -> Iterator[SubjectHistory]:
        for line_no, raw in nonblank_lines(self.path):
            where = f"{self.path.name}:{line_no}"
            try:
                record = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise BackfillFormatError(where, f"not a UTF-8 JSON line ({exc})") from exc
            if not isinstance(record, dict) or not record:
                raise BackfillFormatError(where, "a line must be {shared_context_id: [turns]}")
            for context_id, turns in record.items():
                yield self._history(str(context_id), turns, where)

    def _history(self, context_id: str, turns: object, where: str) -> SubjectHistory:
        if not isinstance(turns, list):
            raise BackfillFormatError(f"{where} {context_id}", "the context must be a list of turns")
        if self.end_index is not None and context_id in self.end_index:
            turns = turns[: self.end_index[context_id]]
        messages = []
        for i, turn in enumerate(turns):
            turn_where = f"{where} {context_id}[{i}]"
            if not isinstance(turn, dict):
                raise BackfillFormatError(turn_where, "a turn must be an object")
            role, content = role_and_content(turn, turn_where)
            if not content.strip():
                continue
            messages.append(IncomingMessage(role, content, derive_key(self.label, context_id, i)))
        return SubjectHistory(
            external_id=f"{self.prefix}{context_id}",
            messages=tuple(messages),
            location=where,
            meta={"shared_context_id": context_id},
        )
