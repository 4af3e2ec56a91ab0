import pytest

from memory import selectors
from memory.engine.ops import Op
from memory.models import OpRecord
from memory.services import ServiceError
from memory.services.governance import ops_review_approve, ops_review_decline
from memory.services.tree import Actor, Source, leaf_edit, tree_apply_ops
from tests.factories import ChunkFactory

pytestmark = pytest.mark.django_db

MODEL = Actor.for_model(model_id="m", prompt_version="p")
HEALTH = "body/health/conditions"
ALLERGY = "body/health/allergies"
ROLE = "identity/occupation/current_role"


def held(subject, ops):
    chunk = ChunkFactory(subject=subject)
    out = tree_apply_ops(
        subject=subject, base_version=subject.head_version, ops=ops, actor=MODEL, source=Source(chunk.pk)
    )
    return out


def test_approve_applies_on_top_of_current_head(subject, admin_user):
    out = held(subject, [Op.add(HEALTH, "asthma"), Op.add(ROLE, "nurse")])
    pending = out.pending_review
    leaf_edit(
        subject=subject, path=ROLE, value="doctor", actor=Actor.for_admin(admin_user)
    )  # head moves to v2
    (result,) = ops_review_approve(op_ids=[r.pk for r in pending], user=admin_user, note="checked")
    assert result.version.number == 3 and result.version.created_by == "review"
    subject.refresh_from_db()
    assert selectors.tree_current(subject).to_dict() == {HEALTH: "asthma", ROLE: "doctor"}
    record = OpRecord.objects.get(pk=pending[0].pk)
    assert record.status == "approved" and record.version_id == result.version.pk
    assert record.decided_by == admin_user and record.decision_note == "checked" and record.decided_at


def test_approve_regates_against_newer_state(subject, admin_user):
    out = held(subject, [Op.add(HEALTH, "asthma")])
    leaf_edit(subject=subject, path=HEALTH, value="diabetes", actor=Actor.for_admin(admin_user))
    (result,) = ops_review_approve(op_ids=[out.pending_review[0].pk], user=admin_user)
    assert result.version is None and len(result.rejected) == 1
    record = OpRecord.objects.get(pk=out.pending_review[0].pk)
    assert record.status == "rejected" and record.reason_code == "ADD_ON_OCCUPIED"
    subject.refresh_from_db()
    assert selectors.tree_current(subject)[HEALTH] == "diabetes"


def test_decline_requires_reason_and_applies_nothing(subject, admin_user):
    out = held(subject, [Op.add(HEALTH, "asthma"), Op.add(ALLERGY, "cats")])
    ids = [r.pk for r in out.pending_review]
    with pytest.raises(ServiceError):
        ops_review_decline(op_ids=ids, user=admin_user, note="  ")
    assert ops_review_decline(op_ids=ids, user=admin_user, note="hearsay") == 2
    assert set(OpRecord.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"declined"}
    subject.refresh_from_db()
    assert selectors.tree_current(subject).to_dict() == {}
    # Already decided ops are not approved later.
    assert ops_review_approve(op_ids=ids, user=admin_user) == []


def test_approve_mass_delete(subject, admin_user):
    schema = selectors.subject_schema(subject)
    paths = [leaf.path for leaf in schema.leaves if leaf.tier == "normal"][:5]
    held(subject, [Op.add(p, "v") for p in paths])
    subject.refresh_from_db()
    out = held(subject, [Op.delete(p) for p in paths])
    assert len(out.pending_review) == 5
    (result,) = ops_review_approve(op_ids=[r.pk for r in out.pending_review], user=admin_user)
    assert len(result.approved) == 5
    subject.refresh_from_db()
    assert selectors.tree_current(subject).to_dict() == {}
