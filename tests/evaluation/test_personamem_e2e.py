"""PersonaMem end to end on the project's tiny synthetic files, through the real ingestion path."""

import json

import pytest

from memory.models import Chunk, Subject, TreeVersion

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]  # Milvus Lite + MiniLM


@pytest.fixture
def run(evaluate, pm_questions_path, pm_contexts_path):
    """``evaluate personamem`` on the tiny files with the stand-in MemListener."""

    def go(*extra: str):
        return evaluate(
            "personamem",
            "--questions",
            str(pm_questions_path),
            "--contexts",
            str(pm_contexts_path),
            "--memlistener",
            "standin:derived",
            *extra,
        )

    return go


def test_failed_responder_calls_count_as_failures(run, no_replies):
    out, res = run("--responder", no_replies, "--modes", "no_memory", "full_history")
    for mode in ("no_memory", "full_history"):
        overall = res["modes"][mode]["accuracy"]["overall"]
        assert overall == {"n": 5, "correct": 0, "failed": 5, "accuracy": 0.0}
    assert all(item["choice"] is None and item["rule"] == "failed" and item["error"] for item in res["items"])
    # Ingestion went through the real path: one subject per needed context, sliced at the largest end index.
    subjects = Subject.objects.filter(tenant__name=res["provenance"]["tenant"])
    assert sorted(s.external_id for s in subjects) == ["ctx-mara", "ctx-tom"]
    mara = res["ingestion"]["ctx-mara"]
    assert mara["messages"] == 11  # the largest end index among its questions is 11
    assert (
        mara["ops"]["chunks"]
        == Chunk.objects.filter(
            subject__external_id__endswith="ctx-mara", subject__tenant__name=res["provenance"]["tenant"]
        ).count()
    )
    assert mara["ops"]["schema_valid_rate"] == 1.0 and mara["ops"]["model_calls_per_chunk"] == 1.0
    assert res["ingestion"]["ctx-tom"]["messages"] == 4
    assert res["provenance"]["schema"].startswith("personatree-default@")
    assert (out / "accuracy.png").exists() and "| no_memory | 5 | 0.000 |" in (out / "results.md").read_text()


def test_full_history_is_sliced_and_versions_exist(run, no_replies):
    _, res = run("--responder", no_replies, "--modes", "full_history", "--history-budget", "40")
    items = {i["question_id"]: i for i in res["items"]}
    assert items["q1"]["context_tokens"] <= 40
    assert any(i["truncated"] for i in items.values())
    assert "truncated" in res["modes"]["full_history"]["note"]
    tenant = res["provenance"]["tenant"]
    assert TreeVersion.objects.filter(subject__tenant__name=tenant).exists()


def test_reused_tenant_is_not_sent_to_the_model_again(run, no_replies):
    args = ("--responder", no_replies, "--modes", "no_memory", "--tenant", "eval-reuse")
    _, first = run(*args)
    _, second = run(*args)
    assert second["ingestion"]["ctx-mara"]["ops"] == first["ingestion"]["ctx-mara"]["ops"]
    assert any("reused tenant eval-reuse" in n for n in second["run"]["notes"])
    # No MemListener call in the second run: the model ids come from the audit log of the tenant.
    assert second["provenance"]["memlistener_model_ids"] == ["standin:derived"]
    assert (
        second["provenance"]["memlistener_prompt_versions"]
        == first["provenance"]["memlistener_prompt_versions"]
    )
    assert Subject.objects.filter(tenant__name="eval-reuse").count() == 2


def scripted(tmp_path, replies):
    """A responder recording whose replies are scripted by this test (not model output): they exercise
    the option extraction and the arithmetic of the accuracy table."""
    from serving.engines.base import turns_key

    path = tmp_path / "scripted-replies.jsonl"
    with path.open("w") as fh:
        for key, text in replies.items():
            entry = {
                "key": turns_key([{"role": "user", "content": key}]),
                "text": text,
                "model_id": "scripted",
            }
            fh.write(json.dumps(entry) + "\n")
    return path


def test_accuracy_per_type_and_as_of_versions(tmp_path, run):
    replies = {
        "personamem|q1|no_memory": '{"answer": "b"}',  # right
        "personamem|q2|no_memory": "(c)",  # wrong
        "personamem|q3|no_memory": "The answer is (c).",  # right
        "personamem|q4|no_memory": "I cannot tell.",  # unreadable -> failed
        # q5 has no reply at all -> failed call
        **{f"personamem|q{i}|tree_only": '{"answer": "a"}' for i in range(1, 6)},
    }
    path = scripted(tmp_path, replies)
    _, res = run("--responder", f"recorded:{path}", "--modes", "no_memory", "tree_only")
    acc = res["modes"]["no_memory"]["accuracy"]
    assert acc["overall"] == {"n": 5, "correct": 2, "failed": 2, "accuracy": 0.4}
    assert acc["per_group"]["recall_user_shared_facts"] == {
        "n": 2,
        "correct": 1,
        "failed": 1,
        "accuracy": 0.5,
    }
    assert acc["per_group"]["recalling_the_reasons_behind_previous_updates"]["failed"] == 1
    tree = res["modes"]["tree_only"]["accuracy"]
    assert tree["overall"]["correct"] == 2 and tree["overall"]["failed"] == 0  # gold (a) for q2 and q5
    rows = {i["question_id"]: i for i in res["items"] if i["mode"] == "tree_only"}
    # The tree a question reads is the version that existed at its end index (chunks of 3 pairs after
    # the system message: seqs 2..7, then 8..11): q1/q2 come before any chunk, q3 after the first.
    assert rows["q1"]["tree_version"] == 0 and rows["q1"]["context_tokens"] == 0
    assert rows["q2"]["tree_version"] == 0
    assert rows["q3"]["tree_version"] == 1
    mara = Subject.objects.get(tenant__name=res["provenance"]["tenant"], external_id="ctx-mara")
    assert rows["q4"]["tree_version"] == mara.head_version >= rows["q3"]["tree_version"]
