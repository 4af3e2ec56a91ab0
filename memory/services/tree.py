"""The services that change a subject's tree: the policy lives in :mod:`memory.services.tree_plan`.

Every write of ops (a model's chunk, an admin edit, a revert) runs, inside one transaction:

1. lock the subject row (``SELECT ... FOR UPDATE``, :mod:`memory.services.tree_store`) and compare
   the caller's ``base_version`` with the head: a stale base raises :class:`VersionConflict`
   (nothing is written; re-read and retry);
2. :func:`~memory.services.tree_plan.plan_apply`: the engine gate (the tenant's policy picks strict
   or lenient), ops that need human review held back (special-tier leaves, mass deletes) for
   model/API-key actors, the new :class:`TreeVersion` (only if the tree changed) and one
   :class:`OpRecord` per op: applied, rejected (with the gate's reason), pending review, and every
   parse error as a rejected ``PARSE_ERROR`` row;
3. the writes (:mod:`memory.services.tree_store`): version, head, op records, and the source chunk
   marked ``applied`` (with the version it produced, if any);
4. ``version_applied`` / ``ops_pending_review`` sent after commit.

Decision: when no op changes the tree (all NO_OP / rejected / held for review)
no version is created. The op records then point at the chunk and carry the
``base_version`` they were judged against, and the chunk is still ``applied``.

Idempotency: a chunk already ``applied`` is never applied again; the second
call returns the stored outcome with ``created=False``.

Batch form: :func:`tree_apply_ops_batch` (below) runs the same steps (the same
code: ``precheck``, ``plan_apply``, ``write_applies``) for many subjects in one transaction -- one
lock query for all of them, one write statement -- with a result or a refusal per request; the
dispatcher applies each model batch with it. Review approval
(:mod:`memory.services.governance`) re-gates the held ops itself and writes its version with
:func:`write_version`.

``Actor``, ``Source`` and ``ApplyOutcome`` are defined in :mod:`memory.services.tree_plan` and
importable from here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from django.db import DatabaseError, transaction

from memory import selectors
from memory.engine.ops import Op, OpType
from memory.engine.tree import Tree, changes_to_ops, diff
from memory.models import Subject, TreeVersion
from memory.services import NotFoundError, ServiceError, VersionConflict
from memory.services.tree_plan import (
    REVIEW_TIER,
    Actor,
    ApplyOutcome,
    Source,
    next_version,
    plan_apply,
    precheck,
    replayed,
    schedule_follow_up,
    split_for_review,
)
from memory.services.tree_store import (
    lock_subject,
    lock_subjects,
    single_statement_writes,
    write_applies,
    write_apply,
)

logger = logging.getLogger(__name__)

__all__ = [
    "REVIEW_TIER",
    "Actor",
    "ApplyOutcome",
    "ApplyRequest",
    "SchemaMoved",
    "Source",
    "leaf_delete",
    "leaf_edit",
    "schedule_follow_up",
    "split_for_review",
    "tree_apply_ops",
    "tree_apply_ops_batch",
    "tree_revert",
    "write_version",
]


def tree_apply_ops(
    *,
    subject: Subject,
    base_version: int,
    ops: Sequence[Op],
    actor: Actor,
    source: Source | None = None,
    parse_errors: Iterable = (),
    created_by: str | None = None,
    note: str = "",
) -> ApplyOutcome:
    """Gate and apply ``ops`` on top of ``base_version``; see the module docstring."""
    ops = tuple(ops)
    if not all(isinstance(op, Op) for op in ops):
        raise ServiceError("ops must be engine Op objects.", field="ops")
    chunk_id = source.chunk_id if source is not None else None
    # No savepoint inside a caller's transaction (two round trips saved). Refusals are returned out
    # of the block, not raised in it, so they leave the caller's transaction usable; they happen
    # before any write. A database error while writing does doom the caller's transaction.
    with transaction.atomic(savepoint=False):
        if single_statement_writes():
            pk = subject.pk if isinstance(subject, Subject) else subject
            locked = lock_subjects({pk: chunk_id}).get(pk)
            if locked is None:
                raise NotFoundError("Subject not found.")
        else:
            locked = lock_subject(subject, chunk_id=chunk_id, reserve_version_id=True)
        refusal, outcome = None, precheck(locked, base_version, chunk_id)
        if isinstance(outcome, ServiceError):
            refusal, outcome = outcome, None
        elif outcome is None:
            outcome = _apply_locked(
                locked,
                base_version=base_version,
                ops=ops,
                actor=actor,
                source=source,
                chunk_id=chunk_id,
                parse_errors=tuple(parse_errors),
                created_by=created_by,
                note=note,
                review=actor.reviewable,
            )
    if refusal is not None:
        raise refusal
    assert outcome is not None  # no refusal: the stored or the new outcome
    _refresh_caller(subject, outcome)
    return outcome


def tree_revert(
    *, subject: Subject, to_version: int | TreeVersion, actor: Actor, base_version: int | None = None
) -> ApplyOutcome:
    """Make a new version whose tree equals ``to_version``'s (0 = empty). History is kept.

    A version of another subject (or tenant) is refused. ``base_version``, when
    given, guards against reverting on top of a head the caller has not seen.
    """
    if isinstance(to_version, TreeVersion):
        if to_version.subject_id != subject.pk:
            raise ServiceError(
                "That version belongs to another subject.", field="to_version", code="foreign_version"
            )
        to_number = to_version.number
    else:
        to_number = int(to_version)
    with transaction.atomic():
        locked = lock_subject(subject)
        if base_version is not None and base_version != locked.head_version:
            raise VersionConflict(locked.head_version, base_version)
        if to_number < 0 or to_number > locked.head_version:
            raise ServiceError(
                f"Version {to_number} does not exist (head is {locked.head_version}).", field="to_version"
            )
        if to_number == 0:
            target = Tree.empty()
        else:
            stored = TreeVersion.objects.trees(locked.pk, [to_number]).get(to_number)
            if stored is None:
                raise ServiceError(f"Version {to_number} does not exist.", field="to_version")
            target = Tree.from_dict(stored)
        ops = changes_to_ops(diff(selectors.tree_current(locked), target))
        outcome = _apply_locked(
            locked,
            base_version=locked.head_version,
            ops=ops,
            actor=actor,
            source=None,
            chunk_id=None,
            parse_errors=(),
            created_by=TreeVersion.CreatedBy.REVERT,
            note=f"revert to v{to_number}",
            review=False,
        )
    _refresh_caller(subject, outcome)
    return outcome


def leaf_edit(*, subject: Subject, path: str, value: str, actor: Actor, base_version: int | None = None):
    """Set one leaf (ADD if empty, UPDATE if occupied) through the gate."""
    return _single_op(subject, path, value, actor, base_version)


def leaf_delete(*, subject: Subject, path: str, actor: Actor, base_version: int | None = None):
    """Empty one leaf through the gate."""
    return _single_op(subject, path, None, actor, base_version)


# --- batch form (the dispatcher's) ---------------------------------------------------------


class SchemaMoved(VersionConflict):
    """The subject was moved to another schema (a schema migration) after the ops were written: like a
    moved head, the chunk is re-run on the subject's tree and schema as they are now. A migration that
    changes no value writes no version, so the base version alone cannot tell."""

    def __init__(self, locked: Subject, request: ApplyRequest):
        super().__init__(locked.head_version, request.base_version)
        self.message = (
            f"The subject moved to schema {locked.schema_id} v{locked.schema_version}; the ops were written "
            f"under {request.schema[0]} v{request.schema[1]}."  # type: ignore[index]
        )
        self.args = (self.message,)


@dataclass(frozen=True)
class ApplyRequest:
    """One item of :func:`tree_apply_ops_batch`: the arguments of one :func:`tree_apply_ops` call."""

    subject_id: int
    base_version: int
    ops: Sequence[Op]
    actor: Actor
    source: Source | None = None
    parse_errors: Sequence = ()
    #: ``(schema_id, version)`` the ops were written under (the MemListener's job); when the subject
    #: was migrated to another schema since, the request is refused as :class:`SchemaMoved`.
    schema: tuple[str, int] | None = None

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
    one write statement (:func:`memory.services.tree_store.write_applies`), COMMIT. A subject named
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
        if request.schema is not None and (locked.schema_id, locked.schema_version) != tuple(request.schema):
            results[i] = SchemaMoved(locked, request)
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


# --- internals -------------------------------------------------------------------------------


def _single_op(subject, path, value, actor, base_version) -> ApplyOutcome:
    with transaction.atomic():
        locked = lock_subject(subject)
        base = locked.head_version if base_version is None else base_version
        current = selectors.tree_current(locked)
        if value is None:
            op = Op(OpType.DELETE, path)
        else:
            op = Op(OpType.UPDATE if path in current else OpType.ADD, path, value)
        outcome = _apply_locked(
            locked,
            base_version=base,
            ops=(op,),
            actor=actor,
            source=None,
            chunk_id=None,
            parse_errors=(),
            created_by=None,
            note=f"{actor.kind} {'delete' if value is None else 'edit'} {path}",
            review=actor.reviewable,
        )
    _refresh_caller(subject, outcome)
    return outcome


def _apply_locked(locked: Subject, **kwargs) -> ApplyOutcome:
    plan = plan_apply(locked, **kwargs)
    if not write_apply(*plan.write_entry):  # applied meanwhile by another holder of the chunk
        assert plan.chunk_id is not None  # only a chunk's apply can find it applied already
        return replayed(locked, plan.chunk_id)
    return plan.written()


def write_version(
    locked: Subject, new_tree: Tree, *, created_by: str, chunk_id: int | None = None, note: str = ""
) -> TreeVersion | None:
    """Write the next version if ``new_tree`` differs from the head; move the head. Subject must be locked."""
    tree = selectors.tree_current(locked)
    if new_tree == tree:
        return None
    version = next_version(locked, tree, new_tree, created_by=created_by, chunk_id=chunk_id, note=note)
    write_apply(locked, version, None, ())
    return version


def _refresh_caller(subject: Subject, outcome: ApplyOutcome) -> None:
    """Keep the caller's Subject instance in step with the head it just moved (handy for retries)."""
    if outcome.created and outcome.version is not None and isinstance(subject, Subject):
        subject.head, subject.head_id, subject.head_version = (
            outcome.version,
            outcome.version.pk,
            outcome.version.number,
        )
