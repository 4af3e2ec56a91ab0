"""Poison chunks: a job that crashes or times out the engine is told apart from an outage by calling
the batch's halves again, and a probe job (docs/RELIABILITY.md has the rules and their cost).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from serving.protocol import ListenerJob, ListenerResult, ListenerTurn
from workers import metrics
from workers.ordering import Claim

logger = logging.getLogger("personatree.dispatcher")

PROBE_TURN = "I moved to Lisbon last spring and I work there as a nurse."

Call = Callable[[list[ListenerJob]], list[ListenerResult]]
Settle = Callable[[list[tuple[Claim, ListenerJob]], list[ListenerResult]], None]


def is_outage(results: Sequence[ListenerResult]) -> bool:
    """Every result a retryable error: the MemListener (or the way to it) is down, or a poison job took it."""
    return bool(results) and all(not r.ok and r.retryable for r in results)


def split_batch(
    call: Call, batch: list[tuple[Claim, ListenerJob]], settle: Settle, *, engine_up=False
) -> bool:
    """Find the poison jobs of a batch whose every result was a retryable error; every part is settled
    through ``settle`` exactly once. False, nothing settled, when neither half nor a probe answered."""
    middle = len(batch) // 2
    halves, answers = [batch[:middle], batch[middle:]], []
    for half in halves:
        answer = call([job for _, job in half])
        answers.append(answer)
        if not is_outage(answer):  # answered: apply it now, not after the other half's timeout
            settle(half, answer)
            engine_up = True
    if not engine_up and not engine_answers(call, batch[0][1]):
        return False  # neither half nor a probe answered: an outage
    for half, answer in zip(halves, answers, strict=True):
        if not is_outage(answer):
            continue
        if len(half) > 1:
            split_batch(call, half, settle, engine_up=True)
        else:
            _own_error(half, answer, settle)
    return True


def engine_answers(call: Call, job: ListenerJob) -> bool:
    """Whether the engine answers a probe job like ``job`` (same subject and schema, empty tree, one
    short made-up turn): the check that tells a lone poison job from an outage."""
    turns = [ListenerTurn(role="user", content=PROBE_TURN)]
    probe = job.model_copy(update={"job_id": f"probe:{job.job_id}", "tree": {}, "turns": turns})
    return not is_outage(call([probe]))


def settle_lone_job(call: Call, batch: list[tuple[Claim, ListenerJob]], answer, settle: Settle) -> bool:
    """A lone job's retryable error: its own (settled) if the engine answers a probe, else an outage."""
    if not engine_answers(call, batch[0][1]):
        return False
    _own_error(batch, answer, settle)
    return True


def _own_error(half: list[tuple[Claim, ListenerJob]], answer: list[ListenerResult], settle: Settle) -> None:
    claim, job = half[0]
    metrics.incr("dispatch_poison_jobs")
    logger.warning(
        "chunk %s failed the engine call alone while the engine answered others (%s); counted as an attempt",
        claim.chunk_id,
        answer[0].error,
    )
    error = f"poison chunk: {answer[0].error or 'engine error'}"
    settle(half, [answer[0].model_copy(update={"error": error})])
