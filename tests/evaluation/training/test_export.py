"""export_training_data: examples rebuilt from the audit log written by the real services."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from evaluation.training.export import Exporter, ExportOptions, chunk_turns
from evaluation.training.reward import ops_of
from evaluation.training.split import split_of
from memory.engine.ops import Op
from memory.engine.schema import get_schema
from memory.engine.scorer import score
from memory.models import TreeVersion
from memory.services.subjects import subject_erase
from memory.services.tree import Actor, leaf_edit
from serving.prompt import build_prompt
from tests.evaluation.training.conftest import (
    ALLERGIES,
    CITY,
    CONDITIONS,
    EXERCISE,
    FOODS,
    MUSIC,
    PETS,
    ROLE,
    apply_chunk,
    build_history,
)
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def export(tmp_path, name="out.jsonl", **opts):
    path = tmp_path / name
    call_command("export_training_data", out=str(path), no_progress=True, **opts)
    return path, [json.loads(line) for line in path.read_text().splitlines()]


def by_chunk(lines, history):
    ids = {c.pk: name for name, c in history.chunks.items()}
    return {ids[line["chunk_id"]]: line for line in lines}


def op_line(op: str, path: str | None, value: str | None, origin: str, **more) -> dict:
    """An op as an exported line lists it among its gold ops or negatives."""
    return {"op": op, "path": path, "value": value, **more, "origin": origin}


def test_prompt_equals_build_prompt_at_the_base_version(tmp_path, history):
    _, lines = export(tmp_path)
    ex = by_chunk(lines, history)
    schema = get_schema("personatree-default", 1)
    for name in ("c1", "c2", "c3", "c6"):
        line = ex[name]
        base = line["base_version"]
        snapshot = {} if base == 0 else TreeVersion.objects.get(subject=history.subject, number=base).snapshot
        tree = {p: v for p, v in snapshot.items() if schema.leaf(p).tier != "special"}
        expected = build_prompt(schema, tree, line["turns"])
        assert line["prompt"]["static"] + line["prompt"]["dynamic"] == expected.text
        assert line["tree"] == tree and line["prompt_version"] == "memlistener-prompt/2"
    # The system message comes first, as the dispatcher puts it; the span's turns follow.
    assert [t["role"] for t in ex["c1"]["turns"]] == ["system", "user", "assistant", "user"]
    assert ex["c2"]["turns"][0] == {"role": "system", "content": "You are a friendly assistant."}
    assert ex["c2"]["base_version"] == 1 and ex["c2"]["tree"][CITY] == "moved to Porto last year"


def test_gold_rejections_and_sources(tmp_path, history):
    _, lines = export(tmp_path)
    c1 = by_chunk(lines, history)["c1"]
    assert c1["gold"] == [
        op_line("ADD", CITY, "moved to Porto last year", "applied", source="I moved to Porto last year."),
        op_line("ADD", ROLE, "data engineer at a bank", "applied"),
    ]
    assert [r["reason"] for r in c1["rejected"]] == ["UNKNOWN_PATH"] and c1["parse_errors"] == 1
    assert c1["negatives"] == []
    assert json.loads(c1["target"]) == {
        "ops": [{"op": g["op"], "path": g["path"], "value": g["value"]} for g in c1["gold"]]
    }


def test_moderator_edit_becomes_gold_and_delete_a_negative(tmp_path, history):
    _, lines = export(tmp_path)
    ex = by_chunk(lines, history)
    assert ex["c2"]["gold"] == [op_line("ADD", PETS, "a cat called Miso, 4 years old", "edited")]
    assert ex["c3"]["gold"] == [op_line("ADD", EXERCISE, "swims twice a week", "applied")]
    assert ex["c3"]["negatives"] == [op_line("ADD", FOODS, "ramen", "moderator_deleted")]


def test_no_op_chunk_is_gold_no_op(tmp_path, history):
    _, lines = export(tmp_path)
    c6 = by_chunk(lines, history)["c6"]
    assert c6["gold"] == [op_line("NO_OP", None, None, "applied")]


def test_special_tier_excluded_by_default(tmp_path, history):
    _, lines = export(tmp_path)
    ex = by_chunk(lines, history)
    assert "c4" not in ex and "c5" not in ex  # their rows name special-tier leaves
    assert "c7" not in ex  # pending review
    assert ex["c6"]["special_removed"] == 1 and ALLERGIES not in ex["c6"]["tree"]
    # The prompt's static part lists every leaf path; no special value or its dialogue is anywhere.
    assert all("peanuts" not in json.dumps(line) and "asthma" not in json.dumps(line) for line in lines)


def test_include_special_keeps_declined_and_approved(tmp_path, history):
    _, lines = export(tmp_path, include_special=True)
    ex = by_chunk(lines, history)
    assert ex["c4"]["gold"] == [op_line("ADD", MUSIC, "listens to jazz every evening", "applied")]
    assert ex["c4"]["negatives"] == [op_line("ADD", CONDITIONS, "asthma, uses an inhaler", "declined")]
    assert ex["c5"]["gold"] == [op_line("ADD", ALLERGIES, "allergic to peanuts", "approved")]
    assert ex["c6"]["special_removed"] == 0 and ex["c6"]["tree"][ALLERGIES] == "allergic to peanuts"
    assert "c7" not in ex  # still pending


def test_pointing_prompt_not_rebuilt_without_the_flag(tmp_path, history):
    _, lines = export(tmp_path)
    c8 = by_chunk(lines, history)["c8"]
    assert c8["prompt"] is None and "--rebuild-pointing" in c8["prompt_note"] and c8["target"] is None
    assert (
        c8["prompt_version"] == "memlistener-pointing/4"
        and c8["gold"][0]["path"] == "behaviour/hobbies/outdoor"
    )


def test_injected_pointing_builder_is_used(history):
    seen = []

    def builder(schema, tree, turns):
        seen.append(turns)
        return None, "no model call: test"

    lines = list(Exporter(ExportOptions(), pointing_prompt=builder).examples())
    c8 = next(line for line in lines if line["chunk_id"] == history.chunks["c8"].pk)
    assert c8["prompt"] is None and c8["prompt_note"] == "no model call: test" and len(seen) == 1


def test_split_is_deterministic_by_subject(tmp_path, tenant, admin_user):
    for i in range(6):
        build_history(tenant, admin_user, external_id=f"user-{i}")
    _, a = export(tmp_path, "a.jsonl", split_seed=3, val_share=0.5)
    _, b = export(tmp_path, "b.jsonl", split_seed=3, val_share=0.5)
    assert a == b
    for line in a:
        assert line["split"] == split_of(line["subject_id"], seed=3, val_share=0.5)
    per_subject = {}
    for line in a:
        per_subject.setdefault(line["subject_id"], set()).add(line["split"])
    assert all(len(s) == 1 for s in per_subject.values())
    assert {"train", "val"} == set().union(*per_subject.values())
    assert {line["split"] for line in export(tmp_path, "c.jsonl", val_share=0.0)[1]} == {"train"}


def test_split_of():
    assert split_of(7, seed=0, val_share=1.0) == "val" and split_of(7, seed=0, val_share=0.0) == "train"
    shares = [split_of(i, seed=1, val_share=0.2) for i in range(2000)]
    assert 0.15 < shares.count("val") / 2000 < 0.25
    with pytest.raises(ValueError):
        split_of(1, val_share=1.5)


def test_erased_subject_never_appears(tmp_path, tenant, admin_user, history):
    other = build_history(tenant, admin_user, external_id="bob")
    subject_erase(subject=other.subject)
    _, lines = export(tmp_path)
    assert lines and {line["subject_id"] for line in lines} == {history.subject.pk}


def test_tenant_filter(tmp_path, admin_user, history):
    build_history(TenantFactory(name="elsewhere"), admin_user, external_id="carol")
    _, lines = export(tmp_path, tenant=history.subject.tenant.name)
    assert {line["tenant"] for line in lines} == {history.subject.tenant.name}


def test_resume_skips_existing_lines(tmp_path, history):
    path, full = export(tmp_path)
    kept = path.read_text().splitlines()[:-2]
    path.write_text("\n".join(kept) + "\n" + '{"chunk_id": 1, "torn')  # an interrupted run
    call_command("export_training_data", out=str(path), resume=True, no_progress=True)
    resumed = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(line["chunk_id"] for line in resumed) == sorted(line["chunk_id"] for line in full)
    assert resumed[: len(kept)] == full[: len(kept)]
    call_command("export_training_data", out=str(path), resume=True, no_progress=True)
    assert [json.loads(line) for line in path.read_text().splitlines()] == resumed


def test_resume_drops_lines_of_subjects_erased_since(tmp_path, tenant, admin_user, history):
    other = build_history(tenant, admin_user, external_id="dave")
    path, full = export(tmp_path)
    assert other.subject.pk in {line["subject_id"] for line in full}
    subject_erase(subject=other.subject)
    call_command("export_training_data", out=str(path), resume=True, no_progress=True)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {line["subject_id"] for line in lines} == {history.subject.pk}


def test_resume_refuses_other_split_options(tmp_path, history):
    path, _ = export(tmp_path, val_share=0.0)
    with pytest.raises(CommandError, match="split"):
        call_command("export_training_data", out=str(path), resume=True, val_share=1.0, no_progress=True)


def test_existing_file_needs_resume_or_overwrite(tmp_path, history):
    path, first = export(tmp_path)
    with pytest.raises(CommandError, match="exists"):
        call_command("export_training_data", out=str(path), no_progress=True)
    _, again = export(tmp_path, overwrite=True)
    assert again == first


def test_chunk_turns_rule():
    msgs = [
        (1, "system", "s1"),
        (2, "user", "u"),
        (3, "assistant", "a"),
        (4, "system", "s2"),
        (5, "user", "v"),
    ]
    assert chunk_turns(msgs, 2, 3) == [
        {"role": "system", "content": "s1"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
    ]
    assert chunk_turns(msgs, 5, 5)[0] == {"role": "system", "content": "s2"}


def test_model_delete_undone_by_a_moderator_is_a_negative(tmp_path, history, admin_user):
    chunk = apply_chunk(
        history.subject,
        [("user", "Forget where I live. I play chess on Fridays."), ("assistant", "Done.")],
        [Op.delete(CITY), Op.add("behaviour/hobbies/games", "plays chess on Fridays")],
    )
    history.subject.refresh_from_db()
    leaf_edit(
        subject=history.subject,
        path=CITY,
        value="moved to Porto last year",
        actor=Actor.for_admin(admin_user),
    )
    _, lines = export(tmp_path)
    line = next(x for x in lines if x["chunk_id"] == chunk.pk)
    assert line["negatives"] == [op_line("DELETE", CITY, None, "moderator_restored")]
    assert [g["path"] for g in line["gold"]] == ["behaviour/hobbies/games"]


def test_target_scores_one_against_its_gold(tmp_path, history):
    """The scorer reads an exported line: its target, parsed, is a perfect prediction."""
    _, lines = export(tmp_path, include_special=True)
    schema = get_schema("personatree-default", 1)
    scored = [
        score(line["target"], ops_of(line["gold"]), line["tree"], line["turns"], schema=schema)
        for line in lines
        if line["target"] is not None
    ]
    assert scored and all(r.total == 1.0 for r in scored)
    c4 = by_chunk(lines, history)["c4"]
    declined = ops_of(c4["negatives"])
    assert (
        score(
            declined, ops_of(c4["gold"]), c4["tree"], c4["turns"], schema=schema, declined_ops=declined
        ).total
        < 0
    )
