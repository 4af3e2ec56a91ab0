"""MemListener: prompt -> engine -> parse -> gate, with bad model output and failing engines.

The bad outputs below are adversarial inputs written for the test (not model recordings): they
are what a broken or unconstrained model could send.
"""

from __future__ import annotations

import json

from memory.engine.gate import Reason
from memory.engine.ops import Op
from serving.engines.base import EngineError, Generation
from serving.engines.recorded import RecordedEngine
from serving.listener import MemListener
from serving.prompt import PROMPT_VERSION, build_prompt
from tests.serving.conftest import make_job


def listener_with_output(schema, job, text):
    prompt = build_prompt(schema, job.tree, [t.model_dump() for t in job.turns])
    engine = RecordedEngine(entries=[{"key": prompt.key, "text": text, "model_id": "adversarial"}])
    return MemListener(engine)


def run_one(schema, chunks, text, tree=None):
    job = make_job(schema, chunks[0]["turns"], tree=tree)
    return listener_with_output(schema, job, text).run([job])[0]


def test_good_json_output_is_gated_and_carries_versions(schema, chunks):
    text = json.dumps(
        {
            "ops": [
                {
                    "op": "ADD",
                    "path": "identity/occupation/current_role",
                    "value": "Nurse at a children's hospital",
                },
                {"op": "UPDATE", "path": "identity/location/current_city", "value": "Lyon, since March"},
            ]
        }
    )
    res = run_one(schema, chunks, text, tree={"identity/location/current_city": "Paris"})
    assert res.error is None
    assert [o.path for o in res.ops] == [
        "identity/occupation/current_role",
        "identity/location/current_city",
    ]
    assert res.rejected == [] and res.parse_errors == []
    assert res.model_id == "recorded:adversarial" and res.prompt_version == PROMPT_VERSION
    assert res.prompt_tokens > 4000 and res.completion_tokens > 0 and res.raw_text == text


def test_line_format_fallback(schema, chunks):
    res = run_one(schema, chunks, 'ADD(identity/occupation/current_role, "nurse")\nsome commentary')
    assert [o.value for o in res.ops] == ["nurse"]


def test_garbage_output_returns_a_result_with_parse_error(schema, chunks):
    res = run_one(schema, chunks, "I think the user is nice!!! <html>")
    assert res.error is None and res.ops == [] and res.parse_errors


def test_truncated_json_keeps_the_complete_ops(schema, chunks):
    text = '{"ops": [{"op": "ADD", "path": "identity/occupation/current_role", "value": "nurse"}, {"op": "ADD", "pa'
    res = run_one(schema, chunks, text)
    assert [o.path for o in res.ops] == ["identity/occupation/current_role"]
    assert "truncated" in res.parse_errors[0]["message"]


def test_truncated_json_with_nothing_complete(schema, chunks):
    res = run_one(schema, chunks, '{"ops": [{"op": "AD')
    assert res.ops == [] and res.parse_errors and res.error is None


def test_empty_list_and_empty_text(schema, chunks):
    for text in ('{"ops": []}', ""):
        res = run_one(schema, chunks, text)
        assert res.error is None and res.ops == []


def test_fifty_ops_are_each_handed_over_with_the_precheck_reason(schema, chunks):
    paths = list(schema.paths)
    ops = [{"op": "ADD", "path": paths[i % 20], "value": f"value {i}"} for i in range(40)]  # 20 duplicates
    ops += [{"op": "ADD", "path": f"made/up/{i}", "value": "x"} for i in range(5)]
    ops += [{"op": "UPDATE", "path": paths[30 + i], "value": "y"} for i in range(3)]  # empty leaves
    ops += [
        {"op": "ADD", "path": paths[40], "value": "z" * 1000},
        {"op": "DELETE", "path": paths[41], "value": None},
    ]
    assert len(ops) == 50
    res = run_one(schema, chunks, json.dumps({"ops": ops}))
    assert res.error is None
    # every op read goes to the store in the model's order, the pre-check's verdict beside it
    assert [o.to_op().to_dict() for o in res.ops] == ops
    assert res.accepted == [] and len(res.rejected) == 50  # "value 3" is in no user turn: UNGROUNDED
    reasons = {o.precheck for o in res.rejected}
    assert {Reason.DUPLICATE_PATH, Reason.UNKNOWN_PATH, Reason.UPDATE_ON_EMPTY, Reason.OVER_BUDGET} <= reasons
    assert Reason.DELETE_ON_EMPTY in reasons
    assert all(o.detail for o in res.rejected) and not any(o.detail for o in res.accepted)


def test_unknown_recording_gives_non_retryable_error(schema, chunks):
    job = make_job(schema, chunks[1]["turns"])
    res = MemListener(RecordedEngine(entries=[])).run([job])[0]
    assert res.error and "no recording" in res.error and res.retryable is False
    assert res.prompt_version == PROMPT_VERSION


class ExplodingEngine:
    model_id = "exploding"

    def __init__(self, exc):
        self.exc = exc

    def generate(self, prompts, json_schema):
        raise self.exc

    def check_health(self):
        return None

    def close(self):
        return None


def test_engine_down_is_a_retryable_error_for_every_job(schema, chunks):
    jobs = [make_job(schema, c["turns"], job_id=f"j{i}") for i, c in enumerate(chunks)]
    for exc, retryable in [
        (EngineError("model server gone", retryable=True), True),
        (RuntimeError("boom"), True),
    ]:
        results = MemListener(ExplodingEngine(exc)).run(jobs)
        assert [r.job_id for r in results] == [j.job_id for j in jobs]
        assert all(r.error and r.retryable is retryable for r in results)


def test_wrong_number_of_generations_is_caught(schema, chunks):
    class ShortEngine(ExplodingEngine):
        def generate(self, prompts, json_schema):
            return [Generation(text="NO_OP()")]

    jobs = [make_job(schema, c["turns"], job_id=f"j{i}") for i, c in enumerate(chunks[:2])]
    results = MemListener(ShortEngine(None)).run(jobs)
    assert all(r.error and "2 prompts" in r.error and r.retryable for r in results)


def test_bad_job_does_not_sink_the_batch(schema, chunks):
    good = make_job(schema, chunks[0]["turns"], job_id="good")
    bad = good.model_copy(update={"job_id": "bad", "schema_id": "no-such-schema"})
    listener = listener_with_output(schema, good, '{"ops": [{"op": "NO_OP", "path": null, "value": null}]}')
    res_bad, res_good = listener.run([bad, good])
    assert res_bad.error and "bad job" in res_bad.error and res_bad.retryable is False
    assert res_good.error is None and [o.to_op() for o in res_good.ops] == [Op.no_op()]


def test_jobs_of_two_schemas_in_one_batch(schema, tiny_schema, chunks):
    j1 = make_job(schema, chunks[0]["turns"], job_id="a")
    j2 = make_job(tiny_schema, chunks[0]["turns"], job_id="b")
    resolver = {(schema.id, schema.version): schema, (tiny_schema.id, tiny_schema.version): tiny_schema}
    seen = []

    class Spy(ExplodingEngine):
        def generate(self, prompts, json_schema):
            seen.append(json_schema["properties"]["ops"]["items"]["anyOf"][0]["properties"]["path"]["enum"])
            return [Generation(text="NO_OP()", model_id="spy") for _ in prompts]

    results = MemListener(Spy(None), schema_resolver=lambda i, v: resolver[(i, v)]).run([j1, j2])
    assert [r.job_id for r in results] == ["a", "b"] and all(r.error is None for r in results)
    assert sorted(len(s) for s in seen) == [len(tiny_schema.paths), len(schema.paths)]


def test_raw_control_characters_inside_json_strings_are_tolerated(schema, chunks):
    text = '{"ops": [{"op": "ADD", "path": "identity/occupation/current_role", "value": "nurse\x13 at\x06 night"}]}'
    res = run_one(schema, chunks, text)
    assert [o.value for o in res.accepted] == ["nurse  at  night"]  # the store's gate collapses spaces
    assert res.raw_text == text  # the audit keeps what the model wrote
