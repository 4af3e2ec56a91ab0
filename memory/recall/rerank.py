"""Cross-encoder reranking (FlagEmbedding's FlagReranker), used when a reranker path is configured."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import lru_cache

from serving.lazy import Lazy


class RerankerUnavailable(RuntimeError):
    pass


class Reranker:
    def __init__(self, path: str, *, max_length: int = 512, batch_size: int = 32) -> None:
        self.path = path
        self.max_length = max_length
        self.batch_size = batch_size
        self._model = Lazy(self._load)
        self._lock = threading.Lock()

    def _load(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from FlagEmbedding import FlagReranker

            return FlagReranker(self.path, use_fp16=False, devices="cpu")
        except Exception as exc:  # noqa: BLE001
            raise RerankerUnavailable(f"cannot load reranker from {self.path}: {exc}") from exc

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Relevance in [0, 1] (sigmoid of the cross-encoder logit) for each text, same order."""
        if not texts:
            return []
        model = self._model.get()
        with self._lock:
            scores = model.compute_score(
                [(query, t) for t in texts],
                normalize=True,
                max_length=self.max_length,
                batch_size=self.batch_size,
            )
        if isinstance(scores, float | int):
            scores = [scores]
        return [float(s) for s in scores]


@lru_cache(maxsize=2)
def get_reranker(path: str) -> Reranker:
    return Reranker(path)
