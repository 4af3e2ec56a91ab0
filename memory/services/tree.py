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

One path: :func:`tree_apply_ops_batch` is the only code that gates and writes ops; a single call
(:func:`tree_apply_ops`, a revert, a leaf edit) is a batch of one request. On PostgreSQL a batch is
one lock query for all its subjects and one write statement; on other databases the ORM store does
the same job query by query (:mod:`memory.services.tree_store`), with the same refusals
(``SchemaMoved`` included). Review approval (:mod:`memory.services.governance`) re-gates the held
ops itself and writes its version with :func:`write_version`.

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
from memory.services.tree_store import lock_subject, lock_subjects, write_applies

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
    subject: Subject | int,
    base_version: int,
    ops: Sequence[Op],
    actor: Actor,
    source: Source | None = None,
    parse_errors: Iterable = (),
    created_by: str | None = None,
    note: str = "",
) -> ApplyOutcome:
    """Gate and apply ``ops`` on top of ``base_version`` (a batch of one); see the module docstring.

    No savepoint inside a caller's transaction (two round trips saved). Refusals are raised after
    the block, not in it, so they leave the caller's transaction usable; they happen before any
    write. A database error while writing does doom the caller's transaction."""
    request = ApplyRequest(
        subject_id=subject.pk if isinstance(subject, Subject) else subject,
        base_version=base_version,
        ops=tuple(ops),
        actor=actor,
        source=source,
        parse_errors=tuple(parse_errors),
        created_by=created_by,
        note=note,
    )
    return _one(subject, request)


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
        locked = lock_subject(subject)  # the target is diffed against the head: hold it still
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
        request = ApplyRequest(
            subject_id=locked.pk,
            base_version=locked.head_version,
            ops=tuple(ops),
            actor=actor,
            created_by=TreeVersion.CreatedBy.REVERT,
            note=f"revert to v{to_number}",
            review=False,
        )
        return _one(subject, request)


def leaf_edit(*, subject: Subject, path: str, value: str, actor: Actor, base_version: int | None = None):
    """Set one leaf (ADD if empty, UPDATE if occupied) through the gate."""
    return _single_op(subject, path, value, actor, base_version)


def leaf_delete(*, subject: Subject, path: str, actor: Actor, base_version: int | None = None):
    """Empty one leaf through the gate."""
    return _single_op(subject, path, None, actor, base_version)


# --- the one path ------------------------------------------------------------------------------


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
    """One apply of ops to one subject: an item of :func:`tree_apply_ops_batch`."""

    subject_id: int
    base_version: int
    ops: Sequence[Op]
    actor: Actor
    source: Source | None = None
    parse_errors: Sequence = ()
    #: ``(schema_id, version)`` the ops were written under (the MemListener's job); when the subject
    #: was migrated to another schema since, the request is refused as :class:`SchemaMoved`.
    schema: tuple[str, int] | None = None
    #: The version's ``created_by`` (None: from the actor and the source) and note.
    created_by: str | None = None
    note: str = ""
    #: Hold special-tier and mass-delete ops for review (None: when the actor's writes are reviewable).
    review: bool | None = None

    @property
    def chunk_id(self) -> int | None:
        return self.source.chunk_id if self.source is not None else None


def tree_apply_ops_batch(requests: Sequence[ApplyRequest]) -> list[ApplyOutcome | Exception]:
    """Apply many requests in one transaction: the one path every write of ops takes.

    Returns one entry per request, in order: its :class:`ApplyOutcome`, or the refusal
    (:class:`VersionConflict`, :class:`SchemaMoved`, :class:`ServiceError`, :class:`NotFoundError`, a
    ``DatabaseError``); such a request wrote nothing and the others are not affected. Per request:
    subject row locked, stale base or schema refused, an applied chunk replayed (``created=False``),
    the gate and the review queue under the tenant's policy, every op audited, signals after commit.

    The subjects are locked in id order in one query (two batches never deadlock) and the writes go
    to the store together (one statement on PostgreSQL). A subject named twice is applied in request
    order: its later requests run in a next round of the same transaction, against the head the
    earlier one left. If the database refuses the batch the transaction rolls back and every request
    is applied again on its own (one transaction each), so a bad request fails alone and nothing
    accepted is lost.
    """
    requests = list(requests)
    try:
        return _run(requests, savepoint=True)
    except DatabaseError as exc:
        if len(requests) == 1:
            return [exc]
        logger.warning("applying a batch's %d requests one by one: %s", len(requests), exc)
        return [_alone(request) for request in requests]


def _run(requests: list[ApplyRequest], *, savepoint: bool) -> list[ApplyOutcome | Exception]:
    results: list[ApplyOutcome | Exception | None] = [None] * len(requests)
    waiting = list(range(len(requests)))
    with transaction.atomic(savepoint=savepoint):
        while waiting:  # one round per request of each subject, in request order
            wave: list[int] = []
            later: list[int] = []
            seen: set[int] = set()
            for i in waiting:
                (later if requests[i].subject_id in seen else wave).append(i)
                seen.add(requests[i].subject_id)
            _apply_round(requests, wave, results)
            waiting = later
    return cast(list[ApplyOutcome | Exception], results)  # every request has its entry now


def _apply_round(requests: list[ApplyRequest], wave: list[int], results: list) -> None:
    """Lock the subjects of ``wave`` (one request each), plan every request, write all at once."""
    locked_by_id = lock_subjects({requests[i].subject_id: requests[i].chunk_id for i in wave})
    plans = []
    for i in wave:
        request = requests[i]
        results[i] = _refusal(request, locked_by_id.get(request.subject_id))
        if results[i] is not None:
            continue
        locked = locked_by_id[request.subject_id]
        try:
            plan = plan_apply(
                locked,
                base_version=request.base_version,
                ops=tuple(request.ops),
                actor=request.actor,
                source=request.source,
                chunk_id=request.chunk_id,
                parse_errors=tuple(request.parse_errors),
                created_by=request.created_by,
                note=request.note,
                review=request.actor.reviewable if request.review is None else request.review,
            )
        except Exception as exc:  # one request's failure (nothing written yet) must not sink the batch
            logger.exception("apply of subject %s (chunk %s) failed", request.subject_id, request.chunk_id)
            results[i] = exc
            continue
        plans.append((i, plan))
    skipped = write_applies([plan.write_entry for _, plan in plans])
    for i, plan in plans:
        if plan.chunk_id in skipped:  # applied meanwhile by another holder of the chunk
            results[i] = replayed(plan.locked, plan.chunk_id)
        else:
            results[i] = plan.written()


def _refusal(request: ApplyRequest, locked: Subject | None) -> ServiceError | ApplyOutcome | None:
    """Before planning: a refusal, the stored outcome of an applied chunk, or None (go ahead)."""
    if locked is None:
        return NotFoundError("Subject not found.")
    if not all(isinstance(op, Op) for op in request.ops):
        return ServiceError("ops must be engine Op objects.", field="ops")
    found = precheck(locked, request.base_version, request.chunk_id)
    if found is not None:
        return found
    if request.schema is not None and (locked.schema_id, locked.schema_version) != tuple(request.schema):
        return SchemaMoved(locked, request)
    return None


def _alone(request: ApplyRequest) -> ApplyOutcome | Exception:
    """One request in its own transaction (a savepoint inside a caller's), its refusal returned."""
    try:
        return _run([request], savepoint=True)[0]
    except DatabaseError as exc:
        return exc
    except Exception as exc:  # as in the batch: this request fails, the others go on
        logger.exception("apply of subject %s failed", request.subject_id)
        return exc


def _one(subject: Subject | int, request: ApplyRequest) -> ApplyOutcome:
    """A batch of one, without a savepoint; its refusal raised."""
    [outcome] = _run([request], savepoint=False)
    if isinstance(outcome, Exception):
        raise outcome
    _refresh_caller(subject, outcome)
    return outcome


# --- internals -------------------------------------------------------------------------------


def _single_op(subject, path, value, actor, base_version) -> ApplyOutcome:
    with transaction.atomic():
        locked = lock_subject(subject)  # ADD or UPDATE is read from the head: hold it still
        current = selectors.tree_current(locked)
        if value is None:
            op = Op(OpType.DELETE, path)
        else:
            op = Op(OpType.UPDATE if path in current else OpType.ADD, path, value)
        request = ApplyRequest(
            subject_id=locked.pk,
            base_version=locked.head_version if base_version is None else base_version,
            ops=(op,),
            actor=actor,
            note=f"{actor.kind} {'delete' if value is None else 'edit'} {path}",
        )
        return _one(subject, request)


def write_version(
    locked: Subject, new_tree: Tree, *, created_by: str, chunk_id: int | None = None, note: str = ""
) -> TreeVersion | None:
    """Write the next version if ``new_tree`` differs from the head; move the head. Subject must be locked."""
    tree = selectors.tree_current(locked)
    if new_tree == tree:
        return None
    version = next_version(locked, tree, new_tree, created_by=created_by, chunk_id=chunk_id, note=note)
    write_applies([(locked, version, None, ())])
    return version


def _refresh_caller(subject: Subject | int, outcome: ApplyOutcome) -> None:
    """Keep the caller's Subject instance in step with the head it just moved (handy for retries)."""
    if outcome.created and outcome.version is not None and isinstance(subject, Subject):
        subject.head, subject.head_id, subject.head_version = (
            outcome.version,
            outcome.version.pk,
            outcome.version.number,
        )
