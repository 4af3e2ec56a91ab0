"""The one service that changes a subject's tree.

Every write (a model's chunk, an admin edit, a revert) goes through
:func:`_apply_locked` inside one transaction that

1. locks the subject row (``SELECT ... FOR UPDATE``, :mod:`memory.services.tree_locks`) and compares the caller's
   ``base_version`` with the head: a stale base raises :class:`VersionConflict`
   (nothing is written; re-read and retry);
2. runs the engine gate (the tenant's policy picks strict or lenient);
3. holds back ops that need human review (special-tier leaves, mass deletes)
   for model/API-key actors, per the tenant's policy;
4. writes the new :class:`TreeVersion` (only if the tree changed) and one
   :class:`OpRecord` per op: applied, rejected (with the gate's reason),
   pending review, and every parse error as a rejected ``PARSE_ERROR`` row;
5. marks the source chunk ``applied`` (with the version it produced, if any);
6. sends ``version_applied`` / ``ops_pending_review`` after commit.

Decision: when no op changes the tree (all NO_OP / rejected / held for review)
no version is created. The op records then point at the chunk and carry the
``base_version`` they were judged against, and the chunk is still ``applied``.

Idempotency: a chunk already ``applied`` is never applied again; the second
call returns the stored outcome with ``created=False``.

Batch form: :func:`tree_apply_ops_batch` runs the same steps (the same code:
:func:`_precheck`, :func:`_plan_apply`, ``write_applies``) for many subjects in one
transaction -- one lock query for all of them, one write statement -- with a result
or a refusal per request; the dispatcher applies each model batch with it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory import selectors
from memory.engine.gate import GatePolicy, GateResult, Reason, gate
from memory.engine.ops import Op, OpType
from memory.engine.tree import Tree, apply, changes_to_ops, diff
from memory.models import Chunk, OpRecord, Subject, TreeVersion
from memory.services import NotFoundError, ServiceError, VersionConflict
from memory.services.tree_locks import lock_subject, lock_subjects
from memory.services.tree_writes import single_statement_writes, write_apply
from memory.signals import ops_pending_review, version_applied

logger = logging.getLogger(__name__)

REVIEW_TIER = "special"


@dataclass(frozen=True)
class Actor:
    """Who wrote an op: ``kind`` is model | admin | api_key | system."""

    kind: str
    name: str = ""
    model_id: str = ""
    model_version: str = ""
    prompt_version: str = ""
    user_id: int | None = None
    api_key_id: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in OpRecord.ActorKind.values:
            raise ValueError(f"unknown actor kind {self.kind!r}; expected one of {OpRecord.ActorKind.values}")

    @classmethod
    def for_model(cls, *, model_id: str, model_version: str = "", prompt_version: str = "", name: str = ""):
        return cls("model", name or "memlistener", model_id, model_version, prompt_version)

    @classmethod
    def for_admin(cls, user) -> Actor:
        return cls("admin", user.get_username(), user_id=user.pk)

    @classmethod
    def for_api_key(cls, api_key) -> Actor:
        return cls("api_key", api_key.prefix, api_key_id=api_key.pk)

    @classmethod
    def system(cls, name: str) -> Actor:
        return cls("system", name)

    @property
    def reviewable(self) -> bool:
        """Ops from models and API keys may be held for review; admins and the system are trusted."""
        return self.kind in ("model", "api_key")

    def record_fields(self) -> dict:
        return {
            "actor_kind": self.kind,
            "actor_name": self.name,
            "model_id": self.model_id,
            "model_version": self.model_version,
            "prompt_version": self.prompt_version,
            "admin_user_id": self.user_id,
            "api_key_id": self.api_key_id,
        }


@dataclass(frozen=True)
class Source:
    """Where ops came from: a chunk and its message span (all optional for admin writes).

    ``evidence``: the chunk's user turns; with it, a model's values must be grounded in them
    (gate reason ``UNGROUNDED``) when the tenant requires grounding. ``note``: why the listener
    wrote a ``NO_OP`` (e.g. no model call: no candidate leaf), kept on the NO_OP's audit row."""

    chunk_id: int | None = None
    start_seq: int | None = None
    end_seq: int | None = None
    evidence: tuple[str, ...] | None = None
    note: str = ""


@dataclass(frozen=True)
class ApplyOutcome:
    """``created`` is False when the call replayed an already-applied chunk (nothing new was written).
    ``version`` is the version written, or None when the tree did not change."""

    version: TreeVersion | None
    head_version: int
    applied: tuple[OpRecord, ...]
    rejected: tuple[OpRecord, ...]
    pending_review: tuple[OpRecord, ...]
    created: bool

    @property
    def records(self) -> tuple[OpRecord, ...]:
        return self.applied + self.rejected + self.pending_review


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
        refusal, outcome = None, _precheck(locked, base_version, chunk_id)
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
            version = TreeVersion.objects.filter(subject=locked, number=to_number).only("snapshot").first()
            if version is None:
                raise ServiceError(f"Version {to_number} does not exist.", field="to_version")
            target = Tree.from_dict(version.snapshot)
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


def tree_at(subject: Subject, as_of: int | datetime | None = None) -> tuple[int, Tree]:
    """``(version_number, tree)`` at a version number or datetime (see :func:`memory.selectors.tree_at`)."""
    return selectors.tree_at(subject, as_of)


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


def _replayed(locked: Subject, chunk_id: int) -> ApplyOutcome:
    """The stored outcome of an applied chunk (``created=False``)."""
    chunk = Chunk.objects.select_related("produced_version").get(pk=chunk_id)
    records = tuple(OpRecord.objects.filter(chunk=chunk).order_by("position", "id"))
    return ApplyOutcome(
        version=chunk.produced_version,
        head_version=locked.head_version,
        applied=tuple(r for r in records if r.status in (OpRecord.Status.APPLIED, OpRecord.Status.APPROVED)),
        rejected=tuple(
            r for r in records if r.status in (OpRecord.Status.REJECTED, OpRecord.Status.DECLINED)
        ),
        pending_review=tuple(r for r in records if r.status == OpRecord.Status.PENDING_REVIEW),
        created=False,
    )


def split_for_review(locked: Subject, schema, accepted: Sequence[Op]) -> tuple[list[Op], list[Op]]:
    """``(apply_now, hold)`` per the tenant policy: special-tier leaves and mass deletes are held."""
    tenant = locked.tenant
    now, held = [], []
    for op in accepted:
        leaf = schema.leaf(op.path) if op.path else None
        if tenant.review_special_tier and leaf is not None and leaf.tier == REVIEW_TIER:
            held.append(op)
        else:
            now.append(op)
    deletes = [op for op in now if op.type is OpType.DELETE]
    if len(deletes) > tenant.mass_delete_threshold:
        held.extend(deletes)
        now = [op for op in now if op.type is not OpType.DELETE]
    return now, held


def _precheck(locked: Subject, base_version: int, chunk_id: int | None) -> ServiceError | ApplyOutcome | None:
    """Before any write: a refusal (foreign chunk, stale base), the stored outcome of an already
    applied chunk, or None (go ahead). ``locked`` comes from :func:`lock_subject` / :func:`lock_subjects`."""
    if chunk_id is not None and locked.source_chunk_status is None:
        return ServiceError("The source chunk does not belong to this subject.", field="source")
    if chunk_id is not None and locked.source_chunk_status == Chunk.Status.APPLIED:
        return _replayed(locked, chunk_id)
    if base_version != locked.head_version:
        return VersionConflict(locked.head_version, base_version)
    return None


@dataclass
class _Plan:
    """What one apply will write (nothing is written yet); see :func:`_plan_apply`."""

    locked: Subject
    version: TreeVersion | None
    chunk_id: int | None
    applied: list[OpRecord]
    rejected: list[OpRecord]
    pending: list[OpRecord]

    @property
    def write_entry(self) -> tuple:
        return (self.locked, self.version, self.chunk_id, self.applied + self.rejected + self.pending)

    def written(self) -> ApplyOutcome:
        """After the writes: schedule the follow-up signals and return the outcome."""
        schedule_follow_up(self.locked.pk, self.version, self.chunk_id, [r.pk for r in self.pending])
        return ApplyOutcome(
            version=self.version,
            head_version=self.locked.head_version,
            applied=tuple(self.applied),
            rejected=tuple(self.rejected),
            pending_review=tuple(self.pending),
            created=True,
        )


def _apply_locked(locked: Subject, **kwargs) -> ApplyOutcome:
    plan = _plan_apply(locked, **kwargs)
    if not write_apply(*plan.write_entry):  # applied meanwhile by another holder of the chunk
        return _replayed(locked, plan.chunk_id)
    return plan.written()


def _plan_apply(
    locked: Subject,
    *,
    base_version: int,
    ops: tuple[Op, ...],
    actor: Actor,
    source: Source | None,
    chunk_id: int | None,
    parse_errors: tuple,
    created_by: str | None,
    note: str,
    review: bool,
) -> _Plan:
    """Gate ``ops`` against the locked head and build the version and op records (no writes)."""
    if base_version != locked.head_version:
        raise VersionConflict(locked.head_version, base_version)
    schema = selectors.subject_schema(locked)
    tree = selectors.tree_current(locked)
    evidence = source.evidence if source is not None else None
    policy = GatePolicy(
        lenient=locked.tenant.gate_lenient,
        grounding=evidence is not None and actor.kind == "model" and locked.tenant.require_grounding,
    )
    result: GateResult = gate(schema, tree, ops, policy, evidence)
    apply_now, held = (
        split_for_review(locked, schema, result.accepted) if review else (list(result.accepted), [])
    )
    new_tree, _changes = apply(tree, apply_now)
    if created_by is None:
        created_by = (
            TreeVersion.CreatedBy.CHUNK
            if chunk_id is not None
            else TreeVersion.CreatedBy.ADMIN
            if actor.kind == "admin"
            else TreeVersion.CreatedBy.IMPORT
        )
    version = None
    if new_tree != tree:
        version = TreeVersion(
            id=getattr(locked, "next_version_id", None),
            subject_id=locked.pk,
            number=locked.head_version + 1,
            snapshot=new_tree.to_dict(),
            parent_id=locked.head_id,
            created_by=created_by,
            chunk_id=chunk_id,
            note=note[:500],
        )

    batch = uuid.uuid4()
    common = {
        "subject_id": locked.pk,
        "base_version": base_version,
        "batch": batch,
        "chunk_id": chunk_id,
        "source_start_seq": source.start_seq if source else None,
        "source_end_seq": source.end_seq if source else None,
        **actor.record_fields(),
    }
    notes = {id(n.result): n.note for n in result.normalised}
    held_ids = {id(op) for op in held}
    applied, pending, rejected = [], [], []
    for op in result.accepted:
        is_held = id(op) in held_ids
        record = OpRecord(
            version=None if is_held else version,
            op_type=str(op.type),
            path=op.path or "",
            old_value=tree.get(op.path) if op.path else None,
            new_value=op.value,
            status=OpRecord.Status.PENDING_REVIEW if is_held else OpRecord.Status.APPLIED,
            reason_code=str(Reason.REVIEW_REQUIRED) if is_held else "",
            detail=_review_detail(op, schema)
            if is_held
            else notes.get(id(op), "") or _no_op_note(op, source),
            confidence=op.confidence,
            source_text=op.source or "",
            **common,
        )
        (pending if is_held else applied).append(record)
    for rej in result.rejected:
        op = rej.op
        rejected.append(
            OpRecord(
                op_type=str(op.type) if op else "",
                path=(op.path or "") if op else "",
                old_value=tree.get(op.path) if op and op.path else None,
                new_value=op.value if op and isinstance(op.value, str) else None,
                status=OpRecord.Status.REJECTED,
                reason_code=str(rej.reason),
                detail=rej.detail,
                confidence=op.confidence if op else None,
                source_text=(op.source or "") if op else "",
                **common,
            )
        )
    for err in parse_errors:
        rejected.append(
            OpRecord(
                op_type="",
                new_value=_err_attr(err, "line"),
                status=OpRecord.Status.REJECTED,
                reason_code=str(Reason.PARSE_ERROR),
                detail=f"line {_err_attr(err, 'line_no')}: {_err_attr(err, 'message')}",
                **common,
            )
        )
    for position, record in enumerate(applied + rejected + pending):
        record.position = position
    return _Plan(locked, version, chunk_id, applied, rejected, pending)


def write_version(
    locked: Subject, new_tree: Tree, *, created_by: str, chunk_id: int | None = None, note: str = ""
) -> TreeVersion | None:
    """Write the next version if ``new_tree`` differs from the head; move the head. Subject must be locked."""
    if new_tree == selectors.tree_current(locked):
        return None
    version = TreeVersion.objects.create(
        subject_id=locked.pk,
        number=locked.head_version + 1,
        snapshot=new_tree.to_dict(),
        parent_id=locked.head_id,
        created_by=created_by,
        chunk_id=chunk_id,
        note=note[:500],
    )
    Subject.objects.filter(pk=locked.pk).update(
        head=version, head_version=version.number, updated_at=timezone.now()
    )
    locked.head, locked.head_version = version, version.number
    return version


def schedule_follow_up(subject_id: int, version: TreeVersion | None, chunk_id: int | None, held_ids) -> None:
    if version is not None:
        number = version.number
        transaction.on_commit(
            lambda: _send(version_applied, subject_id=subject_id, version=number, chunk_id=chunk_id)
        )
    if held_ids:
        ids = list(held_ids)
        transaction.on_commit(lambda: _send(ops_pending_review, subject_id=subject_id, op_ids=ids))


def _send(signal, **kwargs) -> None:
    for receiver, result in signal.send_robust(sender=Subject, **kwargs):
        if isinstance(result, Exception):
            logger.error("receiver %r of %s failed: %r", receiver, kwargs, result, exc_info=result)


def _no_op_note(op: Op, source: Source | None) -> str:
    return source.note if op.type is OpType.NO_OP and source is not None else ""


def _review_detail(op: Op, schema) -> str:
    leaf = schema.leaf(op.path) if op.path else None
    if leaf is not None and leaf.tier == REVIEW_TIER:
        return "special-tier leaf: held for review"
    return "mass delete: held for review"


def _err_attr(err, name: str):
    return err.get(name) if isinstance(err, dict) else getattr(err, name, None)


def _refresh_caller(subject: Subject, outcome: ApplyOutcome) -> None:
    """Keep the caller's Subject instance in step with the head it just moved (handy for retries)."""
    if outcome.created and outcome.version is not None and isinstance(subject, Subject):
        subject.head, subject.head_id, subject.head_version = (
            outcome.version,
            outcome.version.pk,
            outcome.version.number,
        )
