"""The store refuses small talk written by a model (SMALL_TALK) and lets a moderator write anything."""

from __future__ import annotations

import pytest

from memory import selectors
from memory.engine.ops import Op
from memory.models import OpRecord
from memory.services.tree import Actor, tree_apply_ops
from tests.factories import model_apply

pytestmark = pytest.mark.django_db

MODEL = Actor.for_model(model_id="test-model", model_version="1", prompt_version="p1")
ADMIN = Actor("admin", name="moderator")
ROLE = "identity/occupation/current_role"
CITY = "identity/location/current_city"


def test_model_small_talk_is_rejected_with_its_own_reason(subject):
    out = model_apply(subject, [Op.add(ROLE, "ttyl, Bye!"), Op.add(CITY, "Lives in Lisbon")], actor=MODEL)
    assert selectors.tree_current(subject).to_dict() == {CITY: "Lives in Lisbon"}
    assert [(r.path, r.reason_code) for r in out.rejected] == [(ROLE, "SMALL_TALK")]
    record = OpRecord.objects.get(subject=subject, path=ROLE)
    assert record.status == OpRecord.Status.REJECTED and "greeting" in record.detail


def test_moderator_writes_are_not_checked_for_small_talk(subject):
    out = tree_apply_ops(
        subject=subject, base_version=subject.head_version, ops=[Op.add(ROLE, "It was great")], actor=ADMIN
    )
    assert not out.rejected
    assert selectors.tree_current(subject).to_dict() == {ROLE: "It was great"}
