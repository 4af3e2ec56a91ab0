"""Synthetic-Persona-Chat dialogues for the quality harness: read ``valid.csv`` and give, per dialogue
and speaker, the speaker's persona sentences and the dialogue as MemListener turns (that speaker's
lines are the user's, the other's the assistant's).

The file (``../shared/benchmarks/synthetic_persona_chat/valid.csv``, never vendored) has the columns
``user 1 personas`` / ``user 2 personas`` (one sentence a line) and ``Best Generated Conversation``
(lines ``User 1: ...`` / ``User 2: ...``). Issue 23's split: dialogues 0..799 tune, 800..999 validate.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memory.engine.text import split_sentences

SPEAKERS = ("User 1", "User 2")
TUNE = range(0, 800)
VALIDATION = range(800, 1000)


@dataclass(frozen=True, slots=True)
class SpcSide:
    """One speaker of one dialogue: who, their persona sentences, the whole dialogue as turns."""

    dialogue: int
    speaker: str
    personas: tuple[str, ...]
    turns: tuple[dict, ...]  # {"role": "user" | "assistant", "content", "seq"}

    @property
    def subject(self) -> str:
        return f"spc-{self.dialogue}:{self.speaker.replace(' ', '')}"

    def sentences(self) -> list[str]:
        """The speaker's own sentences, in order."""
        return [s for t in self.turns if t["role"] == "user" for s in split_sentences(t["content"])]


def read_rows(path: str | Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _lines(text: str | None) -> tuple[str, ...]:
    return tuple(s.strip() for s in (text or "").splitlines() if s.strip())


def dialogue_lines(row: dict) -> list[tuple[str, str]]:
    """``(speaker, text)`` for every non-empty ``User N: text`` line of the dialogue."""
    out = []
    for line in (row.get("Best Generated Conversation") or "").splitlines():
        speaker, sep, text = line.partition(":")
        if sep and speaker.strip() in SPEAKERS and text.strip():
            out.append((speaker.strip(), " ".join(text.split())))
    return out


def sides(rows: Sequence[dict], indices: Iterable[int]) -> list[SpcSide]:
    """Both speakers of every chosen dialogue (indices past the end are ignored)."""
    out = []
    for index in indices:
        if index >= len(rows):
            break
        row, lines = rows[index], dialogue_lines(rows[index])
        for number, speaker in enumerate(SPEAKERS, start=1):
            turns = tuple(
                {"role": "user" if who == speaker else "assistant", "content": text, "seq": seq}
                for seq, (who, text) in enumerate(lines, start=1)
            )
            personas = _lines(row.get(f"user {number} personas"))
            out.append(SpcSide(index, speaker, personas, turns))
    return out


__all__ = ["SPEAKERS", "TUNE", "VALIDATION", "SpcSide", "dialogue_lines", "read_rows", "sides"]
