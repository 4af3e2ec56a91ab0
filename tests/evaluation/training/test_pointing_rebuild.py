"""--rebuild-pointing: the rebuilt pointing prompt equals the listener's for the same embedder."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from evaluation.training.cosine import CandidateSettings, LeafIndex, PointingStep
from evaluation.training.pointing import pointing_prompt_builder
from memory import conf
from memory.engine.schema import get_schema
from memory.engine.tree import Tree
from serving.client import ClientConfig
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
    config = conf.listener_client_config(ClientConfig).engine
    step = PointingStep(
        LeafIndex(fake_embed),
        CandidateSettings(
            k=config.candidate_k,
            threshold=config.candidate_threshold,
            filled_threshold=config.candidate_threshold,
        ),
    )
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
    prompt, why = pointing_prompt_builder(embed=fake_embed)(schema, tree, turns)
    assert why == skip
    assert (prompt is None) == (expected is None)
    if prompt is not None:
        assert prompt.text == expected.text and prompt.prompt_version == "memlistener-pointing/4"
