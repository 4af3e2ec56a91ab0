"""LoCoMo: the evaluation view (sessions, turns with `dia_id`, QA with evidence, per-speaker observations).

File format (a JSON list of records): `sample_id`; `conversation` with `speaker_a`, `speaker_b`,
`session_N_date_time`, `session_N` (turns `{speaker, dia_id, text, blip_caption?}`); `qa`
(`question`, `answer` or `adversarial_answer`, `evidence`, `category` 1..5); `observation`
(`session_N_observation` -> speaker -> `[[fact, dia_id], ...]`).

Evidence ids are normalised: `"D8:6; D9:17"` is two ids, `"D:11:26"` is `D11:26`; an id
that cannot be read (e.g. `"D"`) is dropped and counted in `LocomoQA.dropped_evidence`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.datasets import DatasetError

CATEGORY_NAMES = {
    1: "multi_hop",
    2: "temporal",
    3: "open_domain",
    4: "single_hop",
    5: "adversarial",
}
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str
    speaker: str
    text: str
    session: int
    image_caption: str | None = None


@dataclass(frozen=True)
class LocomoSession:
    number: int
    date_time: str | None
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True)
class LocomoQA:
    question: str
    answer: str | None  # None for category 5 (unanswerable); the adversarial answer is kept apart
    category: int
    evidence: tuple[str, ...]
    adversarial_answer: str | None = None
    dropped_evidence: int = 0

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES.get(self.category, f"category_{self.category}")


@dataclass(frozen=True)
class Observation:
    speaker: str
    fact: str
    dia_ids: tuple[str, ...]
    session: int


@dataclass(frozen=True)
class LocomoConversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[LocomoSession, ...]
    qa: tuple[LocomoQA, ...]
    observations: tuple[Observation, ...] = field(default=())

    @property
    def speakers(self) -> tuple[str, str]:
        return (self.speaker_a, self.speaker_b)

    def turns(self, *, max_sessions: int | None = None) -> list[LocomoTurn]:
        sessions = self.sessions if max_sessions is None else self.sessions[:max_sessions]
        return [t for s in sessions for t in s.turns]

    def observations_for(self, speaker: str, *, max_sessions: int | None = None) -> list[Observation]:
        last = self.sessions[max_sessions - 1].number if max_sessions and self.sessions else None
        return [o for o in self.observations if o.speaker == speaker and (last is None or o.session <= last)]


def normalise_dia_ids(raw: str | Iterable[str]) -> tuple[tuple[str, ...], int]:
    """Return (ids, dropped) from one evidence string or a list of them."""
    items = [raw] if isinstance(raw, str) else list(raw)
    ids: list[str] = []
    dropped = 0
    for item in items:
        found = _DIA_ID.findall(str(item))
        if not found:
            dropped += 1
        ids.extend(f"D{a}:{b}" for a, b in found)
    return tuple(dict.fromkeys(ids)), dropped


def _require(mapping: dict, key: str, where: str):
    if key not in mapping:
        raise DatasetError(f"LoCoMo: {where} has no '{key}' field")
    return mapping[key]


def _parse_sessions(conv: dict, sample_id: str) -> tuple[LocomoSession, ...]:
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
    sessions = []
    for n in numbers:
        raw_turns = conv[f"session_{n}"]
        if not isinstance(raw_turns, list):
            raise DatasetError(f"LoCoMo: {sample_id} session_{n} is not a list of turns")
        turns = []
        for i, t in enumerate(raw_turns):
            where = f"{sample_id} session_{n} turn {i}"
            turns.append(
                LocomoTurn(
                    dia_id=str(_require(t, "dia_id", where)),
                    speaker=str(_require(t, "speaker", where)),
                    text=str(_require(t, "text", where)),
                    session=n,
                    image_caption=t.get("blip_caption"),
                )
            )
        sessions.append(
            LocomoSession(number=n, date_time=conv.get(f"session_{n}_date_time"), turns=tuple(turns))
        )
    if not sessions:
        raise DatasetError(f"LoCoMo: {sample_id} has no session_N lists")
    return tuple(sessions)


def _parse_qa(items: Sequence[dict], sample_id: str) -> tuple[LocomoQA, ...]:
    out = []
    for i, q in enumerate(items):
        where = f"{sample_id} qa[{i}]"
        category = int(_require(q, "category", where))
        answer = q.get("answer")
        if category != 5 and answer is None:
            raise DatasetError(f"LoCoMo: {where} (category {category}) has no 'answer'")
        evidence, dropped = normalise_dia_ids(q.get("evidence") or [])
        out.append(
            LocomoQA(
                question=str(_require(q, "question", where)),
                answer=None if category == 5 else str(answer),
                category=category,
                evidence=evidence,
                adversarial_answer=q.get("adversarial_answer"),
                dropped_evidence=dropped,
            )
        )
    return tuple(out)


def _parse_observations(raw: dict, sample_id: str) -> tuple[Observation, ...]:
    out = []
    for key, per_speaker in (raw or {}).items():
        m = re.match(r"^session_(\d+)_observation$", key)
        if not m or not isinstance(per_speaker, dict):
            raise DatasetError(f"LoCoMo: {sample_id} observation key '{key}' is not session_N_observation")
        for speaker, facts in per_speaker.items():
            for fact in facts:
                if not isinstance(fact, list | tuple) or len(fact) != 2:
                    raise DatasetError(f"LoCoMo: {sample_id} {key}/{speaker} item is not [fact, dia_id]")
                ids, _ = normalise_dia_ids(fact[1])
                out.append(
                    Observation(speaker=speaker, fact=str(fact[0]), dia_ids=ids, session=int(m.group(1)))
                )
    return tuple(out)


def load_locomo(path: str | Path, *, sample_ids: Collection | None = None) -> list[LocomoConversation]:
    """Read a LoCoMo JSON file; keep only `sample_ids` when given (unknown ids are an error)."""
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"LoCoMo: no such file: {p}")
    try:
        records = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"LoCoMo: {p} is not valid JSON: {exc}") from exc
    if not isinstance(records, list):
        raise DatasetError(f"LoCoMo: {p} must hold a JSON list of conversations")
    convs = []
    for i, r in enumerate(records):
        sample_id = str(r.get("sample_id", f"#{i}"))
        if sample_ids is not None and sample_id not in sample_ids:
            continue
        conv = _require(r, "conversation", sample_id)
        convs.append(
            LocomoConversation(
                sample_id=sample_id,
                speaker_a=str(_require(conv, "speaker_a", sample_id)),
                speaker_b=str(_require(conv, "speaker_b", sample_id)),
                sessions=_parse_sessions(conv, sample_id),
                qa=_parse_qa(r.get("qa") or [], sample_id),
                observations=_parse_observations(r.get("observation") or {}, sample_id),
            )
        )
    if sample_ids is not None:
        missing = set(sample_ids) - {c.sample_id for c in convs}
        if missing:
            raise DatasetError(f"LoCoMo: conversations not in {p}: {', '.join(sorted(missing))}")
    return convs
