"""The one write path of a subject's tree: :func:`tree_apply_ops_batch` (any other write is a batch of
one) locks the subject, refuses a foreign chunk, a stale base or a moved schema (:func:`_refusal`),
gates and holds for review (:func:`plan_apply`), writes and signals after commit. Ops that change
nothing write no version, but their op records and the chunk's ``applied`` status.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from django.db import DatabaseError, transaction

from memory import selectors
from memory.engine.gate import GatePolicy, GateResult, Reason, gate
from memory.engine.history import stored_form
from memory.engine.ops import Op, OpType
from memory.engine.tree import Tree, apply, changes_to_ops, diff
from memory.models import Chunk, OpRecord, Subject, TreeVersion
from memory.services import NotFoundError, ServiceError, VersionConflict
from memory.services.tree_store import lock_subject, lock_subjects, write_applies
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
    ``evidence``: the chunk's user turns, which a model's values must be grounded in when the tenant
    requires it; ``note``: why the listener wrote a ``NO_OP``, kept on its audit row."""

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


class SchemaMoved(VersionConflict):
    """The subject was migrated to another schema after the ops were written (re-run, like a moved head;
    a migration changing no value writes no version, so the base version alone cannot tell)."""

    def __init__(self, locked: Subject, request: ApplyRequest):
        super().__init__(locked.head_version, request.base_version)
        self.message = (
            f"The subject moved to schema {locked.schema_id} v{locked.schema_version}; the ops were written "
            f"under {request.schema[0]} v{request.schema[1]}."  # type: ignore[index]
        )
        self.args = (self.message,)


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
    """Gate and apply ``ops`` on top of ``base_version`` (a batch of one). No savepoint inside a
    caller's transaction: a refusal (raised before any write) leaves it usable, a database error
    while writing dooms it."""
    pk = subject.pk if isinstance(subject, Subject) else subject
    request = ApplyRequest(
        pk, base_version, tuple(ops), actor, source, tuple(parse_errors), created_by=created_by, note=note
    )
    return _one(subject, request)


def tree_revert(
    *, subject: Subject, to_version: int | TreeVersion, actor: Actor, base_version: int | None = None
) -> ApplyOutcome:
    """A new version whose tree equals ``to_version``'s (0 = empty; another subject's is refused).
    ``base_version``, when given, guards against reverting a head the caller has not seen."""
    if isinstance(to_version, TreeVersion) and to_version.subject_id != subject.pk:
        raise ServiceError(
            "That version belongs to another subject.", field="to_version", code="foreign_version"
        )
    number = to_version.number if isinstance(to_version, TreeVersion) else int(to_version)

    def ops(locked: Subject, tree: Tree) -> Sequence[Op]:
        if number < 0 or number > locked.head_version:
            raise ServiceError(
                f"Version {number} does not exist (head is {locked.head_version}).", field="to_version"
            )
        stored = TreeVersion.objects.trees(locked.pk, [number]).get(number)  # 0: the empty tree
        if stored is None:
            raise ServiceError(f"Version {number} does not exist.", field="to_version")
        return changes_to_ops(diff(tree, Tree.from_dict(stored)))

    by, note = TreeVersion.CreatedBy.REVERT, f"revert to v{number}"
    return _from_head(subject, actor, base_version, ops, created_by=by, note=note, review=False)


def leaf_edit(*, subject: Subject, path: str, value: str, actor: Actor, base_version: int | None = None):
    """Set one leaf (ADD if empty, UPDATE if occupied) through the gate."""

    def ops(_locked: Subject, tree: Tree) -> list[Op]:
        return [Op(OpType.UPDATE if path in tree else OpType.ADD, path, value)]

    return _from_head(subject, actor, base_version, ops, note=f"{actor.kind} edit {path}")


def leaf_delete(*, subject: Subject, path: str, actor: Actor, base_version: int | None = None):
    """Empty one leaf through the gate."""
    return _from_head(
        subject, actor, base_version, lambda *_: [Op(OpType.DELETE, path)], note=f"{actor.kind} delete {path}"
    )


def _from_head(subject: Subject, actor: Actor, base_version: int | None, make_ops, **fields) -> ApplyOutcome:
    """A batch of one whose ops ``make_ops(locked, tree)`` reads from the head, held still meanwhile."""
    with transaction.atomic():
        locked = lock_subject(subject)
        if base_version is not None and base_version != locked.head_version:
            raise VersionConflict(locked.head_version, base_version)
        ops = tuple(make_ops(locked, selectors.tree_current(locked)))
        return _one(subject, ApplyRequest(locked.pk, locked.head_version, ops, actor, **fields))


def write_version(locked: Subject, new_tree: Tree, *, created_by: str, note: str = "") -> TreeVersion | None:
    """Write the next version if ``new_tree`` differs from the head; move the head. Subject must be locked."""
    tree = selectors.tree_current(locked)
    if new_tree == tree:
        return None
    version = next_version(locked, tree, new_tree, created_by=created_by, chunk_id=None, note=note)
    write_applies([(locked, version, None, ())])
    return version


def tree_apply_ops_batch(requests: Sequence[ApplyRequest]) -> list[ApplyOutcome | Exception]:
    """Apply many requests in one transaction; one entry per request, in order: its
    :class:`ApplyOutcome`, or the refusal or error of a request that wrote nothing (the others go on).
    Subjects are locked in id order (no deadlock); a subject named twice is applied in request order.
    A batch the database refuses is applied again one request at a time, so a bad one fails alone."""
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
            first: dict[int, int] = {}  # subject -> its first waiting request
            for i in waiting:
                first.setdefault(requests[i].subject_id, i)
            _apply_round(requests, list(first.values()), results)
            waiting = [i for i in waiting if first[requests[i].subject_id] != i]
    return cast(list[ApplyOutcome | Exception], results)  # every request has its entry now


def _apply_round(requests: list[ApplyRequest], wave: list[int], results: list) -> None:
    """Lock the subjects of ``wave`` (one request each), plan every request, write all at once."""
    locked_by_id = lock_subjects({requests[i].subject_id: requests[i].chunk_id for i in wave})
    planned = []
    for i in wave:
        request = requests[i]
        results[i] = _refusal(request, locked_by_id.get(request.subject_id))
        if results[i] is not None:
            continue
        locked = locked_by_id[request.subject_id]
        try:
            planned.append((i, locked, request.chunk_id, plan_apply(locked, request)))
        except Exception as exc:  # one request's failure (nothing written yet) must not sink the batch
            logger.exception("apply of subject %s (chunk %s) failed", request.subject_id, request.chunk_id)
            results[i] = exc
    skipped = write_applies([(locked, o.version, chunk_id, o.records) for _, locked, chunk_id, o in planned])
    for i, locked, chunk_id, outcome in planned:
        if chunk_id in skipped:  # applied meanwhile by another holder of the chunk
            results[i] = replayed(locked, chunk_id)
        else:
            held = [r.pk for r in outcome.pending_review]
            schedule_follow_up(locked.pk, outcome.version, chunk_id, held)
            results[i] = outcome


def _refusal(request: ApplyRequest, locked: Subject | None) -> ServiceError | ApplyOutcome | None:
    """Before planning: a refusal (missing subject, foreign chunk, stale base, moved schema), the stored
    outcome of an already applied chunk, or None (go ahead)."""
    if locked is None:
        return NotFoundError("Subject not found.")
    if not all(isinstance(op, Op) for op in request.ops):
        return ServiceError("ops must be engine Op objects.", field="ops")
    chunk_id = request.chunk_id
    if chunk_id is not None and locked.source_chunk_status is None:
        return ServiceError("The source chunk does not belong to this subject.", field="source")
    if chunk_id is not None and locked.source_chunk_status == Chunk.Status.APPLIED:
        return replayed(locked, chunk_id)
    if request.base_version != locked.head_version:
        return VersionConflict(locked.head_version, request.base_version)
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
    """A batch of one, without a savepoint; its refusal raised. The caller's Subject follows its head."""
    [outcome] = _run([request], savepoint=False)
    if isinstance(outcome, Exception):
        raise outcome
    if outcome.created and (version := outcome.version) is not None and isinstance(subject, Subject):
        subject.head, subject.head_id, subject.head_version = version, version.pk, version.number
    return outcome


def plan_apply(locked: Subject, request: ApplyRequest) -> ApplyOutcome:
    """Gate the request's ops on the locked head and build the version and op records: the outcome
    once they are written (nothing is written here)."""
    actor, source, chunk_id, created_by = request.actor, request.source, request.chunk_id, request.created_by
    review = actor.reviewable if request.review is None else request.review
    schema = selectors.subject_schema(locked)
    tree = selectors.tree_current(locked)
    evidence = source.evidence if source is not None else None
    policy = GatePolicy(
        lenient=locked.tenant.gate_lenient,
        grounding=evidence is not None and actor.kind == "model" and locked.tenant.require_grounding,
        small_talk=actor.kind == "model",  # models may not file chit-chat; moderators write what they like
    )
    result: GateResult = gate(schema, tree, tuple(request.ops), policy, evidence)
    apply_now, held = split_for_review(locked, schema, result.accepted) if review else (result.accepted, {})
    new_tree, _changes = apply(tree, apply_now)
    by = TreeVersion.CreatedBy
    created_by = created_by or (
        by.CHUNK if chunk_id is not None else by.ADMIN if actor.kind == "admin" else by.IMPORT
    )
    version = None
    if new_tree != tree:
        version = next_version(
            locked, tree, new_tree, created_by=created_by, chunk_id=chunk_id, note=request.note
        )

    common = {
        "subject_id": locked.pk,
        "base_version": request.base_version,
        "batch": uuid.uuid4(),
        "chunk_id": chunk_id,
        "source_start_seq": source.start_seq if source else None,
        "source_end_seq": source.end_seq if source else None,
        **actor.record_fields(),
    }
    notes = {id(n.result): n.note for n in result.normalised}
    applied: list[OpRecord] = []
    pending: list[OpRecord] = []
    held_as = {"status": OpRecord.Status.PENDING_REVIEW, "reason_code": str(Reason.REVIEW_REQUIRED)}
    for op in result.accepted:
        fields = {**_op_fields(op, tree), **common}
        if id(op) in held:
            pending.append(OpRecord(detail=held[id(op)], **held_as, **fields))
        else:
            detail = notes.get(id(op), "") or (source.note if op.type is OpType.NO_OP and source else "")
            applied.append(OpRecord(version=version, status=OpRecord.Status.APPLIED, detail=detail, **fields))
    rejected: list[OpRecord] = []
    for r in result.rejected:
        fields = {**_op_fields(r.op, tree), **common}
        rejected.append(
            OpRecord(status=OpRecord.Status.REJECTED, reason_code=str(r.reason), detail=r.detail, **fields)
        )
    for err in request.parse_errors:
        detail = f"line {err.get('line_no')}: {err.get('message')}"
        parse = {"op_type": "", "new_value": err.get("line"), "reason_code": str(Reason.PARSE_ERROR)}
        rejected.append(OpRecord(status=OpRecord.Status.REJECTED, detail=detail, **parse, **common))
    for position, record in enumerate(applied + rejected + pending):
        record.position = position
    head = version.number if version is not None else locked.head_version
    return ApplyOutcome(version, head, tuple(applied), tuple(rejected), tuple(pending), created=True)


def next_version(
    locked: Subject, tree: Tree, new_tree: Tree, *, created_by: str, chunk_id: int | None, note: str
) -> TreeVersion:
    """The unsaved version after the locked head, whose tree is ``new_tree`` (its id reserved by the
    lock query, if it was), stored compactly (:mod:`memory.versions`)."""
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


def replayed(locked: Subject, chunk_id: int) -> ApplyOutcome:
    """The stored outcome of an applied chunk (``created=False``)."""
    chunk = Chunk.objects.select_related("produced_version").get(pk=chunk_id)
    records = tuple(OpRecord.objects.filter(chunk=chunk).order_by("position", "id"))
    status = OpRecord.Status
    kinds = ((status.APPLIED, status.APPROVED), (status.REJECTED, status.DECLINED), (status.PENDING_REVIEW,))
    applied, rejected, pending = (tuple(r for r in records if r.status in kind) for kind in kinds)
    return ApplyOutcome(
        chunk.produced_version, locked.head_version, applied, rejected, pending, created=False
    )


def split_for_review(locked: Subject, schema, accepted: Sequence[Op]) -> tuple[list[Op], dict[int, str]]:
    """``(apply_now, {id(op): why it is held})``: special-tier leaves and mass deletes (more deletes
    than the tenant's threshold, every tier counted) are held."""
    tenant = locked.tenant
    mass_delete = sum(op.type is OpType.DELETE for op in accepted) > tenant.mass_delete_threshold
    now, held = [], {}
    for op in accepted:
        leaf = schema.leaf(op.path) if op.path else None
        if tenant.review_special_tier and leaf is not None and leaf.tier == REVIEW_TIER:
            held[id(op)] = "special-tier leaf: held for review"
        elif mass_delete and op.type is OpType.DELETE:
            held[id(op)] = "mass delete: held for review"
        else:
            now.append(op)
    return now, held


def schedule_follow_up(subject_id: int, version: TreeVersion | None, chunk_id: int | None, held_ids) -> None:
    if version is not None:
        number = version.number
        transaction.on_commit(
            lambda: send_signal(version_applied, subject_id=subject_id, version=number, chunk_id=chunk_id)
        )
    if held_ids:
        ids = list(held_ids)
        transaction.on_commit(lambda: send_signal(ops_pending_review, subject_id=subject_id, op_ids=ids))


def send_signal(signal, **kwargs) -> None:
    for receiver, result in signal.send_robust(sender=Subject, **kwargs):
        if isinstance(result, Exception):
            logger.error("receiver %r of %s failed: %r", receiver, kwargs, result, exc_info=result)


def _op_fields(op: Op | None, tree: Tree) -> dict:
    """An op record's fields from ``op`` (None: a rejection the gate could not read as an op)."""
    if op is None:
        return {"op_type": "", "path": ""}
    return {
        "op_type": str(op.type),
        "path": op.path or "",
        "old_value": tree.get(op.path) if op.path else None,
        "new_value": op.value if isinstance(op.value, str) else None,
        "confidence": op.confidence,
        "source_text": op.source or "",
    }
