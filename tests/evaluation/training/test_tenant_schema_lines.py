"""Training lines of a tenant's own schema (issue 18): the export and the teacher runs carry the
uploaded document (``schema_document``), so scoring and the GRPO reward resolve the tenant's leaves
without a database; a line without the key names a shipped schema, as before; a document that
names another schema than its line is refused, naming the line."""

from __future__ import annotations

import io
import json

import pytest

from evaluation.training.data import line_schema, schema_of, to_row
from evaluation.training.distill import RecordingEngine, Subject, distill, main, schema_and_document
from evaluation.training.export import Exporter, ExportOptions
from evaluation.training.reward import ScorerReward
from evaluation.training.score import score_lines
from memory.engine.ops import Op
from memory.engine.schema import SchemaError, default_schema, load_schema
from memory.services.schemas import schema_upload
from memory.services.subjects import subject_get_or_create
from serving.listener import MemListener
from tests.evaluation.training.conftest import apply_chunk
from tests.evaluation.training.test_distill import run
from tests.schema_documents import TUTOR_LEAVES, schema_document
from tests.serving.test_pointing import ScriptedEngine

GOAL = "learning/goals/current_goal"
DOC = schema_document("tutor-profile", *TUTOR_LEAVES)
COLUMNS = ("gold", "negatives", "tree", "turns", "pointing", "schema_id", "schema_version", "chunk_id")


def full_enum(*texts: str) -> MemListener:
    return MemListener(RecordingEngine(ScriptedEngine(*texts)))


def reward_of(line: dict, completions: list[str], *, document_column: bool = True) -> list[float]:
    row = to_row(line)
    keys = COLUMNS + (("schema_document",) if document_column else ())
    columns = {k: [row[k]] * len(completions) for k in keys}
    return ScorerReward()([None] * len(completions), completions, **columns)


@pytest.fixture
def tenant_line(tenant) -> dict:
    schema_upload(tenant=tenant, document=DOC)
    subject, _ = subject_get_or_create(
        tenant=tenant, external_id="learner", schema_id="tutor-profile", schema_version=1
    )
    turns = [("user", "My goal is to pass the B2 German exam."), ("assistant", "Good luck!")]
    apply_chunk(subject, turns, [Op.add(GOAL, "pass the B2 German exam")])
    (line,) = Exporter(ExportOptions()).examples()
    # what the JSONL file holds and the consumers read back
    return json.loads(json.dumps(line))


@pytest.mark.django_db
def test_a_tenant_line_is_exported_scored_and_rewarded_on_the_tenants_leaves(tenant_line):
    assert tenant_line["schema_document"] == DOC
    assert line_schema(tenant_line).paths == (GOAL, "learning/preferences/study_time")
    # the student writes the target: its op on the tenant's leaf passes the listener's gate
    row = score_lines(full_enum(tenant_line["target"]), [tenant_line])
    assert row["lines"] == 1 and row["score_mean"] == 1.0 and row["ops"] == 1
    wrong_leaf = json.dumps(
        {"ops": [{"op": "ADD", "path": "identity/occupation/current_role", "value": "x"}]}
    )
    rewards = reward_of(tenant_line, [tenant_line["target"], wrong_leaf])
    assert rewards[0] == 1.0 and rewards[1] < 0
    assert to_row(tenant_line)["schema_document"] == json.dumps(DOC, sort_keys=True, separators=(",", ":"))


@pytest.mark.django_db
def test_a_tenant_line_without_its_document_is_refused_naming_the_line(tenant_line):
    with pytest.raises(SchemaError, match="tutor-profile.*carries schema_document"):
        reward_of(tenant_line, [tenant_line["target"]], document_column=False)


def test_an_old_line_without_the_key_names_a_shipped_schema():
    line = run(ScriptedEngine(json.dumps({"ops": [{"op": "ADD", "sentence": 1, "leaf": 1, "value": "Porto"}]})),
               subjects=[Subject("s", [{"role": "user", "content": "I live in Porto."},
                                       {"role": "assistant", "content": "Nice."}], "c")])[0][0]  # fmt: skip
    assert line["schema_document"] is None
    del line["schema_document"]
    assert line_schema(line) is default_schema()
    assert to_row(line)["schema_document"] is None
    assert reward_of(line, [line["target"]], document_column=False) == [1.0]
    assert reward_of(line, [line["target"]]) == [1.0]


def test_a_document_naming_another_schema_is_refused_naming_the_line():
    line = {"chunk_key": "k-17", "schema_id": "coach-profile", "schema_version": 1, "schema_document": DOC}
    with pytest.raises(SchemaError, match=r"line 'k-17'.*tutor-profile v1.*names coach-profile v1"):
        line_schema(line)
    with pytest.raises(SchemaError, match="tutor-profile v1 but the line names tutor-profile v2"):
        schema_of("tutor-profile", 2, json.dumps(DOC))
    with pytest.raises(SchemaError, match="invalid schema_document"):
        schema_of("tutor-profile", 1, {**DOC, "leaves": []})


def test_parsed_documents_are_cached_by_their_canonical_json():
    first = schema_of("tutor-profile", 1, DOC)
    assert schema_of("tutor-profile", 1, json.dumps(dict(reversed(DOC.items())), indent=2)) is first
    other = {**DOC, "leaves": DOC["leaves"][:1]}
    assert (
        schema_of("tutor-profile", 1, other) is not first and len(schema_of("tutor-profile", 1, other)) == 1
    )


def test_a_teacher_run_on_a_tenant_schema_writes_its_document():
    reply = json.dumps({"ops": [{"op": "ADD", "path": GOAL, "value": "pass the B2 German exam"}]})
    turns = [{"role": "user", "content": "My goal is to pass the B2 German exam."},
             {"role": "assistant", "content": "Good luck!"}]  # fmt: skip
    out = io.StringIO()
    stats = distill([Subject("s", turns, "c")], full_enum(reply), out, schema_document=DOC)
    (line,) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert stats.lines == 1 and line["schema_document"] == DOC and line["schema_id"] == "tutor-profile"
    assert [g["path"] for g in line["gold"]] == [GOAL]  # the teacher's job carried the tenant's leaves
    assert score_lines(full_enum(line["target"]), [line])["score_mean"] == 1.0
    assert reward_of(line, [line["target"]]) == [1.0]


def test_a_teacher_runs_schema_and_its_document():
    assert schema_and_document() == (default_schema(), None)
    schema, doc = schema_and_document(load_schema(DOC))
    assert doc is not None and load_schema(doc) == schema  # a non-shipped Schema object: its flat form
    with pytest.raises(ValueError, match="does not match the given schema"):
        schema_and_document(default_schema(), DOC)


def test_the_teacher_cli_refuses_an_invalid_schema_document_before_running(tmp_path, capsys):
    bad = tmp_path / "schema.json"
    bad.write_text(json.dumps({**DOC, "leaves": [{"path": "Learning/x", "description": "d", "budget": 9}]}))
    out = tmp_path / "out.jsonl"
    assert main(["--data", str(tmp_path / "none.json"), "--schema", str(bad), "--out", str(out)]) == 2
    assert "Learning" in capsys.readouterr().err and not out.exists()
