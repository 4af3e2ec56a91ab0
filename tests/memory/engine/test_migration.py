"""Declared schema migrations (memory.engine.migration): steps, validation, report, ops, properties."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.engine import Op, OpType, default_schema, gate, load_schema
from memory.engine.migration import MigrationError, load_migration, plan_migration, truncate
from memory.engine.tree import Tree, apply

FIXTURES = Path(__file__).with_name("fixtures")
REPO_ROOT = Path(__file__).resolve().parents[3]
V2 = load_schema(FIXTURES / "personatree-default.v2.json")
MAPPING = json.loads((FIXTURES / "personatree-default.v1-to-v2.json").read_text())
TREE = json.loads((FIXTURES / "tree.v1.json").read_text())
V1 = default_schema()


def _mapping(**changes):
    data = copy.deepcopy(MAPPING)
    data.update(changes)
    return data


def _with_steps(*extra):
    return _mapping(steps=copy.deepcopy(MAPPING["steps"]) + list(extra))


@pytest.fixture(scope="module")
def migration():
    return load_migration(MAPPING, V1, V2)


def test_each_step_kind(migration):
    after = plan_migration(TREE, migration).after
    assert after["identity/name/called"] == "Sam"  # rename
    assert after["behaviour/habits/daily_rhythm"] == TREE["body/energy/daily_rhythm"]  # move
    assert after["behaviour/media/listening_and_news"] == (
        "jazz and old soul records; reads the Guardian every morning"
    )  # merge, declared order
    assert after["behaviour/habits/routine_weekdays"] == "weekdays: gym at 7, office by 9"  # split
    assert after["behaviour/habits/routine_weekends"] == "weekends: long runs and a market visit"
    assert "body/appearance/height" not in after  # drop
    assert after["identity/location/home"] == "Leeds"  # unchanged leaf kept
    assert "mind/self/motivation" not in after  # new leaf starts empty
    assert set(after) <= set(V2.paths)


def test_report_lists_drops_by_length_truncations_and_review(migration):
    report = plan_migration(TREE, migration).report
    assert report["dropped"] == [{"path": "body/appearance/height", "length": 6}]
    assert "185" not in json.dumps(report)  # dropped values never appear
    [cut] = report["truncated"]
    assert cut["path"] == "personality/style/assistant_preferences"
    assert cut["before"] == len(TREE["personality/style/assistant_preferences"]) and cut["after"] <= 60
    assert report["review"] == [{"path": "mind/emotion/fears", "from_tiers": ["personal"], "tier": "special"}]
    assert report["mapping"] == "personatree-default-v1-to-v2"


def test_truncate_at_word_boundary():
    assert truncate("short", 10) == "short"
    assert truncate("alpha beta gamma", 12) == "alpha beta"
    assert truncate("alpha beta gamma", 10) == "alpha beta"
    assert truncate("alpha, beta", 7) == "alpha"
    assert truncate("supercalifragilistic", 5) == "super"  # one long word: hard cut


def test_merge_skips_empty_sources_and_truncates(migration):
    plan = plan_migration({"behaviour/media/news": "radio 4"}, migration)
    assert plan.after == Tree({"behaviour/media/listening_and_news": "radio 4"})
    long = {"behaviour/media/music": "x " * 70, "behaviour/media/news": "y " * 70}
    plan = plan_migration(long, migration)
    assert len(plan.after["behaviour/media/listening_and_news"]) <= 160
    assert plan.report["truncated"][0]["path"] == "behaviour/media/listening_and_news"


def test_split_rules():
    data = _with_steps()
    data["steps"][3] = {
        "op": "split",
        "from": "behaviour/habits/daily_routine",
        "to": ["behaviour/habits/routine_weekdays", "behaviour/habits/routine_weekends"],
        "rule": "copy",
    }
    plan = plan_migration({"behaviour/habits/daily_routine": "gym; work"}, load_migration(data, V1, V2))
    assert set(plan.after.values()) == {"gym; work"} and len(plan.after) == 2
    m = load_migration(MAPPING, V1, V2)
    three = plan_migration({"behaviour/habits/daily_routine": "a; b; c"}, m).after
    assert three["behaviour/habits/routine_weekends"] == "b; c"  # surplus joined onto the last target
    one = plan_migration({"behaviour/habits/daily_routine": "only one"}, m).after
    assert dict(one) == {"behaviour/habits/routine_weekdays": "only one"}


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"op": "rename", "from": "body/nope", "to": "mind/self/motivation"}, "steps[5] (rename"),
        ({"op": "rename", "from": "body/basics", "to": "mind/self/motivation"}, "not a leaf of personatree"),
        ({"op": "rename", "from": "body/basics/age", "to": "body/appearance/height"}, "not a leaf of"),
        ({"op": "move", "from": "body/basics/age", "to": "identity/name/called"}, "overlaps steps[0]"),
        ({"op": "move", "from": "body/basics/age", "to": "body/basics/gender"}, "overlaps the unchanged"),
        ({"op": "drop", "path": "behaviour/media/music"}, "already mapped by steps[2]"),
        ({"op": "merge", "from": ["body/basics/age"], "to": "mind/self/motivation"}, "at least two"),
        ({"op": "split", "from": "body/basics/age", "to": ["a/b", "c/d"], "rule": "half"}, "'rule'"),
        ({"op": "explode", "path": "body/basics/age"}, "steps[5]"),
        ({"op": "drop", "path": "body/basics/age", "extra": 1}, "unknown fields"),
    ],
)
def test_invalid_steps_name_the_step(step, message):
    with pytest.raises(MigrationError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_migration(_with_steps(step), V1, V2)


def test_unmapped_leaf_is_refused():
    data = _mapping(steps=[s for s in MAPPING["steps"] if s["op"] != "drop"])
    with pytest.raises(MigrationError, match="body/appearance/height: leaf .* no step maps or drops it"):
        load_migration(data, V1, V2)


def test_mapping_level_errors():
    with pytest.raises(MigrationError, match="id must be"):
        load_migration(_mapping(id=""), V1, V2)
    with pytest.raises(MigrationError, match="higher version"):
        load_migration(_mapping(target={"id": "personatree-default", "version": 1}, steps=[]), V1, V1)
    with pytest.raises(MigrationError, match="given"):
        load_migration(MAPPING, V1, V1)
    with pytest.raises(MigrationError, match="unknown schema"):
        load_migration(MAPPING)  # v2 is a test fixture, not shipped


def test_tree_not_under_source_schema_is_refused(migration):
    with pytest.raises(MigrationError, match="identity/name/called"):
        plan_migration({"identity/name/called": "Sam"}, migration)
    with pytest.raises(MigrationError, match="pinned to"):
        plan_migration(TREE, migration, pinned=("personatree-default", 7))


def test_already_migrated_tree_is_a_no_op(migration):
    migrated = plan_migration(TREE, migration, pinned=V1.key).after
    again = plan_migration(migrated, migration, pinned=V2.key)
    assert again.report["already_migrated"] and again.after == migrated and again.ops() == ()


def test_ops_reproduce_the_plan_and_pass_b_gate(migration):
    plan = plan_migration(TREE, migration)
    ops = plan.ops()
    assert apply(plan.before, ops)[0] == plan.after
    for_b = [op for op in ops if V2.is_leaf(op.path)]
    retire = [op for op in ops if not V2.is_leaf(op.path)]
    assert all(op.type is OpType.DELETE and V1.is_leaf(op.path) for op in retire)
    assert gate(V2, plan.before, for_b).all_accepted


_values = st.text(alphabet="abc xyz;,", min_size=1, max_size=400).map(lambda v: " ".join(v.split()))
_trees = st.dictionaries(st.sampled_from(V1.paths), _values.filter(bool), max_size=60)


@settings(max_examples=150, deadline=None)
@given(_trees)
def test_property_ops_apply_to_planned_tree(values):
    m = load_migration(MAPPING, V1, V2)
    plan = plan_migration(values, m)
    assert apply(Tree(values), plan.ops())[0] == plan.after
    assert plan_migration(values, m) == plan  # deterministic
    for path, value in plan.after.items():
        assert len(value) <= V2.leaf(path).budget and value == " ".join(value.split())
    ops = [op for op in plan.ops() if V2.is_leaf(op.path)]
    assert gate(V2, Tree(values), ops).all_accepted
    cut = {t["path"] for t in plan.report["truncated"]}
    for path in set(values) & set(m.kept):  # kept leaves are unchanged unless reported cut
        assert plan.after[path] == values[path] or path in cut


def test_cli_dry_run_prints_the_report():
    cmd = [sys.executable, "-m", "memory.engine.migration", "--dry-run"]
    files = [str(FIXTURES / "personatree-default.v1-to-v2.json"), str(FIXTURES / "tree.v1.json")]
    target = ["--target", str(FIXTURES / "personatree-default.v2.json")]
    done = subprocess.run(cmd + files + target, capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    report = json.loads(done.stdout)
    assert report["dropped"] == [{"path": "body/appearance/height", "length": 6}]
    assert "values" not in report
    bad = subprocess.run(cmd + files, capture_output=True, text=True, cwd=REPO_ROOT)
    assert bad.returncode == 2 and "unknown schema" in json.loads(bad.stderr)["error"]


def test_ops_are_engine_ops(migration):
    assert all(isinstance(op, Op) for op in plan_migration(TREE, migration).ops())


def test_docs_example_runs():
    doc = (REPO_ROOT / "docs" / "SCHEMAS.md").read_text()
    prefix = ".venv/bin/python -m memory.engine.migration "
    [command] = [line for line in doc.splitlines() if line.startswith(prefix)]
    shown = doc.split(command, 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0]
    args = command[len(prefix) :].split()
    cmd = [sys.executable, "-m", "memory.engine.migration", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert json.loads(done.stdout) == json.loads(shown)
