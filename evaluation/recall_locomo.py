"""Reading LoCoMo conversations into retrieval turns and recall questions.

LoCoMo samples hold `conversation` (speaker_a, speaker_b, session_N,
session_N_date_time) and `qa` (question, evidence turn ids like "D1:3",
category). speaker_a is taken as the "user" and speaker_b as the "assistant"
so the same pair units as in production apply. Image turns contribute their
caption text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from evaluation.recall_metrics import RecallQuestion
from memory.recall.units import UnitTurn

_SESSION_RE = re.compile(r"^session_(\d+)$")


def parse_locomo_time(text: str | None) -> int:
    """'1:56 pm on 8 May, 2023' -> epoch milliseconds (UTC); 0 when absent or unparsable."""
    if not text:
        return 0
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            dt = datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
            return int(dt.timestamp() * 1000)
        except ValueError:
            continue
    return 0


def locomo_turns(sample: Mapping) -> list[UnitTurn]:
    conv = sample["conversation"]
    speaker_a = conv.get("speaker_a")
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := _SESSION_RE.match(key)) and isinstance(conv[key], list)
    )
    turns: list[UnitTurn] = []
    seq = 0
    for num, key in sessions:
        ts = parse_locomo_time(conv.get(f"{key}_date_time"))
        for t in conv[key]:
            text = str(t.get("text") or "")
            if t.get("blip_caption"):
                text = f"{text} [shares an image: {t['blip_caption']}]".strip()
            role = "user" if t.get("speaker") == speaker_a else "assistant"
            turns.append(
                UnitTurn(
                    turn_id=str(t["dia_id"]),
                    role=role,
                    content=f"{t.get('speaker', role)}: {text}",
                    seq=seq,
                    ts_ms=ts,
                    session=f"session_{num}",
                )
            )
            seq += 1
    return turns


def locomo_questions(sample: Mapping, *, prefix: str = "") -> list[RecallQuestion]:
    out = []
    for i, qa in enumerate(sample.get("qa", [])):
        ev = qa.get("evidence") or []
        # Some LoCoMo evidence entries pack several ids in one string ("D1:3; D1:5").
        ids = tuple(p.strip() for e in ev for p in re.split(r"[;,\s]+", str(e)) if p.strip())
        out.append(RecallQuestion(qid=f"{prefix}{i}", category=str(qa.get("category", "")), gold_turns=ids))
    return out
