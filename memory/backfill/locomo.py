"""Reader of LoCoMo conversations: one tree per speaker (docs/BACKFILL.md, "locomo")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from memory.backfill.records import BackfillFormatError, SubjectHistory, derive_key, source_label
from memory.messages import IncomingMessage

SESSION_KEY = re.compile(r"^session_(\d+)$")
DATE_FORMAT = "%I:%M %p on %d %B, %Y"


def parse_locomo_date(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value.strip(), DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def turn_text(turn: dict) -> str:
    text = str(turn.get("text") or "").strip()
    if caption := str(turn.get("blip_caption") or "").strip():
        return f"{text} [shares an image: {caption}]".strip()
    return text


def _sessions(conversation: dict) -> list[tuple[int, list]]:
    found = []
    for key, value in conversation.items():
        match = SESSION_KEY.match(key)
        if match and isinstance(value, list):
            found.append((int(match.group(1)), value))
    return sorted(found)


class LocomoSource:
    """``speakers``: names (or ``"a"``/``"b"`` for speaker_a/speaker_b) to build trees for; None = both."""

    def __init__(self, path: str | Path, *, speakers: list[str] | None = None, label: str | None = None):
        self.path = Path(path)
        self.label = source_label(self.path, label)
        self.speakers = [s for s in (speakers or []) if s] or None
        self._records: list | None = None

    def _load(self) -> list:
        if self._records is None:
            try:
                data = json.loads(self.path.read_bytes().decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise BackfillFormatError(self.path.name, f"not a UTF-8 JSON file ({exc})") from exc
            if isinstance(data, dict):
                data = [data]
            if not isinstance(data, list):
                raise BackfillFormatError(self.path.name, "expected a list of LoCoMo records")
            self._records = data
        return self._records

    def _chosen(self, conversation: dict, where: str) -> list[str]:
        a, b = conversation.get("speaker_a"), conversation.get("speaker_b")
        if not isinstance(a, str) or not isinstance(b, str) or not a or not b or a == b:
            raise BackfillFormatError(where, "speaker_a and speaker_b must be two different names")
        if self.speakers is None:
            return [a, b]
        by_alias = {"a": a, "b": b, a: a, b: b}
        chosen = [by_alias[s] for s in self.speakers if s in by_alias]
        return list(dict.fromkeys(chosen))

    def __len__(self) -> int:
        total = 0
        for i, record in enumerate(self._load()):
            conversation = record.get("conversation") if isinstance(record, dict) else None
            if isinstance(conversation, dict):
                total += len(self._chosen(conversation, f"{self.path.name}[{i}]"))
        return total

    def __iter__(self) -> Iterator[SubjectHistory]:
        for i, record in enumerate(self._load()):
            where = f"{self.path.name}[{i}]"
            if not isinstance(record, dict) or not isinstance(record.get("conversation"), dict):
                raise BackfillFormatError(where, "a record needs a 'conversation' object")
            sample_id = str(record.get("sample_id") or f"record-{i}")
            conversation = record["conversation"]
            for speaker in self._chosen(conversation, where):
                yield self._history(sample_id, speaker, conversation, where)

    def _history(self, sample_id: str, speaker: str, conversation: dict, where: str) -> SubjectHistory:
        messages = []
        for number, turns in _sessions(conversation):
            ts = parse_locomo_date(conversation.get(f"session_{number}_date_time"))
            for j, turn in enumerate(turns):
                turn_where = f"{where}.session_{number}[{j}]"
                if not isinstance(turn, dict) or not isinstance(turn.get("speaker"), str):
                    raise BackfillFormatError(turn_where, "a turn needs a 'speaker'")
                content = turn_text(turn)
                if not content:
                    continue  # an empty turn carries nothing to remember
                role = "user" if turn["speaker"] == speaker else "assistant"
                key = derive_key(self.label, sample_id, turn.get("dia_id") or f"S{number}:{j}")
                messages.append(IncomingMessage(role, content, key, ts, f"session_{number}"))
        return SubjectHistory(
            external_id=f"{sample_id}:{speaker}",
            messages=tuple(messages),
            location=where,
            meta={"sample_id": sample_id, "speaker": speaker},
        )
