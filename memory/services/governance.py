"""Review queue decisions, each subject's in its own transaction under the subject lock.

Approved held ops are re-gated against the *current* head and applied as a ``review`` version: one
that no longer fits (an ADD on a leaf filled since) becomes ``rejected`` with the gate's reason
instead of overwriting newer state. Declining records who, when and why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

from django.db import transaction
from django.utils import timezone

from memory import selectors
from memory.engine.gate import GatePolicy, gate
from memory.engine.ops import Op, OpType
from memory.engine.tree import apply
from memory.models import OpRecord, TreeVersion
from memory.services import ServiceError, VersionConflict
from memory.services.tree import schedule_follow_up, send_signal, write_version
from memory.services.tree_store import lock_subject
from memory.signals import review_decided


@dataclass(frozen=True)
class ReviewOutcome:
    subject_id: int
    version: TreeVersion | None
    approved: tuple[OpRecord, ...]
    rejected: tuple[OpRecord, ...]


def _grouped(op_ids: Iterable[int]) -> dict[int, list[int]]:
    ids = sorted({int(i) for i in op_ids})
    if not ids:
        raise ServiceError("No ops selected.", field="op_ids")
    groups: dict[int, list[int]] = defaultdict(list)
    for pk, subject_id in OpRecord.objects.filter(pk__in=ids).values_list("pk", "subject_id"):
        groups[subject_id].append(pk)
    return groups


def ops_review_approve(*, op_ids: Iterable[int], user, note: str = "") -> list[ReviewOutcome]:
    """Apply held ops (only those still ``pending_review``); returns one outcome per subject."""
    outcomes = []
    for subject_id, ids in _grouped(op_ids).items():
        with transaction.atomic():
            locked = lock_subject(subject_id)
            records = list(
                OpRecord.objects.select_for_update()
                .filter(pk__in=ids, subject_id=subject_id, status=OpRecord.Status.PENDING_REVIEW)
                .order_by("created_at", "position", "id")
            )
            if not records:
                continue
            outcomes.append(_approve_locked(locked, records, user, note))
    return outcomes


def _approve_locked(locked, records: list[OpRecord], user, note: str) -> ReviewOutcome:
    """Apply ``records`` (held, locked, of the locked subject) on top of its current head."""
    schema = selectors.subject_schema(locked)
    tree = selectors.tree_current(locked)
    ops = [Op(r.op_type, r.path or None, r.new_value, r.confidence) for r in records]
    result = gate(schema, tree, ops, GatePolicy(lenient=locked.tenant.gate_lenient))
    new_tree, _ = apply(tree, result.accepted)
    version = write_version(
        locked,
        new_tree,
        created_by=TreeVersion.CreatedBy.REVIEW,
        note=f"review approved by {user.get_username()}",
    )
    rejected_by_op = {id(rej.op): rej for rej in result.rejected}
    # Value-normalised accepted ops are different objects than the records' ops: map by path.
    accepted_values = {op.path: op.value for op in result.accepted}
    now = timezone.now()
    approved, refused = [], []
    for op, record in zip(ops, records, strict=True):
        record.decided_by, record.decided_at, record.decision_note = user, now, note
        if (rej := rejected_by_op.get(id(op))) is None:
            record.status, record.version = OpRecord.Status.APPROVED, version
            record.old_value = tree.get(record.path) if record.path else None
            record.new_value = accepted_values.get(record.path, record.new_value)
            approved.append(record)
        else:
            record.status, record.reason_code = OpRecord.Status.REJECTED, str(rej.reason)
            record.detail = f"approved, but re-gated against v{locked.head_version}: {rej.detail}"
            refused.append(record)
    OpRecord.objects.bulk_update(
        records,
        ["status", "version", "op_type", "path", "old_value", "new_value", "reason_code", "detail"]
        + ["decided_by", "decided_at", "decision_note"],
    )
    schedule_follow_up(locked.pk, version, None, [])
    number = version.number if version is not None else None
    _announce(locked.pk, "approved", approved=len(approved), rejected=len(refused), version=number)
    return ReviewOutcome(locked.pk, version, tuple(approved), tuple(refused))


def op_review_approve(
    *, op_id: int, user, base_version: int, path: str | None = None, value: str | None = None
) -> ReviewOutcome:
    """Approve one held op as the moderator saw it on ``base_version`` (else :class:`VersionConflict`),
    optionally moved to ``path`` and/or set to ``value`` first (an ADD on an empty leaf, an UPDATE on a
    filled one; noted in its detail). Refused by the gate: nothing written, :class:`ServiceError`."""
    with transaction.atomic():
        subject_id = OpRecord.objects.filter(pk=op_id).values_list("subject_id", flat=True).first()
        if subject_id is None:
            raise ServiceError("No such op.", field="op_id", code="not_found")
        locked = lock_subject(subject_id)
        record = OpRecord.objects.select_for_update().get(pk=op_id)
        if record.status != OpRecord.Status.PENDING_REVIEW:
            raise ServiceError(f"This op was already decided ({record.status}).", field="op_id")
        if base_version != locked.head_version:
            raise VersionConflict(locked.head_version, base_version)
        path = (path or record.path).strip()
        value = record.new_value if value is None else value.strip()
        if (path, value) != (record.path, record.new_value):
            _correct(record, path, value, selectors.tree_current(locked), user)
        outcome = _approve_locked(locked, [record], user, "approved in the admin")
        if outcome.rejected:
            refused = outcome.rejected[0]
            raise ServiceError(f"Not approved: {refused.reason_code}: {refused.detail}", field="value")
    return outcome


def _correct(record: OpRecord, path: str, value: str | None, tree, user) -> None:
    was = f"{record.op_type} {record.path} = {record.new_value!r}"
    if value:
        record.op_type = str(OpType.UPDATE if tree.get(path) is not None else OpType.ADD)
    elif record.op_type != OpType.DELETE or path != record.path:
        raise ServiceError("Give the value to approve (or decline the op).", field="value")
    record.path, record.new_value = path, value or None
    record.detail = f"{record.detail}; corrected by {user.get_username()} (was {was})".lstrip("; ")
    # Saved with the decision (``_approve_locked``), or not at all when the gate refuses it.


def ops_review_decline(*, op_ids: Iterable[int], user, note: str) -> int:
    """Decline held ops with a reason; returns how many were declined. Nothing is applied."""
    note = (note or "").strip()
    if not note:
        raise ServiceError("Say why the ops are declined.", field="note")
    declined = 0
    for subject_id, ids in _grouped(op_ids).items():
        with transaction.atomic():
            lock_subject(subject_id)
            here = OpRecord.objects.filter(
                pk__in=ids, subject_id=subject_id, status=OpRecord.Status.PENDING_REVIEW
            ).update(
                status=OpRecord.Status.DECLINED,
                decided_by=user,
                decided_at=timezone.now(),
                decision_note=note,
            )
            declined += here
            if here:
                _announce(subject_id, "declined", declined=here)
    return declined


def _announce(subject_id: int, decision: str, version: int | None = None, **counts: int) -> None:
    """``review_decided`` after commit (``counts``: approved, rejected, declined; 0 when not given)."""
    counts = {"approved": 0, "rejected": 0, "declined": 0, **counts}
    kwargs = {"subject_id": subject_id, "decision": decision, "version": version, **counts}
    transaction.on_commit(partial(send_signal, review_decided, **kwargs))
