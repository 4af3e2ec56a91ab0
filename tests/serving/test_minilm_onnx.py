"""MiniLM on ONNX Runtime (serving/minilm_onnx.py): the graph torch exports gives torch's vectors,
a process embedding with it never imports torch, and without onnxruntime MiniLM runs on torch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from serving import minilm_onnx
from serving.embedder import EmbedderUnavailable, MiniLMEmbedder, one_intraop_thread

pytest.importorskip("onnxruntime", reason="the recall extra is not installed")

# Short and long, numbers, names, punctuation, accents, emoji, CJK, empty, and one past the
# 256-token truncation: what a classifier and a leaf head trained on torch's vectors will see.
SENTENCES = [
    "I'm a data engineer at a logistics startup.",
    "We adopted a rescue greyhound named Biscuit on 3 March 2022!",
    "My knee has been hurting, the physio says no running for a while.",
    "how about you?",
    "ttyl, Bye!",
    "Moved to Lisbon from Toronto for a new job",
    "Ich wohne seit 2019 in München, café crème every morning.",
    "我喜欢游泳 and pottery 🙂",
    "",
    "   ",
    "ok",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.\n"
    "Melanie: That's amazing, how did it feel to share your story?",
    "a very long message about hiking and the mountains near home " * 30,
]


@pytest.fixture(scope="module")
def torch_vectors():
    return MiniLMEmbedder(backend="torch").embed(SENTENCES)


def _last_line(code: str) -> str:
    """What ``code`` prints last, run in a fresh interpreter (what a process imports is tested)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def _assert_same_vectors(got: np.ndarray, reference: np.ndarray) -> None:
    assert got.shape == reference.shape == (len(SENTENCES), 384)
    assert float((got * reference).sum(axis=1).min()) >= 0.9999
    assert float(np.abs(got - reference).max()) < 1e-5


@pytest.mark.integration
@pytest.mark.slow
def test_a_fresh_export_embeds_like_torch(tmp_path, torch_vectors):
    """The path of a machine without the graph: exported into an empty cache, then run."""
    embedder = MiniLMEmbedder(backend="onnx")
    model = minilm_onnx.OnnxMiniLM(embedder.path, max_length=embedder.max_length, directory=tmp_path)
    assert model.graph.parent == tmp_path and model.graph.name.endswith(".onnx")
    assert [p.name for p in tmp_path.iterdir()] == [model.graph.name]  # no partial file left behind
    _assert_same_vectors(embedder._encode(model, [t if t.strip() else " " for t in SENTENCES]), torch_vectors)


def test_the_default_embedder_runs_on_onnx_with_torchs_vectors(torch_vectors):
    embedder = MiniLMEmbedder()
    got = embedder.embed(SENTENCES)
    assert isinstance(embedder.model, minilm_onnx.OnnxMiniLM)
    _assert_same_vectors(got, torch_vectors)
    one_by_one = np.vstack([embedder.embed([t]) for t in SENTENCES])
    assert np.abs(one_by_one - got).max() < 1e-5  # batching (padding) changes nothing


def test_one_intraop_thread_uses_the_one_thread_session_with_the_same_vectors():
    embedder = MiniLMEmbedder()
    wide = embedder.embed(SENTENCES)
    assert embedder.model._one._value is None  # made on first use in a narrow thread
    with one_intraop_thread():
        narrow = embedder.embed(SENTENCES)
    assert embedder.model._one._value is not None
    assert np.abs(narrow - wide).max() < 1e-5


def test_embedding_on_onnx_imports_neither_torch_nor_transformers():
    minilm_onnx.ensure_graph(MiniLMEmbedder().path)  # exported here if this machine has none yet
    code = (
        "import sys\n"
        "from serving.embedder import get_embedder, one_intraop_thread\n"
        "v = get_embedder('minilm').embed(['I have a dog.', 'a cat named Pixel'])\n"
        "with one_intraop_thread():\n"
        "    get_embedder('minilm').embed(['query'])\n"
        "print(v.shape, 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    assert _last_line(code) == "(2, 384) False False"


def test_the_fact_pipeline_loads_spacy_without_torch():
    """thinc would import torch under spaCy; the extractive engine's process needs none of it,
    and torch still imports afterwards for whoever needs it."""
    code = (
        "import sys\n"
        "import serving.engines.extractive\n"
        "from serving.spacy_pipeline import load_pipeline\n"
        "doc = load_pipeline()('I run every morning.')\n"
        "hidden = 'torch' in sys.modules\n"
        "import torch\n"
        "print([t.dep_ for t in doc][:2], hidden, torch.tensor([1]).item())\n"
    )
    assert _last_line(code) == "['nsubj', 'ROOT'] False 1"


def test_a_process_that_has_torch_keeps_it_while_spacy_loads():
    code = (
        "import sys, torch\n"
        "from serving.spacy_pipeline import import_spacy_without_torch\n"
        "import_spacy_without_torch()\n"
        "import thinc.compat\n"
        "print(sys.modules['torch'] is torch, thinc.compat.has_torch)\n"
    )
    assert _last_line(code) == "True True"


def test_without_onnxruntime_minilm_runs_on_torch():
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from serving.embedder import MiniLMEmbedder, EmbedderUnavailable\n"
        "auto = MiniLMEmbedder()\n"
        "v = auto.embed(['I have a dog.'])\n"
        "try:\n"
        "    MiniLMEmbedder(backend='onnx').embed(['x'])\n"
        "except EmbedderUnavailable as exc:\n"
        "    refused = 'onnxruntime' in str(exc)\n"
        "print(v.shape, type(auto.model).__name__, refused)\n"
    )
    assert _last_line(code) == "(1, 384) _TorchMiniLM True"


def test_a_failed_export_falls_back_to_torch(monkeypatch, tmp_path):
    def broken(model_dir, path):
        raise RuntimeError("exporter missing")

    monkeypatch.setattr(minilm_onnx, "export", broken)
    monkeypatch.setattr(minilm_onnx, "cache_dir", lambda: tmp_path)
    with pytest.raises(EmbedderUnavailable, match="exporter missing"):
        MiniLMEmbedder(backend="onnx").embed(["x"])
    auto = MiniLMEmbedder()
    assert auto.embed(["x"]).shape == (1, 384)
    assert type(auto.model).__name__ == "_TorchMiniLM"


def test_the_graph_is_named_after_the_weights_and_the_exporting_packages(tmp_path, monkeypatch):
    weights = tmp_path / "m" / "model.safetensors"
    weights.parent.mkdir()
    weights.write_bytes(b"one")
    first = minilm_onnx.graph_path(str(weights.parent), tmp_path)
    assert minilm_onnx.graph_path(str(weights.parent), tmp_path) == first
    weights.write_bytes(b"other weights")
    assert minilm_onnx.graph_path(str(weights.parent), tmp_path) != first
    second = minilm_onnx.graph_path(str(weights.parent), tmp_path)
    monkeypatch.setattr(minilm_onnx, "package_version", lambda name: "9.9" if name == "torch" else "1.0")
    assert minilm_onnx.graph_path(str(weights.parent), tmp_path) != second


def test_an_unwritable_cache_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setattr(minilm_onnx, "cache_dir", lambda: blocker / "onnx")
    monkeypatch.setitem(sys.modules, "transformers", None)  # loading the model would raise ImportError
    with pytest.raises(minilm_onnx.OnnxUnavailable, match="cannot export") as caught:
        minilm_onnx.ensure_graph(MiniLMEmbedder().path)
    assert not isinstance(caught.value.__cause__, ImportError)
