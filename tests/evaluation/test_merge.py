import json

import pytest
from django.core.management import CommandError, call_command

from evaluation.merge import MergeError, merge_results
from evaluation.metrics import Outcome, accuracy_table, distribution

RETRIEVAL = {
    "overall": {"n": 2, "recall@1": 0.5},
    "per_group": {"single_hop": {"n": 2, "recall@1": 0.5}},
    "skipped_without_evidence": 0,
}


def ingestion_row(processed: int, seconds_per_chunk=None) -> dict:
    return {
        "messages": 12,
        "chunks_processed_this_run": processed,
        "seconds_per_chunk": seconds_per_chunk,
        "ops": {
            "chunks": 2,
            "failed_calls": 0,
            "schema_valid_rate": 0.5,
            "no_op_rate": 0.0,
            "ops_proposed": 3,
            "op_accept_rate": 0.667,
            "gate_rejections_by_reason": {"ADD_ON_OCCUPIED": 1},
            "model_calls_per_chunk": 1.0,
            "prompt_tokens_per_chunk": {"mean": 4000.0},
            "completion_tokens_per_chunk": {"mean": 90.0},
        },
    }


def run(**fields) -> dict:
    return {"command": "manage.py evaluate locomo ...", "complete": True, "notes": [], **fields}


def part(*, speakers="both", ingestion=None, modes=(), coverage=None, retrieval=True, tenant="eval-t"):
    out = {
        "title": "LoCoMo evaluation",
        "benchmark": "locomo",
        "ingestion": ingestion or {},
        "run": run(conversations=["conv-x"], speakers=speakers, sessions="all"),
        "provenance": {"commit": "abc", "tenant": tenant, "memlistener_model_ids": ["m1"]},
    }
    if retrieval:
        out["retrieval"] = RETRIEVAL
        out["retrieval_items"] = [{"qid": "conv-x#0"}]
        out["run"].update(ks=[1], qa_limit_per_conversation=None, questions_outside_slice=0)
    if modes:
        out["modes"] = {
            m: {
                "accuracy": accuracy_table([Outcome("single_hop", i == 0)]),
                "context_tokens": distribution([9]),
            }
            for i, m in enumerate(modes)
        }
        out["items"] = [{"qid": "conv-x#0", "mode": m} for m in modes]
    if coverage:
        out["coverage"] = coverage
    return out


def split_run() -> list[dict]:
    """Two per-speaker ingest runs, then two QA runs over the same tenant (coverage in the first)."""
    return [
        part(speakers=["A"], ingestion={"x:A": ingestion_row(2, 30.0)}, retrieval=False),
        part(speakers=["B"], ingestion={"x:B": ingestion_row(2, 40.0)}, retrieval=False),
        part(
            ingestion={"x:A": ingestion_row(0), "x:B": ingestion_row(0)},
            modes=("no_memory", "tree_only"),
            coverage={"x:A": {"facts": 3, "covered": 1, "judge_failed": 0, "coverage": 0.333}},
        ),
        part(ingestion={"x:A": ingestion_row(0), "x:B": ingestion_row(0)}, modes=("tree_agentic",)),
    ]


def test_merge_joins_modes_coverage_and_keeps_the_ingesting_rows():
    merged = merge_results(split_run(), names=["ia", "ib", "q1", "q2"])
    assert list(merged["modes"]) == ["no_memory", "tree_only", "tree_agentic"]
    assert [i["mode"] for i in merged["items"]] == ["no_memory", "tree_only", "tree_agentic"]
    assert merged["coverage"]["x:A"]["covered"] == 1
    assert merged["ingestion"]["x:A"]["seconds_per_chunk"] == 30.0
    assert merged["ingestion"]["x:B"]["seconds_per_chunk"] == 40.0
    assert merged["retrieval"] == RETRIEVAL
    assert merged["run"]["complete"] is True
    assert merged["run"]["speakers"] == "both"
    assert merged["run"]["merged_from"] == ["ia", "ib", "q1", "q2"]
    assert len(merged["run"]["commands"]) == 4
    assert [p["part"] for p in merged["provenance"]["parts"]] == ["ia", "ib", "q1", "q2"]


def test_merge_is_incomplete_when_a_part_is():
    parts = split_run()
    parts[3]["run"]["complete"] = False
    assert merge_results(parts)["run"]["complete"] is False


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda ps: ps[3]["modes"].update(tree_only=ps[2]["modes"]["tree_only"]), "QA mode 'tree_only'"),
        (lambda ps: ps[3].update(coverage=ps[2]["coverage"]), "coverage subject 'x:A'"),
        (lambda ps: ps[3].update(retrieval={**RETRIEVAL, "skipped_without_evidence": 1}), "recall@k differs"),
        (lambda ps: ps[1]["provenance"].update(tenant="other"), "tenant 'other'"),
        (lambda ps: ps[2]["run"].update(sessions=2), "run sessions differs"),
        (lambda ps: ps[3]["run"].update(ks=[1, 5]), "ks differs"),
        (lambda ps: ps[1].update(benchmark="personamem"), "benchmark 'personamem'"),
    ],
)
def test_merge_refuses_parts_that_do_not_belong_together(spoil, message):
    parts = split_run()
    spoil(parts)
    with pytest.raises(MergeError, match=message):
        merge_results(parts)


def test_merge_needs_two_parts():
    with pytest.raises(MergeError, match="at least two"):
        merge_results(split_run()[:1])


def test_merge_command_writes_the_merged_outputs(tmp_path):
    dirs = []
    for i, p in enumerate(split_run()):
        d = tmp_path / f"part{i}"
        d.mkdir()
        (d / "results.json").write_text(json.dumps(p))
        dirs.append(str(d))
    call_command("evaluate", "merge", *dirs, "--out", str(tmp_path / "merged"))
    data = json.loads((tmp_path / "merged" / "results.json").read_text())
    assert list(data["modes"]) == ["no_memory", "tree_only", "tree_agentic"]
    assert data["run"]["command"].startswith("manage.py evaluate merge")
    assert (tmp_path / "merged" / "accuracy.png").read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "merged" / "results.md").read_text()
    assert "| tree_agentic | 1 |" in md


def test_merge_command_says_which_part_is_missing(tmp_path):
    with pytest.raises(CommandError, match="no results.json"):
        call_command("evaluate", "merge", str(tmp_path), str(tmp_path), "--out", str(tmp_path / "m"))


def test_merge_takes_last_quality_and_joins_context_recall_rows():
    a, b = part(modes=("tree_only",)), part(modes=("tree_router",))
    row = {"qid": "conv-x#0", "category": "single_hop"}
    a["quality"] = {"rows": {"conv-x:A": "first"}}
    b["quality"] = {"rows": {"conv-x:A": "last"}}
    a["context_recall_items"] = [{**row, "mode": "tree_only", "recall": 1.0}]
    b["context_recall_items"] = [
        {**row, "mode": "tree_only", "recall": 0.0},  # measured twice (same context): the first is kept
        {**row, "mode": "tree_router", "recall": None},
    ]
    merged = merge_results([a, b])
    assert merged["quality"] == {"rows": {"conv-x:A": "last"}}
    assert len(merged["context_recall_items"]) == 2
    assert merged["context_recall"]["tree_only"]["mean"] == 1.0
    assert merged["context_recall"]["tree_router"]["unmeasured"] == 1
