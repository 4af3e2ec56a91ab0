"""What one MemListener job may carry: over-long turns are cut to the configured caps before the model
call (``PERSONATREE_MEMLISTENER_MAX_TURN_CHARS`` / ``_MAX_CHUNK_CHARS``, 0 = no cap). The messages stay
whole in the log and the evidence index; the chunk's ``notice`` says what was cut."""

from __future__ import annotations

import logging

from memory import conf
from memory.models import Chunk
from serving.protocol import ListenerTurn
from workers import metrics

logger = logging.getLogger("personatree.dispatcher")

CUT_MARK = " [...]"  # no count: grounding reads these turns, a number here could "ground" a value


def bound_turns(turns: list[ListenerTurn]) -> tuple[list[ListenerTurn], str]:
    """Each turn cut to the per-turn cap, then, while the chunk is over its cap, the longest down to an
    equal share of it; a cut keeps the turn's beginning. Returns the turns and a notice ("": no cut)."""
    listener = conf.get().listener
    turn_cap, chunk_cap = listener.max_turn_chars, listener.max_chunk_chars  # 0: no cap
    lengths = [len(t.content) for t in turns]
    caps = [min(n, turn_cap) if turn_cap else n for n in lengths]
    if chunk_cap and sum(caps) > chunk_cap:
        remaining, order = chunk_cap, sorted(range(len(caps)), key=lambda i: caps[i])
        for k, i in enumerate(order):  # water-filling: short turns whole, long ones share the rest
            caps[i] = min(caps[i], remaining // (len(order) - k))
            remaining -= caps[i]
    if caps == lengths:
        return turns, ""
    bounded, cuts = [], []
    for turn, n, cap in zip(turns, lengths, caps, strict=True):
        if cap >= n:
            bounded.append(turn)
            continue
        cuts.append(f"{turn.role} turn {len(bounded) + 1}: {n} -> {cap}")
        content = turn.content[: max(cap, 1)] + CUT_MARK
        bounded.append(turn.model_copy(update={"content": content}))  # keeps its ts
    limits = f"{turn_cap}/turn, {chunk_cap}/chunk chars"
    return bounded, f"input cut to the MemListener caps ({limits}): {'; '.join(cuts)}"[:500]


def record_notices(notices: dict[int, str]) -> None:
    """Keep what was cut on the chunk (``Chunk.notice``); rare: one UPDATE per cut chunk."""
    for chunk_id, notice in notices.items():
        Chunk.objects.filter(pk=chunk_id).update(notice=notice)
        logger.warning("chunk %s: %s", chunk_id, notice)
        metrics.incr("chunks_input_cut")
