"""Training export of a subject pinned to its tenant's own schema (issue 18 item 1): the prompt lists
that schema's leaves, as the listener's did, instead of failing on an id the engine does not ship."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from memory.engine.ops import Op
from memory.engine.schema import load_schema
from memory.services.schemas import schema_upload
from memory.services.subjects import subject_get_or_create
from serving.prompt import build_prompt
from tests.evaluation.training.conftest import apply_chunk
from tests.schema_documents import TUTOR_LEAVES, schema_document

pytestmark = pytest.mark.django_db

DOC = schema_document("tutor-profile", *TUTOR_LEAVES)


def test_export_uses_the_subjects_tenant_schema(tenant, tmp_path):
    schema_upload(tenant=tenant, document=DOC)
    subject, _ = subject_get_or_create(
        tenant=tenant, external_id="learner", schema_id="tutor-profile", schema_version=1
    )
    turns = [("user", "My goal is to pass the B2 German exam."), ("assistant", "Good luck!")]
    apply_chunk(subject, turns, [Op.add("learning/goals/current_goal", "pass the B2 German exam")])
    out = tmp_path / "out.jsonl"
    call_command("export_training_data", out=str(out), no_progress=True)
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert (line["schema_id"], line["schema_version"]) == ("tutor-profile", 1)
    expected = build_prompt(load_schema(DOC), {}, line["turns"])
    assert line["prompt"]["static"] + line["prompt"]["dynamic"] == expected.text
    assert "learning/goals/current_goal" in line["prompt"]["static"]
    assert "identity/occupation" not in line["prompt"]["static"]
