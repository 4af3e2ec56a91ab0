"""Retrieval units: a user turn plus the assistant turn that answers it, in indexing and in recall
benchmarks alike. A turn outside such a pair is a unit of its own; system turns are never units.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class UnitTurn:
    turn_id: str
    role: str  # "user" | "assistant" | "system"
    content: str
    seq: int
    ts_ms: int = 0
    session: str = ""


@dataclass(frozen=True)
class Unit:
    start_seq: int
    end_seq: int
    turns: tuple[UnitTurn, ...]

    @property
    def ts_ms(self) -> int:
        return max((t.ts_ms for t in self.turns), default=0)

    @property
    def session(self) -> str:
        return self.turns[0].session if self.turns else ""

    @property
    def text(self) -> str:
        return "\n".join(f"{t.role}: {t.content}" for t in self.turns)


def pair_units(turns: Iterable[UnitTurn]) -> list[Unit]:
    """Group turns (in seq order) into user/assistant pair units; never crosses a session boundary."""
    ordered: Sequence[UnitTurn] = sorted((t for t in turns if t.role != "system"), key=lambda t: t.seq)
    units: list[Unit] = []
    i = 0
    while i < len(ordered):
        cur = ordered[i]
        nxt = ordered[i + 1] if i + 1 < len(ordered) else None
        if cur.role == "user" and nxt is not None and nxt.role == "assistant" and nxt.session == cur.session:
            units.append(Unit(cur.seq, nxt.seq, (cur, nxt)))
            i += 2
        else:
            units.append(Unit(cur.seq, cur.seq, (cur,)))
            i += 1
    return units
