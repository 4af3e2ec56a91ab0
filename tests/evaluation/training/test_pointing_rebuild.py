"""--rebuild-pointing: the rebuilt pointing prompt equals the listener's for the same embedder."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from evaluation.training.cosine import CandidateSettings, LeafIndex, PointingStep
from evaluation.training.pointing import pointing_prompt_builder
from memory.engine.schema import get_schema
from memory.engine.tree import Tree
from serving.listener import MemListener
from serving.protocol import ListenerJob

pytestmark = pytest.mark.django_db


def fake_embed(texts):
    """Deterministic bag-of-words vectors (hashed words, unit length)."""
    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in text.lower().replace("/", " ").replace("_", " ").split():
            out[i, int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


@pytest.mark.parametrize(
    "turns",
    [
        [
            {"role": "user", "content": "I go hiking in the hills on Sundays."},
            {"role": "assistant", "content": "Nice"},
        ],
        [{"role": "user", "content": "Hello!"}, {"role": "assistant", "content": "Hi"}],
    ],
)
def test_rebuilt_pointing_prompt_equals_the_listeners(turns):
    schema = get_schema("personatree-default", 1)
    tree = {"identity/family/pets": "a cat called Miso"}
    settings = CandidateSettings(k=5, threshold=0.25, filled_threshold=0.25)
    step = PointingStep(LeafIndex(fake_embed), settings)
    listener = MemListener(engine=None, pointing=step)
    job = ListenerJob(
        job_id="1",
        subject_id="1",
        base_version=0,
        schema_id=schema.id,
        schema_version=1,
        tree=tree,
        turns=turns,
    )
    expected, skip, _ = listener._prompt(job, schema, Tree(tree))
    prompt, why = pointing_prompt_builder(fake_embed, settings)(schema, tree, turns)
    assert why == skip
    assert (prompt is None) == (expected is None)
    if prompt is not None:
        assert prompt.text == expected.text and prompt.prompt_version == "memlistener-pointing/4"


def test_the_command_rebuilds_with_its_own_candidate_arguments(tmp_path, history, monkeypatch):
    """--candidate-k / --candidate-threshold / --embedder reach the rebuild (no product setting)."""
    import serving.embedder

    asked = []
    monkeypatch.setattr(serving.embedder, "default_embed", lambda *kind: asked.append(kind) or fake_embed)
    path = tmp_path / "out.jsonl"
    call_command(
        "export_training_data", out=str(path), no_progress=True, rebuild_pointing=True,
        candidate_k=2, candidate_threshold=-1.0,
    )  # fmt: skip
    c8 = next(
        json.loads(raw)
        for raw in path.read_text().splitlines()
        if json.loads(raw)["chunk_id"] == history.chunks["c8"].pk
    )
    settings = CandidateSettings(k=2, threshold=-1.0, filled_threshold=-1.0)
    schema = get_schema(c8["schema_id"], c8["schema_version"])
    expected, _ = pointing_prompt_builder(fake_embed, settings)(schema, c8["tree"], c8["turns"])
    assert asked == [("minilm", "")] and expected is not None
    assert c8["prompt"] == {"static": expected.static, "dynamic": expected.dynamic}
    assert c8["prompt_note"] == "rebuilt with the given candidate settings"


@pytest.mark.parametrize("bad", [{"candidate_k": 0}, {"candidate_threshold": 1.5}])
def test_the_command_refuses_bad_candidate_arguments(tmp_path, bad):
    with pytest.raises(CommandError, match="--candidate"):
        call_command("export_training_data", out=str(tmp_path / "x.jsonl"), no_progress=True, **bad)
