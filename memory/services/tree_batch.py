"""The dispatcher's batch form of :func:`memory.services.tree.tree_apply_ops`.

Many subjects' chunks in one transaction: one lock statement (every subject, in id order) and one
write statement per table; the checks, planning and writes are the single path's own. A conflict,
refusal or database error fails its own request only (the batch is retried one request per
transaction after a database error).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from django.db import DatabaseError, transaction

from memory.engine.ops import Op
from memory.models import Subject
from memory.services import NotFoundError, ServiceError
from memory.services.tree import tree_apply_ops
from memory.services.tree_locks import lock_subjects
from memory.services.tree_plan import Actor, ApplyOutcome, Source, plan_apply, precheck, replayed
from memory.services.tree_writes import single_statement_writes, write_applies

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApplyRequest:
    """One item of :func:`tree_apply_ops_batch`: the arguments of one :func:`tree_apply_ops` call."""

    subject_id: int
    base_version: int
    ops: Sequence[Op]
    actor: Actor
    source: Source | None = None
    parse_errors: Sequence = ()

    @property
    def chunk_id(self) -> int | None:
        return self.source.chunk_id if self.source is not None else None


def tree_apply_ops_batch(requests: Sequence[ApplyRequest]) -> list[ApplyOutcome | Exception]:
    """:func:`tree_apply_ops` for many subjects in one transaction (the dispatcher's batch).

    Returns one entry per request, in order: its :class:`ApplyOutcome`, or the exception
    :func:`tree_apply_ops` would have raised for it (:class:`VersionConflict`,
    :class:`ServiceError`, :class:`NotFoundError`, a ``DatabaseError``); such a request wrote nothing
    and the others are not affected. Every guarantee of :func:`tree_apply_ops` holds per request:
    subject row locked, stale base refused, an applied chunk replayed (``created=False``), the gate
    and the review queue under the tenant's policy, every op audited, signals after commit.

    On PostgreSQL the batch is four statements whatever its size: BEGIN, one ``SELECT ... FOR
    UPDATE`` of all the subjects in id order (:func:`lock_subjects`; two batches never deadlock),
    one write statement (:func:`memory.services.tree_writes.write_applies`), COMMIT. A subject named
    twice is applied in request order: its later requests run in a next round of the same
    transaction, against the head the earlier one left. If the database refuses the batch (an error
    while writing) the transaction rolls back and every request is applied again on its own
    (:func:`tree_apply_ops`, one transaction each), so a bad request fails alone and nothing
    accepted is lost. Other databases (SQLite) take that per-request path directly.
    """
    requests = list(requests)
    if not single_statement_writes():
        return [_apply_alone(request) for request in requests]
    results: list[ApplyOutcome | Exception | None] = [None] * len(requests)
    waiting = list(range(len(requests)))
    try:
        with transaction.atomic():
            while waiting:  # one round per request of each subject, in request order
                wave: list[int] = []
                later: list[int] = []
                seen: set[int] = set()
                for i in waiting:
                    (later if requests[i].subject_id in seen else wave).append(i)
                    seen.add(requests[i].subject_id)
                _apply_round(requests, wave, results)
                waiting = later
    except DatabaseError as exc:
        logger.warning("batch apply failed (%s); applying its %d requests one by one", exc, len(requests))
        return [_apply_alone(request) for request in requests]
    return cast(list[ApplyOutcome | Exception], results)  # every request has its entry now


def _apply_round(requests: list[ApplyRequest], wave: list[int], results: list) -> None:
    """Lock the subjects of ``wave`` (one request each), plan every request, write all in one statement."""
    locked_by_id = lock_subjects({requests[i].subject_id: requests[i].chunk_id for i in wave})
    plans = []
    for i in wave:
        request = requests[i]
        locked = locked_by_id.get(request.subject_id)
        chunk_id = request.chunk_id
        if locked is None:
            results[i] = NotFoundError("Subject not found.")
            continue
        if not all(isinstance(op, Op) for op in request.ops):
            results[i] = ServiceError("ops must be engine Op objects.", field="ops")
            continue
        results[i] = precheck(locked, request.base_version, chunk_id)
        if results[i] is not None:
            continue
        try:
            plan = plan_apply(
                locked,
                base_version=request.base_version,
                ops=tuple(request.ops),
                actor=request.actor,
                source=request.source,
                chunk_id=chunk_id,
                parse_errors=tuple(request.parse_errors),
                created_by=None,
                note="",
                review=request.actor.reviewable,
            )
        except Exception as exc:  # one request's failure (nothing written yet) must not sink the batch
            logger.exception("apply of subject %s (chunk %s) failed", request.subject_id, chunk_id)
            results[i] = exc
            continue
        plans.append((i, plan))
    skipped = write_applies([plan.write_entry for _, plan in plans])
    for i, plan in plans:
        if plan.chunk_id in skipped:  # applied meanwhile by another holder of the chunk
            results[i] = replayed(plan.locked, plan.chunk_id)
        else:
            results[i] = plan.written()


def _apply_alone(request: ApplyRequest) -> ApplyOutcome | Exception:
    """One request in its own transaction (a savepoint inside a caller's), its refusal returned."""
    try:
        with transaction.atomic():
            return tree_apply_ops(
                subject=Subject(pk=request.subject_id),
                base_version=request.base_version,
                ops=request.ops,
                actor=request.actor,
                source=request.source,
                parse_errors=request.parse_errors,
            )
    except (ServiceError, DatabaseError) as exc:
        return exc
    except Exception as exc:  # as in the batch: this request fails, the others go on
        logger.exception("apply of subject %s failed", request.subject_id)
        return exc
