"""Schema migrations: a declared mapping (docs/SCHEMAS.md) applied to every tree pinned to its source,
a batch of subjects per transaction, through the store's one write path (values crossing the
special tier's border held for review). Resumable: a subject on the target is never selected again.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.db.models.base import ModelState
from django.utils import timezone

from memory import selectors
from memory.engine.gate import STRICT, Reason, gate
from memory.engine.migration import Migration, MigrationError, MigrationPlan, load_migration, plan_migration
from memory.engine.ops import Op, OpType
from memory.engine.schema import Schema, SchemaError, check_text, document_digest
from memory.engine.tree import Tree, apply
from memory.models import OpRecord, SchemaMigration, Subject, Tenant, TreeVersion
from memory.services import ServiceError
from memory.services.schemas import tenant_default_schema_follow
from memory.services.tree import Actor, next_version, schedule_follow_up
from memory.services.tree_store import lock_subjects, write_applies

logger = logging.getLogger(__name__)
ACTOR_PREFIX = "schema-migration:"
REPORT_KINDS = ("moved", "merged", "split", "dropped", "truncated", "review")
BY = TreeVersion.CreatedBy.MIGRATION
DEFAULT_BATCH_SIZE = 200  # subjects per transaction, chosen with bench/bench_schema.py --sweep
COUNTS = ("migrated", "unchanged", "held", "held_ops", "failed")
INVALID_TREE = "INVALID_TREE"  # a subject's stored tree holds a value outside the source schema
HELD_NOTE = "special-tier leaf: held for review (schema migration)"
LOWERED_NOTE = "value of a special-tier leaf: held for review (schema migration)"


class SchemaMigrationConflict(ServiceError):
    code = "schema_migration_conflict"
    http_status = 409


def _schema(tenant_id: int, document: Mapping[str, Any], name: str) -> Schema:
    raw = document.get(name)
    schema_id, version = (raw.get("id"), raw.get("version")) if isinstance(raw, Mapping) else (None, None)
    where = f"document.{name}"
    if not isinstance(schema_id, str) or type(version) is not int or not 0 < version < 2**31:
        raise ServiceError(f"The mapping's {name} must be {{'id': <str>, 'version': <int>}}.", field=where)
    try:
        return selectors.schema_get(tenant_id, schema_id, version)
    except SchemaError as exc:
        message = (
            f"The mapping's {name} {schema_id} v{version} is no schema of this tenant nor a shipped one."
        )
        raise ServiceError(message, field=where, code="unknown_schema") from exc


def _error_field(message: str) -> str:
    """The document field a :class:`MigrationError` is about (its message names the step)."""
    if step := re.match(r"steps\[\d+\]", message):
        return f"document.{step.group()}"
    return {"mapping id ": "document.id", "mapping has": "document"}.get(message[:11], "document.steps")


def migration_load(tenant_id: int, document: Any) -> Migration:
    """The engine :class:`Migration` of ``document`` between the tenant's schemas (``ServiceError`` if invalid)."""
    if not isinstance(document, Mapping):
        raise ServiceError("The mapping must be a JSON object.", field="document")
    try:  # PostgreSQL stores neither (the document is kept as JSON, its id as text)
        check_text(document, "document")
    except SchemaError as exc:
        raise ServiceError(f"Invalid mapping: {exc}", field="document", code="invalid_mapping") from exc
    source, target = _schema(tenant_id, document, "source"), _schema(tenant_id, document, "target")
    try:
        return load_migration(document, source, target)
    except MigrationError as exc:
        raise ServiceError(
            f"Invalid mapping: {exc}", field=_error_field(str(exc)), code="invalid_mapping"
        ) from exc


def schema_migration_prepare(*, tenant: Tenant, document: Any, created_by: str = "") -> SchemaMigration:
    """The validated mapping as a row: the stored one for the same document, else an unsaved one
    (:class:`SchemaMigrationConflict` when the mapping id is taken by another document)."""
    migration = migration_load(tenant.pk, document)
    if len(migration.id) > SchemaMigration._meta.get_field("mapping_id").max_length:
        raise ServiceError("The mapping id is longer than 200 characters.", field="document.id")
    digest = document_digest(document)
    existing = SchemaMigration.objects.filter(tenant=tenant, mapping_id=migration.id).first()
    if existing is not None:
        if existing.digest != digest:
            raise SchemaMigrationConflict(
                f"Mapping {migration.id!r} exists with another document; give the new mapping another id.",
                field="document.id",
            )
        existing.tenant = tenant
        return existing
    return SchemaMigration(
        tenant=tenant,
        mapping_id=migration.id,
        source_id=migration.source.id,
        source_version=migration.source.version,
        target_id=migration.target.id,
        target_version=migration.target.version,
        document=dict(document),
        digest=digest,
        created_by=created_by[:200],
    )


def schema_migration_create(
    *, tenant: Tenant, document: Any, created_by: str = ""
) -> tuple[SchemaMigration, bool]:
    """Validate and store a mapping; ``(row, created)``. Same document again: the stored row."""
    row = schema_migration_prepare(tenant=tenant, document=document, created_by=created_by)
    if row.pk is not None:
        return row, False
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()  # one create per tenant at a time
        if SchemaMigration.objects.filter(tenant=tenant, mapping_id=row.mapping_id).exists():  # meanwhile
            return schema_migration_prepare(tenant=tenant, document=document), False
        row.save(force_insert=True)
    return row, True


def schema_migration_get(*, tenant: Tenant, mapping_id: str) -> SchemaMigration | None:
    return SchemaMigration.objects.filter(tenant=tenant, mapping_id=mapping_id).first()


def pending_subjects(migration: SchemaMigration) -> QuerySet[Subject]:
    """The tenant's subjects still pinned to the mapping's source."""
    return Subject.objects.filter(
        tenant_id=migration.tenant_id, schema_id=migration.source_id, schema_version=migration.source_version
    )


@dataclass
class Planned:
    """What migrating one tree writes: ``apply_now`` (gated ops, then retirements), ``held`` ops, or a failure."""

    plan: MigrationPlan | None
    before: Tree
    new_tree: Tree
    apply_now: list[Op] = field(default_factory=list)
    held: list[Op] = field(default_factory=list)
    failure: str = ""
    detail: str = ""


def plan_subject(tree: Tree, pinned: tuple[str, int], migration: Migration, *, review: bool) -> Planned:
    """Plan, gate and split one subject's migration (module docstring); ``MigrationError`` for a bad tree."""
    plan = plan_migration(tree, migration, pinned=pinned)
    target, ops = migration.target, list(plan.ops())
    # Held for review: values leaving the special tier always, those entering it if the tenant reviews.
    to_review = {r["path"] for r in plan.report["review"] if review or r["tier"] != "special"}
    # A kept value whose leaf became special: taken out of the tree and held like a moved one.
    named = {op.path for op in ops}
    kept = [p for p in sorted(to_review - named) if p in tree and plan.after.get(p) == tree.get(p)]
    ops += [Op(OpType.DELETE, p) for p in kept]
    on_target = [op for op in ops if target.is_leaf(op.path or "")]
    retire = [op for op in ops if not target.is_leaf(op.path or "")]
    result = gate(target, tree, on_target, STRICT)
    if refused := [r for r in result.rejected if r.reason is not Reason.NO_CHANGE]:
        return Planned(plan, tree, tree, failure=str(refused[0].reason), detail=refused[0].detail)
    held = [op for op in result.accepted if op.type is not OpType.DELETE and op.path in to_review]
    held += [Op(OpType.ADD, p, tree[p]) for p in kept]
    now = [op for op in result.accepted if op.path not in to_review or op.type is OpType.DELETE] + retire
    # All accepted as planned, none held: the plan's tree is the replay's (engine property test).
    new_tree = plan.after if not held and result.accepted == tuple(on_target) else apply(tree, now)[0]
    return Planned(plan, tree, new_tree, now, held)


def _planned(subject: Subject, migration: Migration, review: bool) -> Planned:
    """:func:`plan_subject` of a subject row; a tree that cannot be read or planned fails that subject only."""
    try:
        tree = selectors.tree_current(subject)
        return plan_subject(tree, (subject.schema_id, subject.schema_version), migration, review=review)
    except ValueError as exc:  # a stored tree the engine refuses (TreeError, MigrationError)
        return Planned(None, Tree(), Tree(), failure=INVALID_TREE, detail=str(exc)[:200])
    except Exception as exc:  # a bug: logged, and only this subject fails
        logger.exception("schema migration %s: subject %s not planned", migration.id, subject.pk)
        return Planned(None, Tree(), Tree(), failure="ERROR", detail=type(exc).__name__)


_VARYING = {"dropped": ("length",), "truncated": ("before", "after")}


class _Report:
    """The per-subject plan reports summed over subjects (paths and counts, never values)."""

    def __init__(self, migration: Migration):
        self.migration = migration
        self.counts: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.rows: dict[str, dict[tuple, dict]] = {kind: {} for kind in REPORT_KINDS}

    def add(self, planned: Planned, *, held_review: bool) -> None:
        self.counts.update(subjects=1, held=bool(planned.held), held_ops=len(planned.held))
        if planned.failure or planned.plan is None:
            self.counts["failed"] += 1
            self.failures[planned.failure] += 1
            return
        self.counts["changed" if planned.new_tree != planned.before else "unchanged"] += 1
        for kind in REPORT_KINDS:
            for entry in planned.plan.report[kind]:
                varying = _VARYING.get(kind, ())
                fixed = {k: v for k, v in entry.items() if k not in varying}
                key = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in fixed.items())
                row = self.rows[kind].setdefault(key, {**fixed, "subjects": 0})
                row["subjects"] += 1
                if kind == "dropped":
                    row["max_length"] = max(row.get("max_length", 0), entry["length"])
                elif kind == "truncated":
                    row["max_before"] = max(row.get("max_before", 0), entry["before"])
                elif kind == "review":
                    row["held"] = held_review or entry["tier"] != "special"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mapping": self.migration.id,
            "source": list(self.migration.source.key),
            "target": list(self.migration.target.key),
            "dry_run": True,
            **{n: self.counts[n] for n in ("subjects", "changed", "unchanged", "held", "held_ops", "failed")},
            "failures": dict(sorted(self.failures.items())),
            **{kind: list(self.rows[kind].values()) for kind in REPORT_KINDS},
        }


def schema_migration_dry_run(*, migration: SchemaMigration, limit: int | None = None) -> dict[str, Any]:
    """What :func:`schema_migration_run` would do to the subjects pinned to the source (at most
    ``limit`` of them, in id order); ``remaining`` is how many are pinned to it in all."""
    engine = migration_load(migration.tenant_id, migration.document)
    review = migration.tenant.review_special_tier
    report = _Report(engine)
    pending = pending_subjects(migration)
    ids = list(pending.order_by("pk").values_list("pk", flat=True)[:limit])
    for start in range(0, len(ids), 500):
        for subject in Subject.objects.filter(pk__in=ids[start : start + 500]).select_related("head"):
            report.add(_planned(subject, engine, review), held_review=review)
    return {**report.to_dict(), "remaining": pending.count()}


def schema_migration_run(
    *,
    migration: SchemaMigration,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_subjects: int | None = None,
    after_id: int = 0,
) -> dict[str, Any]:
    """Migrate the subjects still on the source above ``after_id`` (at most ``max_subjects``), a batch
    per transaction; the row's status and counts, ``examined`` and ``last_id`` (the next slice's start)."""
    if batch_size < 1:
        raise ServiceError("batch_size must be at least 1.", field="batch_size")
    engine = migration_load(migration.tenant_id, migration.document)
    actor = Actor.system(f"{ACTOR_PREFIX}{migration.mapping_id}"[:200])
    pending = pending_subjects(migration)
    # A new pass retries the subjects that failed: their count starts again.
    _row_update(
        migration.pk, SchemaMigration.Status.RUNNING, {"failed": 0, "failures": {}} if not after_id else {}
    )
    tenant_default_schema_follow(migration=migration)  # subjects created from now on are born on the target
    examined, last_id = 0, after_id
    while max_subjects is None or examined < max_subjects:
        take = batch_size if max_subjects is None else min(batch_size, max_subjects - examined)
        ids = list(pending.filter(pk__gt=last_id).order_by("pk").values_list("pk", flat=True)[:take])
        if not ids:
            break
        _run_batch(migration, engine, actor, ids)
        examined, last_id = examined + len(ids), ids[-1]
    remaining = pending.count()
    done = SchemaMigration.Status.DONE if remaining == 0 else SchemaMigration.Status.RUNNING
    row = _row_update(migration.pk, done, {"remaining": remaining})
    migration.status, migration.counts = row.status, row.counts
    return {**status_dict(row), "examined": examined, "last_id": last_id}


def _row_update(pk: int, status: str, counts: dict) -> SchemaMigration:
    with transaction.atomic():
        row = SchemaMigration.objects.select_for_update().get(pk=pk)
        row.status, row.counts = status, {**row.counts, **counts}
        row.save(update_fields=["counts", "status", "updated_at"])
    return row


def status_dict(row: SchemaMigration) -> dict[str, Any]:
    counts = {name: int(row.counts.get(name, 0)) for name in COUNTS}
    return {
        "mapping": row.mapping_id,
        "source": [row.source_id, row.source_version],
        "target": [row.target_id, row.target_version],
        "status": row.status,
        "counts": {**counts, "failures": dict(row.counts.get("failures", {}))},
        "remaining": row.counts.get("remaining"),
    }


def _run_batch(row: SchemaMigration, migration: Migration, actor: Actor, ids: list[int]) -> None:
    source, target = migration.source.key, migration.target.key
    note = f"schema migration {migration.id}"
    proto = OpRecord(schema_migration_id=row.pk, **actor.record_fields())
    template = {k: v for k, v in proto.__dict__.items() if k != "_state"}
    counts, failures = Counter[str](), Counter[str]()
    entries, moved = [], []
    with transaction.atomic():
        for pk, locked in sorted(lock_subjects(dict.fromkeys(ids)).items()):  # an erased one is absent
            if (locked.schema_id, locked.schema_version) != source:  # migrated by another run meanwhile
                continue
            planned = _planned(locked, migration, locked.tenant.review_special_tier)
            if planned.failure:
                counts["failed"] += 1
                failures[planned.failure] += 1
                continue
            version = None
            if planned.new_tree != planned.before:
                version = next_version(
                    locked, planned.before, planned.new_tree, created_by=BY, chunk_id=None, note=note
                )
            if records := _records(locked, version, planned, template, migration.target):
                entries.append((locked, version, None, records))
            moved.append(pk)
            counts["migrated" if version is not None else "unchanged"] += 1
            counts.update(held=bool(planned.held), held_ops=len(planned.held))
        write_applies(entries)
        if moved:
            Subject.objects.filter(pk__in=moved).update(
                schema_id=target[0], schema_version=target[1], updated_at=timezone.now()
            )
        stored = SchemaMigration.objects.select_for_update().get(pk=row.pk)
        total = Counter({k: v for k, v in stored.counts.items() if k in COUNTS}) + counts
        merged_failures = Counter(stored.counts.get("failures", {})) + failures
        stored.counts = {**stored.counts, **{k: total[k] for k in COUNTS}, "failures": dict(merged_failures)}
        stored.save(update_fields=["counts", "updated_at"])
        for locked, version, _, records in entries:
            held = [r.pk for r in records if r.status == OpRecord.Status.PENDING_REVIEW]
            schedule_follow_up(locked.pk, version, None, held)


def _records(locked: Subject, version, planned: Planned, template: dict, target: Schema) -> list[OpRecord]:
    """One audit row per op (applied, retired, held), copied from ``template`` (cheaper than ``__init__``)."""
    subject = {"subject_id": locked.pk, "base_version": locked.head_version, "batch": uuid.uuid4()}
    retired = f"retired: not a leaf of {target.id} v{target.version}"
    records = []
    for position, op in enumerate(planned.apply_now + planned.held):
        is_held, leaf = position >= len(planned.apply_now), target.leaf(op.path or "")
        record = OpRecord.__new__(OpRecord)
        record.__dict__.update(template, **subject)
        record.__dict__.update(
            position=position,
            op_type=str(op.type),
            path=op.path or "",
            old_value=planned.before.get(op.path) if op.path else None,
            new_value=op.value,
            status=OpRecord.Status.PENDING_REVIEW if is_held else OpRecord.Status.APPLIED,
            reason_code=str(Reason.REVIEW_REQUIRED) if is_held else "",
            detail=(HELD_NOTE if leaf is not None and leaf.tier == "special" else LOWERED_NOTE)
            if is_held
            else ("" if leaf is not None else retired),
        )
        record._state = ModelState()
        if not is_held and version is not None:  # the version's id is known once it is written (ORM path)
            record._state.fields_cache["version"] = version
            record.version_id = version.pk
        records.append(record)
    return records
