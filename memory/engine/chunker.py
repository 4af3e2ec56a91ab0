"""Cut a conversation into chunks of ``pairs`` user/assistant pairs for the MemListener.

Windows are consecutive and non-overlapping (the paper's best is w = 3 pairs, the default). So that
odd sequences never crash: a *pair closes* at each assistant turn that follows a user turn since
the last closed pair (several user turns in a row are one pair); other assistant turns (a leading
one, a second in a row) stay in the window without counting; a window with ``pairs`` closed pairs
is emitted when the next user turn arrives (trailing assistant turns stay with their pair) or at the
end; what remains at the end is a *partial* window, emitted (``partial=True``) only with
``include_partial=True``: a caller ingesting a growing history leaves it for the next run.

System turns belong to no window: a chunk's ``system`` is the latest one seen before its last turn
(a persona message at the start goes with every chunk), None without one or with
``attach_system=False``. Turns are :class:`Turn` values or mappings (``seq`` defaults to the
position); a bad role, non-string content or a ``seq`` that does not increase raises ``ValueError``
naming the turn index.

:func:`chunk_key` is the SHA-256 of the namespace, the span, the system turn's content and every
turn's role and content: the same history under the same namespace (tenant + subject) gives the same
keys, a changed message a new key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

Role = Literal["user", "assistant", "system"]
_ROLES = ("user", "assistant", "system")


@dataclass(frozen=True, slots=True)
class Turn:
    role: Role
    content: str
    seq: int
    ts: str | None = None
    session_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_key: str
    start_seq: int
    end_seq: int
    turns: tuple[Turn, ...]
    system: Turn | None
    partial: bool = False


def _to_turn(raw: Turn | Mapping[str, Any], index: int) -> Turn:
    if isinstance(raw, Turn):
        turn = raw
    elif isinstance(raw, Mapping):
        try:
            turn = Turn(
                role=raw.get("role"),  # type: ignore[arg-type]
                content=raw.get("content"),  # type: ignore[arg-type]
                seq=raw.get("seq", index),
                ts=raw.get("ts"),
                session_id=raw.get("session_id"),
            )
        except TypeError as exc:
            raise ValueError(f"turn {index}: {exc}") from exc
    else:
        raise ValueError(f"turn {index}: expected a Turn or a mapping, got {type(raw).__name__}")
    if turn.role not in _ROLES:
        raise ValueError(f"turn {index}: role must be one of {', '.join(_ROLES)}, got {turn.role!r}")
    if not isinstance(turn.content, str):
        raise ValueError(f"turn {index}: content must be a string, got {type(turn.content).__name__}")
    if isinstance(turn.seq, bool) or not isinstance(turn.seq, int):
        raise ValueError(f"turn {index}: seq must be an integer, got {turn.seq!r}")
    return turn


def chunk_key(namespace: str, turns: Iterable[Turn], system: Turn | None) -> str:
    turns = tuple(turns)
    payload = {
        "ns": namespace,
        "span": [turns[0].seq, turns[-1].seq] if turns else [],
        "system": None if system is None else system.content,
        "turns": [[t.role, t.content] for t in turns],
    }
    blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def chunk_turns(
    turns: Iterable[Turn | Mapping[str, Any]],
    *,
    pairs: int = 3,
    namespace: str = "",
    include_partial: bool = False,
    attach_system: bool = True,
) -> list[Chunk]:
    """Split ``turns`` into windows of ``pairs`` user/assistant pairs; see the module docstring."""
    if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 1:
        raise ValueError(f"pairs must be a positive integer, got {pairs!r}")
    chunks: list[Chunk] = []
    window: list[Turn] = []
    system: Turn | None = None
    window_system: Turn | None = None
    closed, open_user = 0, False
    last_seq: int | None = None

    def emit(partial: bool) -> None:
        sys_turn = window_system if attach_system else None
        key = chunk_key(namespace, window, sys_turn)
        chunks.append(Chunk(key, window[0].seq, window[-1].seq, tuple(window), sys_turn, partial))

    for index, raw in enumerate(turns):
        turn = _to_turn(raw, index)
        if last_seq is not None and turn.seq <= last_seq:
            raise ValueError(f"turn {index}: seq {turn.seq} does not increase (previous {last_seq})")
        last_seq = turn.seq
        if turn.role == "system":
            system = turn
            continue
        if turn.role == "user":
            if closed >= pairs:
                emit(partial=False)
                window, closed = [], 0
            open_user = True
        elif open_user:
            closed, open_user = closed + 1, False
        window.append(turn)
        window_system = system
    if window and (closed >= pairs or include_partial):
        emit(partial=closed < pairs)
    return chunks
