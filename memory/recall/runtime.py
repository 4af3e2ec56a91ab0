"""Process-wide recall components built from `settings.PERSONATREE` (lazily, once per process).

- embedder: `EMBEDDER` (minilm | bge-m3) + `EMBEDDER_PATH`;
- evidence index: `MILVUS_URI` (a Milvus Lite file, one process per file, or a
  server URI), `MILVUS_TOKEN`, `MILVUS_COLLECTION`;
- reranker: `RERANKER_PATH` (empty = no reranker: fused ranks stand);
- recall config: `RECALL_STRATEGY` (how the hybrid searches are sent, see search.py);
- responder engine (query expansion and answers): `RESPONDER_BACKEND`
  (local | openai | recorded | none) through `serving.engines.build_engine`.
"""

from __future__ import annotations

import logging
import threading

from serving.embedder import Embedder, get_embedder

from .agentic import RecallConfig
from .index import EvidenceIndex
from .rerank import Reranker, get_reranker
from .search import STRATEGIES

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_state: dict = {}

_ENGINE_KIND = {"local": "llamacpp", "openai": "openai", "recorded": "recorded", "standin": "standin"}


def _pt() -> dict:
    from django.conf import settings

    return settings.PERSONATREE


def configured_embedder() -> Embedder:
    pt = _pt()
    return get_embedder(pt.get("EMBEDDER", "minilm"), pt.get("EMBEDDER_PATH", ""))


def configured_index() -> EvidenceIndex:
    pt = _pt()
    key = ("index", pt["MILVUS_URI"], pt.get("MILVUS_COLLECTION", "evidence"))
    with _lock:
        if key not in _state:
            from pathlib import Path

            uri = pt["MILVUS_URI"]
            if "://" not in uri:
                Path(uri).parent.mkdir(parents=True, exist_ok=True)
            _state[key] = EvidenceIndex(
                uri,
                dim=configured_embedder().dim,
                collection=pt.get("MILVUS_COLLECTION", "evidence"),
                token=pt.get("MILVUS_TOKEN", ""),
                timeout=float(pt.get("MILVUS_TIMEOUT_S", 10.0)),
                flush_idle_s=float(pt.get("EVIDENCE_FLUSH_IDLE_S", 10.0)),
            )
        return _state[key]


def configured_reranker() -> Reranker | None:
    path = _pt().get("RERANKER_PATH", "")
    return get_reranker(path) if path else None


def recall_config() -> RecallConfig:
    strategy = _pt().get("RECALL_STRATEGY", RecallConfig.strategy)
    if strategy not in STRATEGIES:
        raise ValueError(f"PERSONATREE_RECALL_STRATEGY={strategy!r}: expected one of {', '.join(STRATEGIES)}")
    return RecallConfig(strategy=strategy)


def responder_engine():
    """The engine for expansion and answers, or None with the reason (never raises)."""
    pt = _pt()
    backend = pt.get("RESPONDER_BACKEND", "local")
    if backend == "none":
        return None, "no responder model configured (PERSONATREE_RESPONDER_BACKEND=none)"
    key = ("engine", backend)
    with _lock:
        if key in _state:
            return _state[key]
        try:
            from serving.config import EngineConfig
            from serving.engines import build_engine

            kind = _ENGINE_KIND.get(backend)
            if kind is None:
                raise ValueError(f"unknown RESPONDER_BACKEND {backend!r}")
            config = EngineConfig(
                kind=kind,
                max_tokens=pt.get("RESPONDER_MAX_TOKENS", 256),
                model_path=pt.get("LOCAL_MODEL_PATH", ""),
                base_url=pt.get("OPENAI_BASE_URL", ""),
                api_key=pt.get("OPENAI_API_KEY", ""),
                model=pt.get("OPENAI_MODEL", ""),
                recording_path=pt.get("RESPONDER_RECORDING_PATH", ""),
            )
            engine = build_engine(config)
        except Exception as exc:  # noqa: BLE001 - a missing model degrades the response, never crashes it
            logger.warning("responder engine %s unavailable: %s", backend, exc)
            return None, f"responder model unavailable ({backend}): {exc}"  # not cached: retried next call
        _state[key] = (SerializedEngine(engine), "")
        return _state[key]


class SerializedEngine:
    """One generate at a time per in-process engine (llama.cpp is not reentrant; web threads share it)."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.model_id = getattr(engine, "model_id", "")
        self._lock = threading.Lock()

    def generate(self, prompts, json_schema=None):
        with self._lock:
            return self.engine.generate(prompts, json_schema)


def reset_runtime() -> None:
    """Forget cached components (tests that change settings). Closes open index clients."""
    with _lock:
        for value in _state.values():
            if isinstance(value, EvidenceIndex):
                value.close()
        _state.clear()
