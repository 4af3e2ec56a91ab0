"""tree_apply_ops and friends on a real Postgres."""

import pytest

from memory import selectors
from memory.engine.ops import Op
from memory.models import Chunk, OpRecord, TreeVersion
from memory.services import ServiceError, VersionConflict
from memory.services.tree import Actor, leaf_delete, leaf_edit, tree_revert
from memory.signals import version_applied
from tests.factories import ChunkFactory, SubjectFactory, TenantFactory, model_apply

pytestmark = pytest.mark.django_db

MODEL = Actor.for_model(model_id="test-model", model_version="1", prompt_version="p1")
ROLE = "identity/occupation/current_role"
CITY = "identity/location/current_city"
HEALTH = "body/health/conditions"  # special tier
AGE = "body/basics/age"


@pytest.fixture(autouse=True)
def _paths_exist():
    schema = selectors.subject_schema(SubjectFactory.build())
    for path, tier in ((ROLE, None), (CITY, None), (HEALTH, "special"), (AGE, "personal")):
        leaf = schema.leaf(path)
        assert leaf is not None, path
        if tier:
            assert leaf.tier == tier


def apply_chunk(subject, ops, **kwargs):
    return model_apply(subject, ops, actor=MODEL, **kwargs)


def test_apply_writes_version_records_and_moves_head(subject):
    chunk = ChunkFactory(subject=subject)
    out = apply_chunk(subject, [Op.add(ROLE, "  nurse   at  a clinic "), Op.add(CITY, "Lyon")], chunk=chunk)
    assert out.created and out.version.number == 1 and out.head_version == 1
    subject.refresh_from_db()
    assert subject.head_version == 1 and subject.head_id == out.version.pk
    assert selectors.tree_current(subject).to_dict() == {ROLE: "nurse at a clinic", CITY: "Lyon"}
    records = OpRecord.objects.filter(subject=subject).order_by("position")
    assert [(r.op_type, r.status, r.version_id, r.chunk_id) for r in records] == [
        ("ADD", "applied", out.version.pk, chunk.pk),
        ("ADD", "applied", out.version.pk, chunk.pk),
    ]
    r = records[0]
    assert (r.actor_kind, r.model_id, r.model_version, r.prompt_version) == ("model", "test-model", "1", "p1")
    assert (r.source_start_seq, r.source_end_seq, r.base_version) == (chunk.start_seq, chunk.end_seq, 0)
    chunk.refresh_from_db()
    assert chunk.status == Chunk.Status.APPLIED and chunk.produced_version_id == out.version.pk
    assert out.version.created_by == TreeVersion.CreatedBy.CHUNK and out.version.chunk_id == chunk.pk


def test_update_records_old_value_and_parent(subject):
    first = apply_chunk(subject, [Op.add(ROLE, "nurse")])
    second = apply_chunk(subject, [Op.update(ROLE, "doctor")])
    assert second.version.parent_id == first.version.pk
    (record,) = second.applied
    assert (record.old_value, record.new_value) == ("nurse", "doctor")


def test_stale_base_raises_conflict_and_writes_nothing(subject):
    apply_chunk(subject, [Op.add(ROLE, "nurse")])
    before = OpRecord.objects.count()
    chunk = ChunkFactory(subject=subject)
    with pytest.raises(VersionConflict) as info:
        apply_chunk(subject, [Op.update(ROLE, "doctor")], chunk=chunk, base=0)
    assert info.value.current_version == 1
    assert OpRecord.objects.count() == before
    assert TreeVersion.objects.filter(subject=subject).count() == 1
    chunk.refresh_from_db()
    assert chunk.status == Chunk.Status.PENDING


def test_same_chunk_twice_produces_one_version(subject):
    chunk = ChunkFactory(subject=subject)
    first = apply_chunk(subject, [Op.add(ROLE, "nurse")], chunk=chunk, base=0)
    again = apply_chunk(subject, [Op.add(ROLE, "nurse")], chunk=chunk, base=0)
    assert first.created and not again.created
    assert again.version.pk == first.version.pk
    assert [r.pk for r in again.applied] == [r.pk for r in first.applied]
    assert TreeVersion.objects.filter(subject=subject).count() == 1
    assert OpRecord.objects.filter(subject=subject).count() == 1


def test_nothing_accepted_records_ops_but_makes_no_version(subject):
    chunk = ChunkFactory(subject=subject)
    out = apply_chunk(subject, [Op.no_op()], chunk=chunk)
    assert out.version is None and out.created and out.head_version == 0
    (record,) = out.applied
    assert (record.op_type, record.chunk_id, record.base_version, record.version_id) == (
        "NO_OP",
        chunk.pk,
        0,
        None,
    )
    chunk.refresh_from_db()
    assert chunk.status == Chunk.Status.APPLIED and chunk.produced_version_id is None
    assert not TreeVersion.objects.filter(subject=subject).exists()


def test_bad_ops_are_rejected_with_reasons_and_good_ones_kept(subject):
    parse_errors = [{"line_no": 3, "line": "FROB(x, 1)", "message": "unknown op type 'FROB'"}]
    out = apply_chunk(
        subject,
        [Op.add("identity/no_such_leaf", "x"), Op.add(CITY, "x" * 5000), Op.add(ROLE, "nurse")],
        parse_errors=parse_errors,
    )
    assert selectors.tree_current(subject).to_dict() == {ROLE: "nurse"}
    reasons = sorted(r.reason_code for r in out.rejected)
    assert reasons == ["OVER_BUDGET", "PARSE_ERROR", "UNKNOWN_PATH"]
    parse = next(r for r in out.rejected if r.reason_code == "PARSE_ERROR")
    assert parse.new_value == "FROB(x, 1)" and "line 3" in parse.detail
    assert OpRecord.objects.filter(subject=subject, status="rejected").count() == 3


def test_lenient_tenant_normalises_and_notes_it():
    subject = SubjectFactory(tenant=TenantFactory(gate_lenient=True))
    apply_chunk(subject, [Op.add(ROLE, "nurse")])
    out = apply_chunk(subject, [Op.add(ROLE, "doctor")])
    (record,) = out.applied
    assert record.op_type == "UPDATE" and "lenient" in record.detail
    assert selectors.tree_current(subject)[ROLE] == "doctor"


def test_strict_tenant_rejects_add_on_occupied(subject):
    apply_chunk(subject, [Op.add(ROLE, "nurse")])
    out = apply_chunk(subject, [Op.add(ROLE, "doctor")])
    assert [r.reason_code for r in out.rejected] == ["ADD_ON_OCCUPIED"]
    assert out.version is None


def test_special_tier_is_held_for_review(subject):
    out = apply_chunk(subject, [Op.add(HEALTH, "asthma"), Op.add(ROLE, "nurse")])
    assert [r.path for r in out.pending_review] == [HEALTH]
    assert out.pending_review[0].reason_code == "REVIEW_REQUIRED" and out.pending_review[0].version_id is None
    assert HEALTH not in selectors.tree_current(subject)


def test_special_tier_applies_when_policy_off():
    subject = SubjectFactory(tenant=TenantFactory(review_special_tier=False))
    out = apply_chunk(subject, [Op.add(HEALTH, "asthma")])
    assert not out.pending_review and selectors.tree_current(subject)[HEALTH] == "asthma"


def test_mass_delete_over_threshold_is_held(subject):
    schema = selectors.subject_schema(subject)
    paths = [leaf.path for leaf in schema.leaves if leaf.tier == "normal"][:4]
    apply_chunk(subject, [Op.add(p, "v") for p in paths])
    out = apply_chunk(subject, [Op.delete(p) for p in paths])  # 4 > threshold 3
    assert len(out.pending_review) == 4 and out.version is None
    assert len(selectors.tree_current(subject)) == 4
    small = apply_chunk(subject, [Op.delete(p) for p in paths[:3]])
    assert len(small.applied) == 3 and len(selectors.tree_current(subject)) == 1


def test_admin_edit_goes_through_gate_and_skips_review(subject, admin_user):
    actor = Actor.for_admin(admin_user)
    out = leaf_edit(subject=subject, path=HEALTH, value="asthma", actor=actor)
    assert out.version.created_by == "admin" and out.applied[0].admin_user_id == admin_user.pk
    out = leaf_edit(subject=subject, path=HEALTH, value="asthma, mild", actor=actor)
    assert out.applied[0].op_type == "UPDATE"
    bad = leaf_edit(subject=subject, path=ROLE, value="x" * 5000, actor=actor)
    assert bad.version is None and bad.rejected[0].reason_code == "OVER_BUDGET"
    out = leaf_delete(subject=subject, path=HEALTH, actor=actor)
    assert selectors.tree_current(subject).to_dict() == {}
    with pytest.raises(VersionConflict):
        leaf_edit(subject=subject, path=ROLE, value="x", actor=actor, base_version=1)


def test_revert_makes_a_new_version_and_keeps_history(subject, admin_user):
    apply_chunk(subject, [Op.add(ROLE, "nurse")])
    apply_chunk(subject, [Op.update(ROLE, "doctor"), Op.add(CITY, "Lyon")])
    out = tree_revert(subject=subject, to_version=1, actor=Actor.for_admin(admin_user))
    assert out.version.number == 3 and out.version.created_by == "revert"
    assert selectors.tree_current(subject).to_dict() == {ROLE: "nurse"}
    assert sorted((r.op_type, r.path) for r in out.applied) == [("DELETE", CITY), ("UPDATE", ROLE)]
    assert list(
        TreeVersion.objects.filter(subject=subject).values_list("number", flat=True).order_by("number")
    ) == [
        1,
        2,
        3,
    ]
    empty = tree_revert(subject=subject, to_version=0, actor=Actor.for_admin(admin_user))
    assert empty.version.snapshot == {}


def test_revert_to_foreign_version_is_refused(subject, admin_user):
    other = SubjectFactory()  # another tenant
    apply_chunk(other, [Op.add(ROLE, "spy")])
    foreign = TreeVersion.objects.get(subject=other)
    with pytest.raises(ServiceError) as info:
        tree_revert(subject=subject, to_version=foreign, actor=Actor.for_admin(admin_user))
    assert info.value.code == "foreign_version"
    with pytest.raises(ServiceError):
        tree_revert(subject=subject, to_version=foreign.number, actor=Actor.for_admin(admin_user))
    assert selectors.tree_current(subject).to_dict() == {}


@pytest.mark.django_db(transaction=True)
def test_failure_inside_transaction_leaves_no_partial_version(subject, monkeypatch):
    """All writes have run when the failure hits (scheduling the follow-up comes last): a real rollback."""
    from memory.services import tree as tree_module

    chunk = ChunkFactory(subject=subject)

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(tree_module, "schedule_follow_up", boom)
    with pytest.raises(RuntimeError):
        apply_chunk(subject, [Op.add(ROLE, "nurse")], chunk=chunk)
    monkeypatch.undo()
    fresh = type(subject).objects.get(pk=subject.pk)
    assert fresh.head_version == 0 and fresh.head_id is None
    assert not TreeVersion.objects.filter(subject=subject).exists()
    assert not OpRecord.objects.filter(subject=subject).exists()
    chunk.refresh_from_db()
    assert chunk.status == Chunk.Status.PENDING


def test_version_applied_is_sent_on_commit_only(subject, django_capture_on_commit_callbacks):
    seen = []

    def receiver(sender, **kwargs):
        seen.append(kwargs)

    version_applied.connect(receiver)
    try:
        chunk = ChunkFactory(subject=subject)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            apply_chunk(subject, [Op.add(ROLE, "nurse")], chunk=chunk)
        assert seen == []
        for callback in callbacks:
            callback()
        assert seen == [
            {"signal": version_applied, "subject_id": subject.pk, "version": 1, "chunk_id": chunk.pk}
        ]
    finally:
        version_applied.disconnect(receiver)


def test_tree_at_version_and_datetime(subject):
    first = apply_chunk(subject, [Op.add(ROLE, "nurse")])
    apply_chunk(subject, [Op.update(ROLE, "doctor")])
    assert selectors.tree_at(subject, 1) == (1, selectors.tree_at(subject, first.version.created_at)[1])
    assert selectors.tree_at(subject, 0)[1].to_dict() == {}
    assert selectors.tree_at(subject, first.version.created_at)[1].to_dict() == {ROLE: "nurse"}
    with pytest.raises(LookupError):
        selectors.tree_at(subject, 9)


def test_current_tree_read_is_one_query(subject, django_assert_num_queries):
    apply_chunk(subject, [Op.add(ROLE, "nurse")])
    with django_assert_num_queries(1):
        fresh = selectors.subject_get(tenant=subject.tenant, external_id=subject.external_id)
        tree = selectors.tree_current(fresh)
    assert tree[ROLE] == "nurse"
