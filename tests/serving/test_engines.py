"""RecordedEngine (replays recordings) and StandInEngine (benchmark stand-in)."""

from __future__ import annotations

import json
import time

import jsonschema
import pytest

from serving.engines.recorded import RecordedEngine, RecordingError, recording_entry
from serving.engines.standin import NO_OP_TEXT, StandInEngine
from serving.output_schema import op_list_schema
from serving.prompt import build_prompt


def test_recorded_engine_replays_by_prompt_key_then_turns_key(tmp_path, schema, chunks):
    p1 = build_prompt(schema, {}, chunks[0]["turns"])
    p2 = build_prompt(schema, {"identity/occupation/current_role": "nurse"}, chunks[2]["turns"])
    path = tmp_path / "rec.jsonl"
    path.write_text(
        json.dumps(recording_entry(p1, "NO_OP()", model_id="m-a", prompt_tokens=7))
        + "\n\n"
        + json.dumps(recording_entry(p2, '{"ops": []}', model_id="m-b", by="turns"))
        + "\n"
    )
    engine = RecordedEngine(path=path)
    # A different tree changes the prompt key, but the turns key still finds the recording.
    p2_other_tree = build_prompt(schema, {}, chunks[2]["turns"])
    g1, g2, g3 = engine.generate([p1, p2, p2_other_tree], None)
    assert (g1.text, g1.model_id, g1.prompt_tokens, g1.error) == ("NO_OP()", "recorded:m-a", 7, None)
    assert g2.text == g3.text == '{"ops": []}' and g2.model_id == "recorded:m-b"


def test_recorded_engine_unknown_key_is_an_honest_non_retryable_failure(schema, chunks):
    engine = RecordedEngine(entries=[])
    gen = engine.generate([build_prompt(schema, {}, chunks[1]["turns"])], None)[0]
    assert gen.text == ""
    assert gen.error and "no recording" in gen.error
    assert gen.retryable is False


@pytest.mark.parametrize(
    "content, message",
    [("not json\n", ":1: not JSON"), ('{"key": "k"}\n', ":1: needs string fields"), ("", None)],
)
def test_recording_file_errors_name_the_line(tmp_path, content, message):
    path = tmp_path / "r.jsonl"
    path.write_text(content)
    if message is None:
        assert len(RecordedEngine(path=path)) == 0
    else:
        with pytest.raises(RecordingError, match=message):
            RecordedEngine(path=path)


def test_missing_recording_file_is_a_clear_error(tmp_path):
    with pytest.raises(RecordingError, match="not found"):
        RecordedEngine(path=tmp_path / "absent.jsonl")


def test_standin_no_op_mode(schema, chunks):
    engine = StandInEngine()
    gens = engine.generate([build_prompt(schema, {}, c["turns"]) for c in chunks], op_list_schema(schema))
    assert [g.text for g in gens] == [NO_OP_TEXT] * len(chunks)
    assert engine.model_id == "standin:no_op"


def test_standin_derived_mode_is_deterministic_schema_valid_and_tree_aware(schema, chunks):
    js = op_list_schema(schema)
    engine = StandInEngine(mode="derived")
    prompt = build_prompt(schema, {}, chunks[0]["turns"])
    first = json.loads(engine.generate([prompt], js)[0].text)
    assert first == json.loads(engine.generate([prompt], js)[0].text)
    jsonschema.validate(first, js)
    op = first["ops"][0]
    assert op["op"] == "ADD" and op["path"] in schema.paths
    assert op["value"] in chunks[0]["turns"][4]["content"]
    again = json.loads(
        engine.generate([build_prompt(schema, {op["path"]: "old"}, chunks[0]["turns"])], js)[0].text
    )
    assert again["ops"][0]["op"] == "UPDATE"


def test_standin_latency_and_bad_mode():
    engine = StandInEngine(latency_ms=50)
    start = time.perf_counter()
    engine.generate([], None)
    assert time.perf_counter() - start >= 0.045
    with pytest.raises(ValueError, match="unknown stand-in mode"):
        StandInEngine(mode="smart")


def test_llamacpp_keeps_the_rules_for_chat_formats_without_a_system_role(schema, chunks):
    from serving.engines.llamacpp import chat_messages

    prompt = build_prompt(schema, {}, chunks[0]["turns"])
    (only,) = chat_messages(prompt, "gemma")
    assert (
        only["role"] == "user"
        and only["content"].startswith(prompt.static)
        and only["content"].endswith(prompt.dynamic)
    )
    assert chat_messages(prompt, None) == prompt.messages()


def test_shipped_recording_replays_real_model_output_through_the_gate(schema, chunks):
    """tests/fixtures/recordings/memlistener.jsonl: real outputs of the pinned local model
    (python -m evaluation.record) on chunks.json with the default schema; the recorded-backend default."""
    from serving.listener import MemListener
    from tests.serving.conftest import RECORDING_PATH, make_job

    engine = RecordedEngine(path=RECORDING_PATH)
    assert len(engine) == len(chunks)
    jobs = [make_job(schema, c["turns"], job_id=c["name"]) for c in chunks]
    results = {r.job_id: r for r in MemListener(engine).run(jobs)}
    for r in results.values():
        assert r.error is None and r.model_id.startswith("recorded:qwen2.5-coder-0.5b")
        emitted = json.loads(r.raw_text)["ops"]
        assert len(r.ops) == len(emitted)
    # The model wrote NO_OP next to other ops on the small-talk chunk: the gate refuses that NO_OP.
    assert "NO_OP_NOT_ALONE" in {o.precheck for o in results["small_talk"].ops}
