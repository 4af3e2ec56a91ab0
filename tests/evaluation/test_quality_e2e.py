"""The LLM-free quality phase of `evaluate locomo` on the tiny synthetic conversation, with the
extractive (rule-based) MemListener and no responder call at all."""

import pytest

from evaluation.quality import context_answer_recall
from memory.models import OpRecord

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def test_quality_with_extractive_listener_and_no_qa(evaluate_locomo):
    out, res = evaluate_locomo("extractive", "--no-qa", "--no-coverage")
    assert res["run"]["complete"] is True and res["provenance"]["responder_model_id"] is None
    rows = res["quality"]["rows"]
    assert list(rows) == ["tiny-1:Ana", "tiny-1:Ben", "tiny-1:both"]
    tenant = res["provenance"]["tenant"]
    for speaker in ("Ana", "Ben"):
        applied = OpRecord.objects.filter(
            subject__tenant__name=tenant,
            subject__external_id=f"tiny-1:{speaker}",
            status="applied",
            actor_kind="model",
            op_type__in=("ADD", "UPDATE"),
        ).count()
        values = rows[f"tiny-1:{speaker}"]["values"]
        assert values["values"] == applied
    ana, both = rows["tiny-1:Ana"], rows["tiny-1:both"]
    assert ana["values"]["values"] >= 1
    # the extractive listener copies the user's sentences and the gate checks grounding: nothing invented
    assert ana["values"]["grounded_rate"] == 1.0 and ana["values"]["invented_rate"] == 0.0
    assert ana["values"]["wrong_speaker_rate"] == 0.0
    assert ana["coverage"]["facts"] == 5 and rows["tiny-1:Ben"]["coverage"]["facts"] == 4
    assert both["coverage"]["facts"] == 9
    assert both["values"]["values"] == ana["values"]["values"] + rows["tiny-1:Ben"]["values"]["values"]
    assert 0 < ana["coverage"]["coverage"]["0.5"] <= 1 and ana["coverage"]["clauses"] >= 1
    assert ana["coverage"]["coverage"]["0.5"] >= ana["coverage"]["coverage"]["0.7"]
    assert ana["coverage"]["tree_tokens"] > 0
    # context answer recall: the LLM-free contexts, without a QA phase; the adversarial question is left out
    recall = res["context_recall"]
    assert set(recall) == {"full_history", "tree_only"}
    assert recall["full_history"]["n"] == recall["tree_only"]["n"] == 6
    items = {(r["qid"], r["mode"]): r["recall"] for r in res["context_recall_items"]}
    assert items[("tiny-1#0", "full_history")] == 1.0  # "nurse" is in the conversation
    assert items[("tiny-1#6", "full_history")] == context_answer_recall("", "nothing")  # not said: 0
    md = (out / "results.md").read_text()
    assert "## Memory quality (LLM-free)" in md and "## Context answer recall (LLM-free)" in md


def test_no_quality_flag(evaluate_locomo):
    _, res = evaluate_locomo("standin:no_op", "--speakers", "Ana", "--no-qa", "--no-coverage", "--no-quality")
    assert "quality" not in res and "context_recall" not in res
    assert "--no-quality" in res["run"]["command"]
