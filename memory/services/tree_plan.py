"""What one apply of ops to a subject's tree will write, decided before anything is written.

The values an apply takes and returns (:class:`Actor`, :class:`Source`, :class:`ApplyOutcome`) and
the policy between the locked subject row and the writes, shared by the single path
(:func:`memory.services.tree.tree_apply_ops`, revert, leaf edits) and the batch path
(:func:`memory.services.tree.tree_apply_ops_batch`):

- :func:`precheck` -- a refusal (foreign chunk, stale base), the stored outcome of an already
  applied chunk (:func:`replayed`), or go ahead;
- :func:`plan_apply` -- the engine gate against the locked head under the tenant's policy (strict or
  lenient, grounding for a model's chunk), the review hold (:func:`split_for_review`: special-tier
  leaves and mass deletes from model/API-key actors), the new :class:`TreeVersion` (only if the tree
  changed) and one :class:`OpRecord` per op, parse error and rejection, as a :class:`Plan`;
- :meth:`Plan.written` / :func:`schedule_follow_up` -- after the writes
  (:mod:`memory.services.tree_store`), ``version_applied`` / ``ops_pending_review`` on commit.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from memory import selectors
from memory.engine.gate import GatePolicy, GateResult, Reason, gate
from memory.engine.history import stored_form
from memory.engine.ops import Op, OpType
from memory.engine.tree import Tree, apply
from memory.models import Chunk, OpRecord, Subject, TreeVersion
from memory.services import ServiceError, VersionConflict
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


def replayed(locked: Subject, chunk_id: int) -> ApplyOutcome:
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
    """``(apply_now, hold)`` per the tenant policy: special-tier leaves and mass deletes are held.

    A mass delete is a batch deleting more leaves than the tenant's threshold, every tier counted:
    the special-tier deletes, held anyway, used to be left out of the count, so a batch deleting
    three ordinary and two special leaves (threshold 3) applied its three ordinary deletes."""
    tenant = locked.tenant
    mass_delete = sum(op.type is OpType.DELETE for op in accepted) > tenant.mass_delete_threshold
    now, held = [], []
    for op in accepted:
        leaf = schema.leaf(op.path) if op.path else None
        special = tenant.review_special_tier and leaf is not None and leaf.tier == REVIEW_TIER
        if special or (mass_delete and op.type is OpType.DELETE):
            held.append(op)
        else:
            now.append(op)
    return now, held


def precheck(locked: Subject, base_version: int, chunk_id: int | None) -> ServiceError | ApplyOutcome | None:
    """Before any write: a refusal (foreign chunk, stale base), the stored outcome of an already
    applied chunk, or None (go ahead). ``locked`` comes from :func:`lock_subject` / :func:`lock_subjects`."""
    if chunk_id is not None and locked.source_chunk_status is None:
        return ServiceError("The source chunk does not belong to this subject.", field="source")
    if chunk_id is not None and locked.source_chunk_status == Chunk.Status.APPLIED:
        return replayed(locked, chunk_id)
    if base_version != locked.head_version:
        return VersionConflict(locked.head_version, base_version)
    return None


@dataclass
class Plan:
    """What one apply will write (nothing is written yet); see :func:`plan_apply`."""

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


def plan_apply(
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
) -> Plan:
    """Gate ``ops`` against the locked head and build the version and op records (no writes)."""
    if base_version != locked.head_version:
        raise VersionConflict(locked.head_version, base_version)
    schema = selectors.subject_schema(locked)
    tree = selectors.tree_current(locked)
    evidence = source.evidence if source is not None else None
    policy = GatePolicy(
        lenient=locked.tenant.gate_lenient,
        grounding=evidence is not None and actor.kind == "model" and locked.tenant.require_grounding,
        small_talk=actor.kind == "model",  # models may not file chit-chat; moderators write what they like
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
        version = next_version(locked, tree, new_tree, created_by=created_by, chunk_id=chunk_id, note=note)

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
    applied: list[OpRecord] = []
    pending: list[OpRecord] = []
    rejected: list[OpRecord] = []
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
            detail=_review_detail(op, schema, locked.tenant.review_special_tier)
            if is_held
            else notes.get(id(op), "") or _no_op_note(op, source),
            confidence=op.confidence,
            source_text=op.source or "",
            **common,
        )
        (pending if is_held else applied).append(record)
    for rej in result.rejected:
        bad = rej.op
        rejected.append(
            OpRecord(
                op_type=str(bad.type) if bad else "",
                path=(bad.path or "") if bad else "",
                old_value=tree.get(bad.path) if bad and bad.path else None,
                new_value=bad.value if bad and isinstance(bad.value, str) else None,
                status=OpRecord.Status.REJECTED,
                reason_code=str(rej.reason),
                detail=rej.detail,
                confidence=bad.confidence if bad else None,
                source_text=(bad.source or "") if bad else "",
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
    return Plan(locked, version, chunk_id, applied, rejected, pending)


def next_version(
    locked: Subject, tree: Tree, new_tree: Tree, *, created_by: str, chunk_id: int | None, note: str
) -> TreeVersion:
    """The unsaved version after the locked head, whose tree is ``tree`` (its id reserved by the lock
    query, if it was). Stored compactly (:mod:`memory.versions`): the whole tree, as the new head,
    and its delta against ``tree`` unless it is a checkpoint."""
    number = locked.head_version + 1
    whole, delta = stored_form(number, tree, new_tree)
    return TreeVersion(
        id=getattr(locked, "next_version_id", None),
        subject_id=locked.pk,
        number=number,
        tree=whole,
        delta=delta,
        parent_id=locked.head_id,
        created_by=created_by,
        chunk_id=chunk_id,
        note=note[:500],
    )


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


def _review_detail(op: Op, schema, special_held: bool) -> str:
    leaf = schema.leaf(op.path) if op.path else None
    if special_held and leaf is not None and leaf.tier == REVIEW_TIER:
        return "special-tier leaf: held for review"
    return "mass delete: held for review"


def _err_attr(err, name: str):
    return err.get(name) if isinstance(err, dict) else getattr(err, name, None)
