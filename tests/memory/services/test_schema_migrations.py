"""Schema migrations of a tenant's subjects (issue 18 item 1): create, dry run, run.

The fixture tenant (tests/schema_migration_fixture.py) has acme-profile v1 and v2 uploaded and
subjects pinned to v1. Real Postgres; the per-subject lock path (other databases) is run too."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from memory import selectors
from memory.engine.gate import GateResult, Reason, Rejection
from memory.engine.ops import Op
from memory.engine.tree import Tree, apply
from memory.models import OpRecord, SchemaMigration, Subject, TreeVersion
from memory.services import ServiceError, schema_migrations, tree_store
from memory.services.governance import ops_review_approve
from memory.services.schema_migrations import (
    SchemaMigrationConflict,
    schema_migration_create,
    schema_migration_dry_run,
    schema_migration_run,
)
from memory.signals import version_applied
from tests.factories import TreeVersionFactory
from tests.schema_migration_fixture import MAPPING_ID, TREES, acme_tenant, mapping

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme(db):
    return acme_tenant()


@pytest.fixture
def migration(acme):
    row, created = schema_migration_create(tenant=acme, document=mapping(), created_by="test")
    assert created
    return row


def head(tenant, external_id) -> dict:
    subject = selectors.subject_get(tenant=tenant, external_id=external_id)
    return selectors.tree_current(subject).to_dict()


def pins(tenant) -> dict[str, tuple[str, int]]:
    rows = Subject.objects.filter(tenant=tenant).values_list("external_id", "schema_id", "schema_version")
    return {e: (s, v) for e, s, v in rows}


# --- create ---------------------------------------------------------------------------------------


def test_create_is_idempotent_and_another_document_under_the_same_id_conflicts(acme, migration):
    again, created = schema_migration_create(tenant=acme, document=mapping())
    assert (again.pk, created) == (migration.pk, False)
    assert (migration.source_id, migration.source_version, migration.target_version) == ("acme-profile", 1, 2)
    other = mapping()
    other["steps"][4] = {"op": "rename", "from": "body/appearance/height", "to": "learning/goals/motivation"}
    with pytest.raises(SchemaMigrationConflict) as exc:
        schema_migration_create(tenant=acme, document=other)
    assert exc.value.http_status == 409 and exc.value.field == "document.id"


def test_a_bad_step_is_named_in_the_error_field(acme):
    bad = mapping()
    bad["steps"][2]["to"] = "habits/media/nowhere"
    with pytest.raises(ServiceError) as exc:
        schema_migration_create(tenant=acme, document=bad)
    assert exc.value.field == "document.steps[2]" and exc.value.code == "invalid_mapping"
    assert "steps[2] (merge" in exc.value.message
    unmapped = mapping()
    del unmapped["steps"][4]  # the dropped leaf is left unmapped: no silent loss
    with pytest.raises(ServiceError, match="body/appearance/height"):
        schema_migration_create(tenant=acme, document=unmapped)
    assert not SchemaMigration.objects.filter(tenant=acme).exists()


def test_unknown_schemas_and_other_tenants_schemas_are_refused(acme, other_tenant):
    wrong = mapping()
    wrong["target"]["version"] = 3
    with pytest.raises(ServiceError) as exc:
        schema_migration_create(tenant=acme, document=wrong)
    assert (exc.value.field, exc.value.code) == ("document.target", "unknown_schema")
    with pytest.raises(ServiceError) as exc:  # acme's schemas are not other_tenant's
        schema_migration_create(tenant=other_tenant, document=mapping())
    assert exc.value.field == "document.source"
    with pytest.raises(ServiceError) as exc:
        schema_migration_create(tenant=acme, document=["not", "an", "object"])
    assert exc.value.field == "document"


# --- dry run --------------------------------------------------------------------------------------


def test_dry_run_reports_counts_per_path_and_writes_nothing(acme, migration):
    versions, records = TreeVersion.objects.count(), OpRecord.objects.count()
    report = schema_migration_dry_run(migration=migration)
    assert (TreeVersion.objects.count(), OpRecord.objects.count()) == (versions, records)
    assert set(pins(acme).values()) == {("acme-profile", 1)}
    assert report["subjects"] == 4 and report["remaining"] == 4
    assert (report["changed"], report["unchanged"], report["failed"]) == (2, 2, 0)
    assert (report["held"], report["held_ops"]) == (1, 2)  # u1: sleep moved to special, stressors
    assert {(r["from"], r["to"], r["subjects"]) for r in report["moved"]} == {
        ("identity/name/nickname", "identity/name/called", 2),
        ("habits/sleep/schedule", "health/sleep/schedule", 1),
    }
    assert report["merged"] == [
        {
            "from": ["habits/media/music", "habits/media/podcasts"],
            "to": "habits/media/listening",
            "subjects": 1,
        }
    ]
    assert report["dropped"] == [{"path": "body/appearance/height", "subjects": 2, "max_length": 6}]
    assert report["truncated"] == [
        {
            "path": "learning/style/preferred_format",
            "budget": 40,
            "subjects": 1,
            "max_before": len(TREES["u1"]["learning/style/preferred_format"]),
        }
    ]
    assert {r["path"] for r in report["review"]} == {"health/sleep/schedule", "wellbeing/mood/stressors"}
    assert all(r["held"] for r in report["review"])
    text = json.dumps(report)
    assert not any(value in text for tree in TREES.values() for value in tree.values())  # never values
    assert schema_migration_dry_run(migration=migration, limit=1)["subjects"] == 1


# --- run ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("orm", [False, True], ids=["postgres_store", "orm_store"])
def test_run_migrates_every_subject_in_one_audited_version(
    acme, migration, orm, monkeypatch, django_capture_on_commit_callbacks
):
    if orm:
        monkeypatch.setattr(tree_store, "store", lambda: tree_store.ORM_STORE)
    sent = []
    version_applied.connect(receiver := lambda sender, **kw: sent.append(kw), weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            out = schema_migration_run(migration=migration, batch_size=3)
    finally:
        version_applied.disconnect(receiver)
    assert out["status"] == "done" and out["remaining"] == 0
    assert out["counts"] == {
        "migrated": 2, "unchanged": 2, "held": 1, "held_ops": 2, "failed": 0, "failures": {},
    }  # fmt: skip
    assert set(pins(acme).values()) == {("acme-profile", 2)}
    assert head(acme, "u1") == {
        "identity/name/full_name": "Samira Okafor",
        "identity/name/called": "Sam",
        "learning/goals/current": "algebra for the GCSE resit in June",
        "learning/style/preferred_format": "short worked examples first, then one",
        "habits/media/listening": "lo-fi while studying; a history podcast on Sundays",
        "habits/routine/weekdays": "school 8 to 3",
        "habits/routine/weekends": "homework after dinner; football on Saturday",
    }  # the sleep schedule and the stressors wait for review; the height is dropped
    assert head(acme, "u2") == {"identity/name/called": "Jo"}
    assert head(acme, "u3") == {"identity/location/home": "Leeds"}  # unchanged: no version
    u1 = Subject.objects.get(tenant=acme, external_id="u1")
    version = TreeVersion.objects.get(subject=u1, number=2)
    assert version.created_by == "migration" and MAPPING_ID in version.note
    assert u1.head_version == 2 and Subject.objects.get(tenant=acme, external_id="u3").head_version == 1
    records = OpRecord.objects.filter(subject=u1, schema_migration=migration)
    assert {r.actor_kind for r in records} == {"system"}
    assert {r.actor_name for r in records} == {f"schema-migration:{MAPPING_ID}"}
    held = {r.path: r for r in records if r.status == "pending_review"}
    assert set(held) == {"health/sleep/schedule", "wellbeing/mood/stressors"}
    assert all(r.version_id is None and r.reason_code == "REVIEW_REQUIRED" for r in held.values())
    retired = records.get(path="body/appearance/height")
    assert (retired.op_type, retired.status, retired.version_id) == ("DELETE", "applied", version.pk)
    assert "retired" in retired.detail
    assert sorted(kw["subject_id"] for kw in sent) == sorted(
        Subject.objects.filter(tenant=acme, external_id__in=["u1", "u2"]).values_list("pk", flat=True)
    )
    assert all(kw["chunk_id"] is None for kw in sent)
    row = SchemaMigration.objects.get(pk=migration.pk)
    assert row.status == "done" and row.counts["migrated"] == 2


def test_held_values_are_approved_under_the_target_schema(acme, migration, admin_user):
    schema_migration_run(migration=migration)
    u1 = Subject.objects.get(tenant=acme, external_id="u1")
    held = OpRecord.objects.filter(subject=u1, status="pending_review").values_list("pk", flat=True)
    ops_review_approve(op_ids=list(held), user=admin_user)
    tree = head(acme, "u1")
    assert tree["health/sleep/schedule"] == "asleep by 11, up at 7"
    assert tree["wellbeing/mood/stressors"] == "exams and speaking in front of the class"


def _replayed_heads(subject: Subject) -> list[tuple[int, Tree, Tree]]:
    ops = defaultdict(list)
    for vid, op_type, path, value in (
        OpRecord.objects.filter(subject=subject, version__isnull=False, status__in=["applied", "approved"])
        .order_by("version_id", "position", "id")
        .values_list("version_id", "op_type", "path", "new_value")
    ):
        ops[vid].append(Op(op_type, path, value))
    versions = TreeVersion.objects.load_snapshots(
        TreeVersion.objects.filter(subject=subject).order_by("number")
    )
    tree, out = Tree(), []
    for version in versions:
        tree, _ = apply(tree, ops[version.pk])
        out.append((version.number, tree, Tree.from_dict(version.snapshot)))
    return out


def test_migrated_versions_equal_the_replay_of_the_op_log(acme, migration, admin_user):
    schema_migration_run(migration=migration)
    u1 = Subject.objects.get(tenant=acme, external_id="u1")
    held = OpRecord.objects.filter(subject=u1, status="pending_review").values_list("pk", flat=True)
    ops_review_approve(op_ids=list(held), user=admin_user)
    for external_id in TREES:
        subject = Subject.objects.get(tenant=acme, external_id=external_id)
        replay = _replayed_heads(subject)
        assert all(replayed == stored for _, replayed, stored in replay), external_id
        if replay:
            assert replay[-1][1] == selectors.tree_current(subject)
    assert [n for n, *_ in _replayed_heads(u1)] == [1, 2, 3]


def test_a_subject_that_fails_stays_on_the_source_and_the_others_migrate(acme, migration):
    bad = Subject.objects.create(tenant=acme, external_id="bad", schema_id="acme-profile", schema_version=1)
    version = TreeVersionFactory(subject=bad, number=1, snapshot={"not/in/the_schema": "x"})
    Subject.objects.filter(pk=bad.pk).update(head=version, head_version=1)
    out = schema_migration_run(migration=migration, batch_size=2)
    assert out["status"] == "running" and out["remaining"] == 1
    assert out["counts"]["failed"] == 1 and out["counts"]["failures"] == {"INVALID_TREE": 1}
    assert pins(acme)["bad"] == ("acme-profile", 1)
    assert [p for e, p in pins(acme).items() if e != "bad"] == [("acme-profile", 2)] * 4
    again = schema_migration_run(migration=migration)  # a new pass retries it: failed counts again
    assert again["counts"]["failed"] == 1 and again["counts"]["migrated"] == 2


def test_a_gate_rejection_under_the_target_fails_that_subject_alone(acme, migration, monkeypatch):
    """The target's gate is the last word: an op it refuses fails that subject (kept on the source,
    nothing written for it) and the others migrate. Planned ops pass it by construction, so the
    refusal is made here: u2's renamed value is over a budget."""
    real = schema_migrations.gate

    def refusing(schema, tree, ops, policy):
        result = real(schema, tree, ops, policy)
        bad = [op for op in result.accepted if op.value == "Jo"]
        kept = tuple(op for op in result.accepted if op.value != "Jo")
        return GateResult(kept, tuple(Rejection(op, Reason.OVER_BUDGET, "test") for op in bad), ())

    monkeypatch.setattr(schema_migrations, "gate", refusing)
    out = schema_migration_run(migration=migration)
    assert out["counts"]["failures"] == {"OVER_BUDGET": 1} and out["counts"]["migrated"] == 1
    u2 = Subject.objects.get(tenant=acme, external_id="u2")
    assert (u2.schema_version, u2.head_version) == (1, 1)
    assert not OpRecord.objects.filter(subject=u2, schema_migration=migration).exists()
    assert head(acme, "u2") == TREES["u2"]


def test_a_tree_the_engine_cannot_read_fails_that_subject_alone(acme, migration):
    """A stored blank value (an old import; the gate never writes one) is no tree: INVALID_TREE."""
    blank = Subject.objects.create(
        tenant=acme, external_id="blank", schema_id="acme-profile", schema_version=1
    )
    version = TreeVersionFactory(subject=blank, number=1, snapshot={"identity/name/nickname": "   "})
    Subject.objects.filter(pk=blank.pk).update(head=version, head_version=1)
    assert schema_migration_dry_run(migration=migration)["failures"] == {"INVALID_TREE": 1}
    out = schema_migration_run(migration=migration)
    assert out["counts"]["failures"] == {"INVALID_TREE": 1} and out["counts"]["migrated"] == 2
    blank.refresh_from_db()
    assert (blank.schema_version, blank.head_version) == (1, 1)


def test_a_subject_migrated_meanwhile_is_skipped(acme, migration, monkeypatch):
    real = schema_migrations.lock_subjects

    def lock_after_another_run(chunk_ids):  # another run moved u1 between the id query and the lock
        Subject.objects.filter(tenant=acme, external_id="u1").update(schema_version=2)
        return real(chunk_ids)

    monkeypatch.setattr(schema_migrations, "lock_subjects", lock_after_another_run)
    out = schema_migration_run(migration=migration)
    assert out["status"] == "done" and out["counts"]["migrated"] == 1  # u2 only; u1 untouched
    assert not TreeVersion.objects.filter(subject__external_id="u1", created_by="migration").exists()


def test_a_stopped_or_crashed_run_resumes_and_never_migrates_a_subject_twice(acme, migration, monkeypatch):
    first = schema_migration_run(migration=migration, batch_size=1, max_subjects=2)
    assert first["status"] == "running" and first["examined"] == 2 and first["remaining"] == 2
    calls = []
    real = schema_migrations.write_applies

    def crash_on_second(entries):
        calls.append(len(entries))
        if len(calls) == 2:
            raise RuntimeError("worker killed")
        return real(entries)

    monkeypatch.setattr(schema_migrations, "write_applies", crash_on_second)
    with pytest.raises(RuntimeError):
        schema_migration_run(migration=migration, batch_size=1)
    assert SchemaMigration.objects.get(pk=migration.pk).counts["unchanged"] == 1  # u3 committed, u4 not
    monkeypatch.setattr(schema_migrations, "write_applies", real)
    done = schema_migration_run(migration=migration, batch_size=1)
    assert done["status"] == "done" and done["examined"] == 1
    assert {k: done["counts"][k] for k in ("migrated", "unchanged", "held")} == {
        "migrated": 2, "unchanged": 2, "held": 1,
    }  # fmt: skip
    migration_versions = TreeVersion.objects.filter(subject__tenant=acme, created_by="migration")
    assert migration_versions.count() == 2
    versions = TreeVersion.objects.count()
    assert schema_migration_run(migration=migration)["examined"] == 0  # idempotent
    assert TreeVersion.objects.count() == versions


def test_without_review_the_special_tier_values_are_written_at_once(db):
    tenant = acme_tenant("acme-open", review_special_tier=False)
    row, _ = schema_migration_create(tenant=tenant, document=mapping())
    out = schema_migration_run(migration=row)
    assert out["counts"]["held"] == 0
    tree = head(tenant, "u1")
    assert tree["health/sleep/schedule"] == "asleep by 11, up at 7"
    assert tree["wellbeing/mood/stressors"] == "exams and speaking in front of the class"


def test_bad_batch_size_is_refused(migration):
    with pytest.raises(ServiceError) as exc:
        schema_migration_run(migration=migration, batch_size=0)
    assert exc.value.field == "batch_size"


def test_a_run_moves_the_tenants_default_from_the_source_so_new_subjects_are_born_on_the_target(
    acme, migration
):
    from memory.services.subjects import subject_get_or_create

    acme.default_schema_id, acme.default_schema_version = "acme-profile", 1
    acme.save(update_fields=["default_schema_id", "default_schema_version"])
    schema_migration_dry_run(migration=migration)
    acme.refresh_from_db()
    assert (acme.default_schema_id, acme.default_schema_version) == (
        "acme-profile",
        1,
    )  # a dry run moves nothing

    schema_migration_run(migration=migration, max_subjects=1)  # the first slice of a run

    acme.refresh_from_db()
    assert (acme.default_schema_id, acme.default_schema_version) == ("acme-profile", 2)
    newcomer, created = subject_get_or_create(tenant=acme, external_id="newcomer")
    assert created and (newcomer.schema_id, newcomer.schema_version) == ("acme-profile", 2)


def test_a_run_leaves_a_default_that_is_not_the_source_alone(acme, migration):
    assert (acme.default_schema_id, acme.default_schema_version) == ("personatree-default", 1)
    schema_migration_run(migration=migration)
    acme.refresh_from_db()
    assert (acme.default_schema_id, acme.default_schema_version) == ("personatree-default", 1)
