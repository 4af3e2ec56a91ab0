"""A value written while its leaf was special stays special (issue 24 items 5 and 7).

- A schema migration that moves a value out of the special tier, or makes a special leaf normal,
  holds it for review, like the reverse, and does so even when the tenant does not review model
  writes to special leaves: declassifying is a human's decision.
- A ``read`` key without ``read_special`` never sees such a value in an older version: not through
  ``as_of`` (tree, leaf, query), not in the export's versions or op log.
- The export hands no key raw model output: a parse error carries a masked reason.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory.engine.ops import Op, OpType
from memory.models import OpRecord, Subject
from memory.services.schema_migrations import LOWERED_NOTE, schema_migration_create, schema_migration_run
from memory.services.schemas import schema_upload
from memory.services.tree import Actor, tree_apply_ops
from tests.factories import SubjectFactory, TenantFactory

pytestmark = pytest.mark.django_db

CONDITION, NOTES = "Has type 1 diabetes since 2019", "Sees a therapist on Mondays"


def _schema(version: int, condition_tier: str, notes_path: str, notes_tier: str) -> dict:
    return {
        "id": "clinic",
        "version": version,
        "leaves": [
            {"path": "about/city", "description": "City", "budget": 80, "tier": "normal"},
            {"path": "health/condition", "description": "Condition", "budget": 80, "tier": condition_tier},
            {"path": notes_path, "description": "Notes", "budget": 80, "tier": notes_tier},
        ],
    }


MAPPING = {
    "id": "clinic-v1-to-v2",
    "source": {"id": "clinic", "version": 1},
    "target": {"id": "clinic", "version": 2},
    "steps": [{"op": "rename", "from": "health/notes", "to": "about/notes"}],
}


@pytest.fixture
def migrated(make_api_client):
    """A tenant that does not review special-tier model writes; a subject written under v1
    (condition and notes special), then migrated to v2 (both normal)."""
    tenant = TenantFactory(review_special_tier=False)
    schema_upload(tenant=tenant, document=_schema(1, "special", "health/notes", "special"))
    schema_upload(tenant=tenant, document=_schema(2, "normal", "about/notes", "normal"))
    subject = SubjectFactory(tenant=tenant, external_id="p1", schema_id="clinic", schema_version=1)
    ops = [
        Op(OpType.ADD, "about/city", "Porto"),
        Op(OpType.ADD, "health/condition", CONDITION),
        Op(OpType.ADD, "health/notes", NOTES),
    ]
    out = tree_apply_ops(
        subject=subject, base_version=0, ops=ops, actor=Actor.system("seed"), parse_errors=[_parse_error()]
    )
    assert len(out.applied) == 3
    row, _ = schema_migration_create(tenant=tenant, document=MAPPING)
    schema_migration_run(migration=row)
    reader = make_api_client(tenant, scopes=["read"])[0]
    special = make_api_client(tenant, scopes=["read", "read_special"])[0]
    return Subject.objects.select_related("head").get(pk=subject.pk), reader, special


RAW_MODEL_LINE = '{"op": "ADD", "path": "health/hiv", "value": "HIV positive, told nobody"}'


def _parse_error() -> dict:
    return {"line": RAW_MODEL_LINE, "line_no": 3, "message": f"unknown path in {RAW_MODEL_LINE}"}


def test_lowering_the_tier_is_held_for_review_even_without_special_review(migrated):
    subject, _, _ = migrated
    assert (subject.schema_id, subject.schema_version) == ("clinic", 2)
    assert subject.head.snapshot == {"about/city": "Porto"}  # neither value left the special tier
    held = OpRecord.objects.filter(subject=subject, status=OpRecord.Status.PENDING_REVIEW)
    assert sorted((r.path, r.new_value, r.detail) for r in held) == [
        ("about/notes", NOTES, LOWERED_NOTE),
        ("health/condition", CONDITION, LOWERED_NOTE),
    ]


def test_read_keys_never_see_a_value_that_was_special_when_written(migrated):
    subject, reader, special = migrated
    tree_url = reverse("subject-tree", kwargs={"external_id": "p1"})
    old = reader.get(tree_url, {"as_of": 1})
    assert old.status_code == 200 and old.json()["tree"] == {"about/city": "Porto"}, old.json()
    assert special.get(tree_url, {"as_of": 1}).json()["tree"]["health/condition"] == CONDITION
    leaf_url = reverse("subject-leaf", kwargs={"external_id": "p1", "leaf_path": "health/condition"})
    assert reader.get(leaf_url, {"as_of": 1}).status_code == 403
    assert reader.get(leaf_url).status_code == 200  # the head: the leaf is normal now (and empty)
    query = reader.post(
        reverse("subject-context", kwargs={"external_id": "p1"}),
        {"query": "what condition does the person have?", "as_of": 1, "mode": "fast"},
        format="json",
    )
    assert query.status_code == 200 and CONDITION not in query.content.decode(), query.content
    export = reader.get(reverse("subject-export", kwargs={"external_id": "p1"}))
    text = export.content.decode()
    assert export.status_code == 200 and CONDITION not in text and NOTES not in text
    assert "Porto" in text
    full = special.get(reverse("subject-export", kwargs={"external_id": "p1"})).content.decode()
    assert CONDITION in full and NOTES in full


def test_export_masks_parse_errors_for_every_key(migrated):
    subject, reader, special = migrated
    for client in (reader, special):
        body = client.get(reverse("subject-export", kwargs={"external_id": "p1"})).json()
        errors = [op for op in body["ops"] if op["reason"] == "PARSE_ERROR"]
        assert len(errors) == 1
        assert errors[0]["new_value"] is None and errors[0]["old_value"] is None
        assert errors[0]["detail"] == "the model's output could not be read (line 3)"
        assert "HIV" not in str(body)
    stored = OpRecord.objects.get(subject=subject, reason_code="PARSE_ERROR")
    assert stored.new_value == RAW_MODEL_LINE  # the moderators' copy is kept


def test_the_admin_masks_held_declassifications_for_staff_without_the_special_permission(migrated):
    from memory.admin.access import MASK, masked_record

    subject, _, _ = migrated
    held = OpRecord.objects.filter(subject=subject, status=OpRecord.Status.PENDING_REVIEW)
    shown = [masked_record(r) for r in held]
    assert {r.new_value for r in shown} == {MASK}  # on normal leaves now, but special when written
