"""The pointing pipeline: candidate leaves, ids mapped back, no model call when nothing fits,
grounding in the listener's gate, and the extractive listener.

Model outputs here are hand-written (they say what a model could send, right or wrong); the
context step is the cosine one (``evaluation.training.cosine``) on a deterministic bag-of-words
embedder, so the candidate choice is exact. The product's fact pipeline with the real MiniLM and
the extractive engine runs in tests/workers/test_grounded_pipeline.py.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from evaluation.training.cosine import CandidateSettings, LeafIndex, PointingStep
from memory.engine.gate import Reason
from memory.engine.text import content_stems
from memory.engine.tree import Tree
from serving.engines.base import Generation
from serving.engines.extractive import ExtractiveEngine
from serving.listener import MemListener
from serving.output_schema import pointer_list_schema
from serving.prompt import POINTING_PROMPT_VERSION
from serving.protocol import ListenerOp
from tests.serving.conftest import make_job

VOCAB: dict[str, int] = {}


def bag_embed(texts):
    """Unit bag-of-stems vectors: cosine = shared content words (a deterministic stand-in)."""
    rows = []
    for text in texts:
        stems = content_stems(re.sub(r"[/_]", " ", text))
        for s in stems:
            VOCAB.setdefault(s, len(VOCAB))
        rows.append(stems)
    out = np.zeros((len(texts), 4096), dtype=np.float32)
    for i, stems in enumerate(rows):
        for s in stems:
            out[i, VOCAB[s]] = 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9)


class ScriptedEngine:
    """Returns the given texts in order; fails the test if called more often (no-call checks)."""

    model_id = "scripted"

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.prompts = []

    def generate(self, prompts, json_schema):
        self.prompts += list(prompts)
        self.schema = json_schema
        return [Generation(text=self.texts.pop(0), model_id=self.model_id) for _ in prompts]

    def check_health(self):
        return None

    def close(self):
        return None


def pointing_listener(engine, threshold=0.2):
    step = PointingStep(
        LeafIndex(bag_embed), CandidateSettings(k=4, threshold=threshold, filled_threshold=threshold)
    )
    return MemListener(engine, pointing=step)


TURNS = [
    {"role": "user", "content": "Hi! I work as a nurse at the children's hospital."},
    {"role": "assistant", "content": "That sounds demanding. Do you have pets?"},
    {"role": "user", "content": "Yes, my pets are two cats called Miso and Tofu."},
    {"role": "assistant", "content": "Lovely names!"},
]


def test_ids_map_back_to_paths_and_sentences(schema):
    engine = ScriptedEngine("")  # text filled below, once the candidate ids are known
    listener = pointing_listener(engine)
    job = make_job(schema, TURNS)
    context = listener.pointing.prepare(schema, Tree(), TURNS)
    ids = {c.path: c.id for c in context.candidates.leaves}
    assert "identity/family/pets" in ids
    sentence = next(s.id for s in context.sentences if "cats" in s.text)
    engine.texts = [
        json.dumps({"ops": [{"op": "ADD", "sentence": sentence, "leaf": ids["identity/family/pets"],
                             "value": "two cats called Miso and Tofu"}]})
    ]  # fmt: skip
    res = listener.run([job])[0]
    assert res.error is None and res.prompt_version == POINTING_PROMPT_VERSION
    assert res.ops == [
        ListenerOp(op="ADD", path="identity/family/pets", value="two cats called Miso and Tofu",
                   source="Yes, my pets are two cats called Miso and Tofu.")
    ]  # fmt: skip
    # the prompt lists numbered sentences and candidates, never the whole schema
    prompt = engine.prompts[0]
    assert "2. I work as a nurse" in prompt.dynamic and "identity/family/pets" in prompt.dynamic
    assert "body/appearance/height" not in prompt.text
    # the output schema's ids are this chunk's only
    items = engine.schema["properties"]["ops"]["items"]["anyOf"][0]["properties"]
    assert items["leaf"]["enum"] == list(range(1, len(ids) + 1))
    assert items["sentence"]["enum"] == list(range(1, len(context.sentences) + 1))
    assert list(items) == ["op", "sentence", "leaf", "value"]  # op first: grammars keep this order


def test_invented_value_is_rejected_ungrounded(schema):
    listener = pointing_listener(ScriptedEngine(""))
    context = listener.pointing.prepare(schema, Tree(), TURNS)
    leaf = context.candidates.leaves[0].id
    listener.engine.texts = [
        json.dumps({"ops": [{"op": "ADD", "sentence": 1, "leaf": leaf, "value": "surgeon, 45"}]})
    ]
    res = listener.run([make_job(schema, TURNS)])[0]
    assert res.accepted == []  # the pre-check's verdict; the store judges the op again
    assert [o.precheck for o in res.ops] == [Reason.UNGROUNDED]
    assert "45" in res.ops[0].detail


def test_bad_ids_are_parse_errors_not_ops(schema):
    listener = pointing_listener(
        ScriptedEngine(json.dumps({"ops": [{"op": "ADD", "sentence": 99, "leaf": 1, "value": "x"}]}))
    )
    res = listener.run([make_job(schema, TURNS)])[0]
    assert res.ops == [] and "sentence id" in res.parse_errors[0]["message"]


def test_small_talk_skips_the_model(schema):
    engine = ScriptedEngine()  # any call would pop from an empty list and fail
    turns = [
        {"role": "user", "content": "Thanks, that's great!"},
        {"role": "assistant", "content": "Anytime."},
    ]
    res = pointing_listener(engine).run([make_job(schema, turns)])[0]
    assert engine.prompts == []
    assert res.skipped_model and res.ops == [ListenerOp(op="NO_OP")]
    assert res.note.startswith("no model call")


def test_nothing_above_threshold_skips_the_model(schema):
    engine = ScriptedEngine()
    turns = [
        {"role": "user", "content": "I think zxqv plorb wibble."},
        {"role": "assistant", "content": "Hm."},
    ]
    res = pointing_listener(engine, threshold=0.5).run([make_job(schema, turns)])[0]
    assert engine.prompts == [] and res.skipped_model and "no candidate leaf" in res.note


def test_extractive_listener_writes_grounded_clauses_and_merges(schema):
    listener = pointing_listener(ExtractiveEngine())
    res = listener.run([make_job(schema, TURNS)])[0]
    by_path = {o.path: o for o in res.accepted}
    assert by_path["identity/family/pets"].value == "Their pets are two cats called Miso and Tofu"
    assert all(o.source for o in res.accepted)
    # a second chunk adds to the same leaf without losing what it held
    tree = {o.path: o.value for o in res.accepted}
    more = [
        {"role": "user", "content": "My pets also include a dog named Rex."},
        {"role": "assistant", "content": "Nice"},
    ]
    res2 = listener.run([make_job(schema, more, tree=tree, base_version=1)])[0]
    pets = next(o for o in res2.accepted if o.path == "identity/family/pets")
    assert pets.op == "UPDATE" and pets.value.startswith(tree["identity/family/pets"] + "; ")
    assert "Rex" in pets.value


def test_extractive_retraction_removes_the_named_clause(schema):
    tree = {"identity/family/pets": "two cats called Miso and Tofu; a dog named Rex"}
    turns = [{"role": "user", "content": "Please forget the dog named Rex, I gave him away."},
             {"role": "assistant", "content": "Done."}]  # fmt: skip
    res = pointing_listener(ExtractiveEngine()).run([make_job(schema, turns, tree=tree)])[0]
    assert res.ops[0].op == "UPDATE" and res.ops[0].value == "two cats called Miso and Tofu"


def test_items_handed_over_are_used_and_the_text_is_not_parsed(schema):
    """An engine that builds the pointer items itself (extractive) hands them over typed: the
    listener maps them as they are; the text is only kept for recordings."""
    from dataclasses import replace

    class ItemsEngine(ExtractiveEngine):
        def generate(self, prompts, json_schema):
            return [replace(g, text="not JSON at all") for g in super().generate(prompts, json_schema)]

    job = make_job(schema, TURNS)
    handed, written = (
        pointing_listener(engine).run([job])[0] for engine in (ItemsEngine(), ExtractiveEngine())
    )
    assert handed.parse_errors == [] and handed.raw_text == "not JSON at all"
    assert handed.ops == written.ops and any(o.path == "identity/family/pets" for o in handed.ops)


@pytest.mark.parametrize("n", [1, 7])
def test_pointer_schema_is_cached_and_op_first(n):
    assert pointer_list_schema(n, 3) is pointer_list_schema(n, 3)
    variants = pointer_list_schema(n, 3)["properties"]["ops"]["items"]["anyOf"]
    assert all(next(iter(v["properties"])) == "op" for v in variants)


def test_llamacpp_grammar_keeps_schema_property_order(monkeypatch):
    llama_cpp = pytest.importorskip("llama_cpp")
    from serving.engines.llamacpp import LlamaCppEngine

    seen = []
    monkeypatch.setattr(
        llama_cpp.LlamaGrammar, "from_json_schema", lambda text, verbose=False: seen.append(text)
    )
    engine = LlamaCppEngine.__new__(LlamaCppEngine)
    engine._grammars = {}
    engine._grammar(pointer_list_schema(2, 2))
    assert seen[0].index('"op"') < seen[0].index(
        '"leaf"'
    )  # sorted keys put "leaf" first: write ops unreachable


def test_extractive_needs_the_pointing_mode():
    from serving.config import EngineConfig
    from serving.listener import build_listener

    with pytest.raises(ValueError, match="pointing"):
        build_listener(EngineConfig(kind="extractive", prompt_mode="full_enum"))
    assert build_listener(EngineConfig(kind="standin", prompt_mode="pointing")).pointing is not None
