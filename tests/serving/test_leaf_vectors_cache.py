"""The fact pipeline's leaf vectors kept on disk: a second process (a new FactStep) loads what the
first embedded, unchanged; other leaf texts get their own file; an unreadable file is embedded again."""

from __future__ import annotations

import numpy as np

from memory.engine.schema import default_schema
from serving.facts import FactStep


class CountingEmbed:
    def __init__(self, seed: int = 0):
        self.seed = seed
        self.calls: list[int] = []

    def __call__(self, texts):
        self.calls.append(len(texts))
        rng = np.random.default_rng([self.seed, len(self.calls)])
        return rng.standard_normal((len(texts), 8)).astype(np.float32)


def _matrix(step: FactStep):
    _placer, vectors = step.placer(default_schema(), "")
    return vectors._matrix


def test_a_new_process_loads_the_leaf_vectors_the_first_embedded(tmp_path):
    first, second = CountingEmbed(1), CountingEmbed(2)
    a = _matrix(FactStep(first, cache_dir=tmp_path))
    b = _matrix(FactStep(second, cache_dir=tmp_path))
    assert len(first.calls) == 1 and first.calls[0] > 200
    assert second.calls == []  # loaded, not embedded
    assert np.array_equal(a, b)  # and unchanged (the second embed would have drawn other numbers)
    assert len(list(tmp_path.glob("leaf-vectors-*.npy"))) == 1


def test_without_a_directory_every_step_embeds(tmp_path):
    embed = CountingEmbed()
    _matrix(FactStep(embed))
    _matrix(FactStep(embed))
    assert len(embed.calls) == 2


def test_an_unreadable_file_is_embedded_again_and_rewritten(tmp_path):
    _matrix(FactStep(CountingEmbed(), cache_dir=tmp_path))
    (path,) = tmp_path.glob("leaf-vectors-*.npy")
    path.write_bytes(b"not a numpy file")
    again = CountingEmbed()
    _matrix(FactStep(again, cache_dir=tmp_path))
    assert len(again.calls) == 1
    assert np.load(path).shape[0] == again.calls[0]


def test_other_leaf_texts_get_their_own_file(tmp_path):
    step = FactStep(CountingEmbed(), cache_dir=tmp_path)
    step._leaf_vectors(["a: one", "b: two"])
    step._leaf_vectors(["a: one", "b: three"])
    assert len(list(tmp_path.glob("leaf-vectors-*.npy"))) == 2


def test_warm_leaves_what_the_local_settings_load(tmp_path, monkeypatch):
    """`make venv` runs serving.warm: the default schema's leaf vectors land in the machine cache
    (where the local settings point the fact pipeline), so a first process embeds no leaf text."""
    from serving import warm
    from serving.minilm_onnx import cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    graphs = []
    monkeypatch.setattr(warm, "ensure_graph", graphs.append)  # the export has its own (slow) test
    monkeypatch.setattr(warm, "default_embed", lambda kind: CountingEmbed(3))
    warm.warm()
    assert len(graphs) == 1
    assert list(cache_dir("leaf-vectors").glob("leaf-vectors-*.npy"))
    loaded = CountingEmbed(4)
    _matrix(FactStep(loaded, cache_dir=cache_dir("leaf-vectors")))
    assert loaded.calls == []
