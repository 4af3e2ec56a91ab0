"""A tenant's schema at every limit must not turn into a grammar or a prompt that takes the shared
MemListener down (issue 24 item 4): ``maxLength`` in every generated output schema is capped
whatever the schema's budgets say, and the real llama.cpp engine (the GGUF ``make model``
assembles) answers a job of a hostile schema, and the next ordinary job, within seconds."""

from __future__ import annotations

import json
import time

import jsonschema
import pytest

from memory.engine.schema import MAX_BUDGET, MAX_DEPTH, MAX_DESCRIPTION_CHARS, MAX_PATH_CHARS, load_schema
from serving.listener import MemListener
from serving.output_schema import MAX_VALUE_CHARS, op_list_schema, pointer_list_schema
from tests.serving.conftest import make_job
from tests.serving.test_llamacpp import engine  # noqa: F401, F811 - the real engine (module scope)


def hostile_schema(leaves: int, schema_id: str = "hostile"):
    """Valid, at the limits: longest deepest paths, longest descriptions, the largest budget."""
    segment = "a" * ((MAX_PATH_CHARS - MAX_DEPTH + 1) // MAX_DEPTH - 4)
    rows = [
        {
            "path": "/".join([segment] * (MAX_DEPTH - 1) + [f"leaf_{i:03d}"]),
            "description": ("Everything the person ever said about anything at all " * 20)[
                :MAX_DESCRIPTION_CHARS
            ],
            "budget": MAX_BUDGET,
        }
        for i in range(leaves)
    ]
    return load_schema({"id": schema_id, "version": 1, "leaves": rows})


def _value_caps(output_schema: dict) -> list[int]:
    text = json.dumps(output_schema)
    return [
        int(x.split(":")[1].strip(" }")) for x in text.split('"maxLength"')[1:] for x in [x.split(",")[0]]
    ]


def test_generated_grammars_cap_the_value_length_whatever_the_budget():
    schema = hostile_schema(3)
    assert all(len(leaf.path) <= MAX_PATH_CHARS for leaf in schema.leaves)
    assert _value_caps(op_list_schema(schema)) == [MAX_VALUE_CHARS]
    assert _value_caps(pointer_list_schema(3, 3, max_len=MAX_BUDGET)) == [MAX_VALUE_CHARS]
    assert _value_caps(pointer_list_schema(3, 3, max_len=80)) == [80]  # small budgets stay as they are


@pytest.mark.integration
def test_the_real_engine_survives_a_hostile_schema(engine, tiny_schema, chunks):  # noqa: F811
    hostile, huge = hostile_schema(4), hostile_schema(400, "hostile-huge")
    schemas = {s.id: s for s in (hostile, huge, tiny_schema)}
    listener = MemListener(engine, max_ops=1, schema_resolver=lambda schema_id, _v: schemas[schema_id])
    started = time.perf_counter()
    (res,) = listener.run([make_job(hostile, chunks[2]["turns"])])
    hostile_s = time.perf_counter() - started
    assert res.error is None, res.error
    try:  # the reply may be cut at max_tokens (a 300-character path is long): then a parse error
        doc = json.loads(res.raw_text)
    except json.JSONDecodeError:
        assert res.parse_errors and not res.ops
    else:
        jsonschema.validate(doc, op_list_schema(hostile, max_ops=1))
        assert all(len(op.get("value") or "") <= MAX_VALUE_CHARS for op in doc["ops"])
    # A schema too large for the context window fails its own job, not the engine.
    (too_big,) = listener.run([make_job(huge, chunks[2]["turns"], job_id="job-2")])
    assert "exceed context window" in too_big.error and not too_big.ops
    # The next ordinary job is answered as usual.
    started = time.perf_counter()
    (res,) = listener.run([make_job(tiny_schema, chunks[2]["turns"], job_id="job-3")])
    ordinary_s = time.perf_counter() - started
    assert res.error is None, res.error
    print(f"hostile job {hostile_s:.1f} s, ordinary job {ordinary_s:.1f} s")
    # Within the MemListener's own timeout (PERSONATREE_MEMLISTENER_TIMEOUT_S, 300 s) even on a
    # shared, loaded CPU: the grammar is bounded, the prompt is what costs.
    assert hostile_s < 300, hostile_s
