"""MemListener engines behind one interface (``serving.engines.base.Engine``); ``build_engine``
imports each only when it is built, so importing this package pulls no model runtime."""

from __future__ import annotations

from serving.config import EngineConfig
from serving.engines.base import Engine


def build_engine(config: EngineConfig) -> Engine:
    if config.kind == "recorded":
        from serving.engines.recorded import RecordedEngine

        if not config.recording_path:
            raise ValueError("recorded engine needs engine.recording_path (a JSONL recording file)")
        return RecordedEngine(path=config.recording_path)
    if config.kind == "standin":
        from serving.engines.standin import StandInEngine

        return StandInEngine(mode=config.standin_mode, latency_ms=config.standin_latency_ms)
    if config.kind == "extractive":
        from serving.engines.extractive import ExtractiveEngine

        return ExtractiveEngine()
    if config.kind == "llamacpp":
        from serving.engines.llamacpp import LlamaCppEngine

        return LlamaCppEngine.from_config(config)
    if config.kind == "openai":
        from serving.engines.openai_compat import OpenAICompatEngine

        return OpenAICompatEngine.from_config(config)
    if config.kind == "vllm":
        from serving.engines.vllm_engine import VLLMEngine

        return VLLMEngine.from_config(config)
    raise ValueError(f"unknown engine kind {config.kind!r}")
