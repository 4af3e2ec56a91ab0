import pytest

from evaluation.metrics import (
    ChunkOps,
    Outcome,
    accuracy_table,
    distribution,
    op_stats,
    recall_section,
)
from evaluation.recall_metrics import RecallQuestion, evaluate_recall


def test_accuracy_table_counts_failures():
    t = accuracy_table(
        [
            Outcome("facts", True),
            Outcome("facts", False, failed=True),
            Outcome("prefs", True),
            Outcome("prefs", True),
        ]
    )
    assert t["overall"] == {"n": 4, "correct": 3, "failed": 1, "accuracy": 0.75}
    assert t["per_group"]["facts"] == {"n": 2, "correct": 1, "failed": 1, "accuracy": 0.5}
    assert accuracy_table([Outcome("x", False, score=0.25)])["overall"]["mean_score"] == 0.25


def test_distribution():
    d = distribution(list(range(1, 11)))
    assert d["median"] == 5.5 and d["p90"] == pytest.approx(9.1) and d["max"] == 10
    assert distribution([])["median"] is None


def test_op_stats():
    s = op_stats(
        [
            ChunkOps(
                op_types=("ADD", "UPDATE"),
                rejections=("ADD_ON_OCCUPIED",),
                prompt_tokens=100,
                completion_tokens=20,
            ),
            ChunkOps(op_types=("NO_OP",), prompt_tokens=80, completion_tokens=4),
            ChunkOps(op_types=("ADD",), rejections=("UNKNOWN_PATH",), prompt_tokens=90, completion_tokens=10),
            ChunkOps(failed=True, model_calls=2),
        ]
    )
    assert s["chunks"] == 4 and s["failed_calls"] == 1
    assert s["schema_valid_rate"] == 0.5  # the UNKNOWN_PATH chunk and the failed call are not valid
    assert s["no_op_rate"] == 0.25
    assert s["ops_by_type"] == {"ADD": 2, "NO_OP": 1, "UPDATE": 1}
    assert s["gate_rejections_by_reason"] == {"ADD_ON_OCCUPIED": 1, "UNKNOWN_PATH": 1}
    assert s["op_accept_rate"] == 0.5
    assert s["model_calls_per_chunk"] == 1.25
    assert s["prompt_tokens_per_chunk"]["median"] == 85.0


def test_recall_section_rank_one_counts_for_recall_at_1():
    questions = [
        RecallQuestion("q1", "4", ("D1:1",)),
        RecallQuestion("q2", "4", ("D1:3",)),
        RecallQuestion("q3", "5", ()),
    ]
    turn_to_unit = {"D1:1": 0, "D1:2": 0, "D1:3": 2, "D1:4": 2}
    report = evaluate_recall(questions, {"q1": [0, 2], "q2": [0, 2]}, turn_to_unit, ks=(1, 2))
    sec = recall_section(report, names={"4": "single_hop"})
    assert sec["overall"] == {"n": 2, "recall@1": 0.5, "recall@2": 1.0}
    assert sec["per_group"]["single_hop"]["recall@1"] == 0.5
    assert sec["skipped_without_evidence"] == 1
