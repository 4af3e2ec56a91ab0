"""Loading MiniLM imports neither transformers nor scikit-learn: the shipped BERT checkpoint runs
on torch and `tokenizers` alone (transformers' model classes import torch.distributed, dynamo and
fx, and its generation module scikit-learn: seconds of CPU in every process that embeds)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from serving.embedder import get_embedder
vectors = get_embedder("minilm", "").embed(["I have a dog."])
print(vectors.shape, "transformers" in sys.modules, "sklearn" in sys.modules)
"""


def test_minilm_loads_without_transformers_or_scikit_learn():
    out = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.split("\n")[-2] == "(1, 384) False False"
