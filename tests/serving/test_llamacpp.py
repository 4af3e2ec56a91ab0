"""The real llama.cpp engine on the local GGUF (``make model``), with constrained output.

Uses the small test schema (4 leaves) so the prompt stays short on 2 shared cores; the default
schema's prompt is exercised by the benchmark. Skipped, with the reason, only when the optional
local-llm extra or the model file is absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from serving.listener import MemListener
from serving.models import MODELS, ModelAssemblyError, assemble, verify
from serving.output_schema import op_list_schema
from tests.serving.conftest import make_job

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
MODEL_PATH = Path(
    os.environ.get("PERSONATREE_LOCAL_MODEL_PATH", ROOT / "var" / "models" / "memlistener.gguf")
)


@pytest.fixture(scope="module")
def engine():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (the local-llm extra) is not installed")
    if not MODEL_PATH.is_file():
        pytest.skip(f"no local model at {MODEL_PATH}: run `make model`")
    from serving.engines.llamacpp import LlamaCppEngine

    eng = LlamaCppEngine(MODEL_PATH, n_ctx=2048, n_threads=None, max_tokens=96, model_id="local-test")
    yield eng
    eng.close()


def test_constrained_output_is_schema_valid_and_gated(engine, tiny_schema, chunks):
    job = make_job(tiny_schema, chunks[2]["turns"], tree={"behaviour/hobbies": "running every morning"})
    listener = MemListener(engine, max_ops=1, schema_resolver=lambda _i, _v: tiny_schema)
    (res,) = listener.run([job])
    assert res.error is None, res.error
    doc = json.loads(res.raw_text)
    jsonschema.validate(doc, op_list_schema(tiny_schema, max_ops=1))
    assert len(res.ops) == len(doc["ops"]) == 1
    assert res.model_id == "local-test" and res.prompt_tokens > 100 and res.completion_tokens > 0
    engine.close()
    with pytest.raises(Exception, match="closed"):
        engine.check_health()


def test_model_file_is_the_pinned_one():
    if not MODEL_PATH.is_file():
        pytest.skip(f"no local model at {MODEL_PATH}: run `make model`")
    matches = [m for m in MODELS.values() if m.size == MODEL_PATH.stat().st_size]
    assert matches, f"{MODEL_PATH} is none of the pinned models"
    verify(MODEL_PATH, matches[0])


def test_assembly_refuses_a_wrong_hash(tmp_path):
    bad = MODELS["gemma3-270m"].__class__(**{**MODELS["gemma3-270m"].__dict__, "sha256": "0" * 64, "size": 3})
    (tmp_path / "m.gguf").write_bytes(b"abc")
    with pytest.raises(ModelAssemblyError, match="sha256"):
        verify(tmp_path / "m.gguf", bad)
    with pytest.raises(ModelAssemblyError, match="not installed|missing|sha256"):
        assemble(bad, tmp_path / "out.gguf")
