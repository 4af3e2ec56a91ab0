"""Loading MiniLM on torch (where onnxruntime is not installed) does not import scikit-learn
(transformers' generation module would, for a decoding feature nothing here uses: seconds of CPU in
every process that embeds)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from serving.embedder import MiniLMEmbedder
vectors = MiniLMEmbedder(backend="torch").embed(["I have a dog."])
from transformers.utils import is_sklearn_available
print(vectors.shape, "sklearn" in sys.modules, is_sklearn_available())
"""


def test_minilm_loads_without_scikit_learn():
    out = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.split("\n")[-2] == "(1, 384) False False"
