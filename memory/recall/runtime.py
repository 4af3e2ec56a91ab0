"""Process-wide recall components (embedder, evidence index, reranker, responder engine), built
lazily from the typed settings' ``recall`` and ``answer`` sections, once per process.
"""

from __future__ import annotations

import logging
import threading

from memory import conf
from serving.embedder import Embedder, get_embedder

from .agentic import RecallConfig
from .index import EvidenceIndex
from .rerank import Reranker, get_reranker

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_state: dict = {}
_said: set[str] = set()  # unavailability causes already logged as warnings


def configured_embedder() -> Embedder:
    rc = conf.get().recall
    return get_embedder(rc.embedder, rc.embedder_path)


def configured_index() -> EvidenceIndex:
    rc = conf.get().recall
    key = ("index", rc.milvus_uri, rc.milvus_collection)
    with _lock:
        if key not in _state:
            from pathlib import Path

            if "://" not in rc.milvus_uri:
                Path(rc.milvus_uri).parent.mkdir(parents=True, exist_ok=True)
            _state[key] = EvidenceIndex(
                rc.milvus_uri,
                dim=configured_embedder().dim,
                collection=rc.milvus_collection,
                token=rc.milvus_token,
                timeout=rc.milvus_timeout_s,
                flush_idle_s=rc.flush_idle_s,
            )
        return _state[key]


def configured_reranker() -> Reranker | None:
    path = conf.get().recall.reranker_path
    return get_reranker(path) if path else None


def recall_config() -> RecallConfig:
    """The recall configuration; a bad ``PERSONATREE_RECALL_STRATEGY`` is a ``conf.SettingsError``."""
    return RecallConfig(strategy=conf.get().recall.strategy)


def responder_engine():
    """The engine for expansion and answers, or None with the reason (never raises)."""
    try:
        s = conf.get()
    except conf.SettingsError as exc:
        return None, f"responder unavailable: {exc}"
    backend = s.answer.backend
    if backend == "none":
        return None, "no responder model configured (PERSONATREE_RESPONDER_BACKEND=none)"
    key = ("engine", backend)
    with _lock:
        if key in _state:
            return _state[key]
        try:
            from serving.client import ClientConfig, engine_config_for
            from serving.engines import build_engine

            answer = {"max_tokens": s.answer.max_tokens, "recording_path": s.answer.recording_path}
            config = ClientConfig(backend=backend, engine=s.models.model_dump() | answer)
            engine = build_engine(engine_config_for(config))  # the engine kind of the backend
        except Exception as exc:  # noqa: BLE001 - a missing model degrades the response, never crashes it
            # Not cached: retried next call (a model file may appear); said once per cause, not per query.
            reason = f"responder engine {backend} unavailable: {exc}"
            level = logging.DEBUG if reason in _said else logging.WARNING
            _said.add(reason)
            logger.log(level, "%s", reason)
            return None, f"responder model unavailable ({backend}): {exc}"
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
        _said.clear()
