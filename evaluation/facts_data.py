"""Reading the fact classifier's training data: LoCoMo and Synthetic-Persona-Chat turns cut into
clauses with the listener's segmenter, each with what its clauses are compared against (the
observations a LoCoMo turn is evidence of, an SPC speaker's persona sentences); and the
neutralising both sides get before they are compared. Used by ``evaluation.facts_train``."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

NEUTRAL = "someone"

_DIA = re.compile(r"D\d+:\d+")
_SESSION = re.compile(r"^session_(\d+)$")
FIRST = re.compile(r"\b(?:I'm|I've|I'd|I'll|I|me|my|mine|myself)\b", re.IGNORECASE)
_THIRD = re.compile(r"\b(?:he|she|him|her|his|hers|himself|herself|they|them|their)\b", re.IGNORECASE)
WE = re.compile(r"\b(?:we|we're|we've|us|our|ours)\b", re.IGNORECASE)
THIRD_SUBJECT = re.compile(r"\s*(?:he|she|they|he's|she's|they're|they've|his|her|their)\b", re.IGNORECASE)
RELATION = re.compile(
    r"\b(?:we(?:'ve| have)? (?:been|are|were|became) (?:\w+ )?friends|our friendship|known each other"
    r"|we (?:first )?met|since we met|you and I (?:have|are|met|were))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Example:
    """One labelled clause."""

    text: str
    label: str
    source: str  # "locomo" | "spc"
    group: str  # the CV group: a LoCoMo session or an SPC dialogue


@dataclass(slots=True)
class Turn:
    """One speaker turn cut into clauses, with what its clauses are compared against."""

    source: str
    group: str
    speaker: str
    other: str
    clauses: list[str]
    references: list[str] = field(default_factory=list)  # observations (LoCoMo) / persona sentences (SPC)


# --- clauses ---------------------------------------------------------------------------------------


def clause_splitter() -> tuple[str, Callable[[str, Sequence[str]], list[str]]]:
    """The listener's segmenter when it is there, else sentence splitting; and its name."""
    try:
        from memory.engine.segment import segment
    except ImportError:  # pragma: no cover - before step 1 lands
        from memory.engine.text import split_sentences

        return "memory.engine.text.split_sentences", lambda text, names: split_sentences(text)
    return "memory.engine.segment.segment", lambda text, names: [c.text for c in segment(text, names=names)]


def turn_text(turn: dict) -> str:
    """A LoCoMo turn as the product receives it: the text, then the image's caption if any."""
    text = str(turn.get("text") or "").strip()
    caption = str(turn.get("blip_caption") or "").strip()
    return f"{text} [shares an image: {caption}]".strip() if caption else text


def is_caption(clause: str) -> bool:
    return "[shares an image" in clause


def neutral_clause(text: str, name: str) -> str:
    """The speaker's own words with "I/me/my" and their name replaced by one neutral word."""
    out = FIRST.sub(NEUTRAL, text)
    return _replace_name(out, name)


def neutral_observation(text: str, name: str) -> str:
    """An observation about the speaker with their name and third-person pronouns neutralised."""
    out = _replace_name(text, name)
    return _THIRD.sub(NEUTRAL, out)


def _replace_name(text: str, name: str) -> str:
    first = name.split()[0] if name.split() else ""
    if not first:
        return text
    return re.sub(rf"\b{re.escape(first)}(?:'s)?\b", NEUTRAL, text)


# --- reading the data ------------------------------------------------------------------------------


def locomo_turns(records: Iterable[dict], conv_ids: Sequence[str], split: Callable) -> list[Turn]:
    """Every turn of both speakers of the chosen conversations, with the observations it evidences."""
    turns: list[Turn] = []
    chosen = set(conv_ids)
    for record in sorted(records, key=lambda r: str(r.get("sample_id"))):
        conv_id = str(record.get("sample_id"))
        if conv_id not in chosen:
            continue
        conversation = record["conversation"]
        names = (str(conversation["speaker_a"]), str(conversation["speaker_b"]))
        evidence: dict[tuple[str, str], list[str]] = {}  # (speaker, dia_id) -> observations
        for _session, per_speaker in sorted((record.get("observation") or {}).items()):
            for speaker, facts in sorted((per_speaker or {}).items()):
                for item in facts or []:
                    fact, dia = (
                        (item[0], item[1]) if isinstance(item, list | tuple) and len(item) >= 2 else ("", "")
                    )
                    for dia_id in _DIA.findall(str(dia)):
                        evidence.setdefault((speaker, dia_id), []).append(str(fact))
        sessions = sorted(
            (int(m.group(1)), value)
            for key, value in conversation.items()
            if (m := _SESSION.match(key)) and isinstance(value, list)
        )
        for number, session in sessions:
            for turn in session:
                speaker = str(turn.get("speaker", ""))
                if speaker not in names:
                    continue
                other = names[1] if speaker == names[0] else names[0]
                clauses = [c for c in split(turn_text(turn), names) if c.strip()]
                if not clauses:
                    continue
                refs = evidence.get((speaker, str(turn.get("dia_id", ""))), [])
                turns.append(Turn("locomo", f"{conv_id}/s{number}", speaker, other, clauses, refs))
    return turns


def spc_turns(rows: Sequence[dict], indices: Iterable[int], split: Callable) -> list[Turn]:
    """Every turn of the chosen Synthetic-Persona-Chat dialogues, with the speaker's persona sentences."""
    turns: list[Turn] = []
    for index in indices:
        if index >= len(rows):
            break
        row = rows[index]
        personas = {
            "User 1": [s.strip() for s in row["user 1 personas"].splitlines() if s.strip()],
            "User 2": [s.strip() for s in row["user 2 personas"].splitlines() if s.strip()],
        }
        for line in row["Best Generated Conversation"].splitlines():
            speaker, _, text = line.partition(":")
            speaker = speaker.strip()
            if speaker not in personas or not text.strip():
                continue
            other = "User 2" if speaker == "User 1" else "User 1"
            clauses = [c for c in split(text.strip(), ()) if c.strip()]
            if clauses:
                turns.append(Turn("spc", f"spc-{index}", speaker, other, clauses, personas[speaker]))
    return turns


def read_spc(path: str | Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
