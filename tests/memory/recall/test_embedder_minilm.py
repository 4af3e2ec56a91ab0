"""The default MiniLM embedder runs on transformers alone: FlagEmbedding (the `bge` extra) is only
for BGE-M3 and the reranker. Its vectors equal FlagModel's mean-pooled ones on the same weights."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from serving.embedder import MiniLMEmbedder

TEXTS = ["why did I start swimming?", "my cat Pixel", "", "a much longer query " * 20, "Lisbon, 2019"]


def test_minilm_embeds_without_flagembedding_installed():
    code = (
        "import sys; sys.modules['FlagEmbedding'] = None\n"
        "from serving.embedder import get_embedder\n"
        "v = get_embedder('minilm').embed(['hello', 'a cat named Pixel'])\n"
        "assert v.shape == (2, 384), v.shape\n"
        "assert 'FlagEmbedding' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]


@pytest.mark.parametrize("batch_size", [64, 2])  # one batch, and several length-sorted batches
def test_minilm_matches_flagmodel_mean_pooling(embedder, batch_size):
    flag = pytest.importorskip("FlagEmbedding", reason="the bge extra is not installed")
    ours = MiniLMEmbedder(embedder.path, batch_size=batch_size, max_length=256)
    reference_model = flag.FlagModel(
        embedder.path, pooling_method="mean", normalize_embeddings=True, use_fp16=False, devices="cpu"
    )
    items = [t if t.strip() else " " for t in TEXTS]
    reference = np.asarray(reference_model.encode(items, batch_size=64, max_length=256), dtype=np.float32)
    got = ours.embed(TEXTS)
    assert got.shape == reference.shape == (len(TEXTS), 384)
    assert np.abs(got - reference).max() < 1e-5


def test_minilm_keeps_input_order_across_batches(embedder):
    small = MiniLMEmbedder(embedder.path, batch_size=2)
    together = small.embed(TEXTS)
    one_by_one = np.vstack([small.embed([t]) for t in TEXTS])
    assert np.abs(together - one_by_one).max() < 1e-5
    norms = np.linalg.norm(together, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)
