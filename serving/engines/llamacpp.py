"""llama.cpp engine (llama-cpp-python): the embedded CPU default, running a local GGUF.

The output JSON schema is compiled once into a ``LlamaGrammar``. Prompts run one after another; the
KV cache of the previous one is reused up to the common prefix, so the static part is computed once."""

from __future__ import annotations

import atexit
import json
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from serving.config import EngineConfig
from serving.engines.base import EngineError, EngineUnavailable, Generation, Prompt

_LOAD_LOCK = threading.Lock()


def load_llama(**kwargs: Any):
    """``llama_cpp.Llama(**kwargs)`` with llama.cpp's extra CPU buffer types off: on AVX-512 + AMX,
    llama-cpp-python 0.3.36 segfaults in the first ``decode`` with them. ``Llama`` takes no argument
    for it, so the default-params factory is swapped during the constructor (under a lock)."""
    import llama_cpp.llama as llama_mod
    from llama_cpp import Llama

    lib = llama_mod.llama_cpp
    with _LOAD_LOCK:
        original = lib.llama_model_default_params

        def params_without_extra_bufts():
            params = original()
            params.use_extra_bufts = False
            return params

        lib.llama_model_default_params = params_without_extra_bufts
        try:
            return Llama(**kwargs)
        finally:
            lib.llama_model_default_params = original


def _close_at_exit(ref) -> None:
    engine = ref()
    if engine is not None:
        engine.close()


# llama-cpp-python chat formats that silently drop a system message (Gemma has no system role).
NO_SYSTEM_ROLE = frozenset({"gemma"})


def chat_messages(prompt: Prompt, chat_format: str | None) -> list[dict[str, str]]:
    """The prompt as chat messages; one user message (static first) when the format has no system role."""
    if chat_format in NO_SYSTEM_ROLE:
        return [{"role": "user", "content": prompt.static + prompt.dynamic}]
    return prompt.messages()


def registered_identity(path: Path) -> tuple[str | None, str, str | None]:
    """(model id, version, chat format) of a GGUF file for the audit log: a pinned model's by its size
    (``make model`` verified its SHA-256), a trained checkpoint's from its card ``<file>.json``
    (``python -m evaluation.training.gguf to-gguf``), else ``(None, "", None)``: the file name."""
    from serving.models import MODELS

    size = path.stat().st_size if path.is_file() else -1
    for m in MODELS.values():
        if size == m.size:
            return m.model_id, "", m.chat_format
    card = path.with_name(path.name + ".json")
    if card.is_file():
        try:
            data = json.loads(card.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EngineError(f"unreadable model card {card.name}: {exc}", retryable=False) from exc
        if isinstance(data, dict) and isinstance(data.get("model_id"), str) and data["model_id"]:
            return data["model_id"], str(data.get("version") or ""), None
    return None, "", None


class LlamaCppEngine:
    def __init__(
        self,
        model_path: str | Path,
        *,
        model_id: str | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        chat_format: str | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        prompt_cache_dir: str | Path | None = None,
    ) -> None:
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:  # optional component: the local-llm extra
            raise EngineUnavailable("llama-cpp-python is not installed (pip install '.[local-llm]')") from exc
        path = Path(model_path)
        if not path.is_file():
            raise EngineUnavailable(f"local model file not found: {path} (run `make model`)")
        self._llm = load_llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_batch=512,
            chat_format=chat_format,
            seed=seed,
            verbose=False,
        )
        if prompt_cache_dir:
            from llama_cpp import LlamaDiskCache

            # One directory per model file: the cache is keyed by tokens only, and two models with one
            # tokenizer (Qwen 0.5B / 1.5B) would load each other's KV state ("Failed to set llama state").
            cache_dir = Path(prompt_cache_dir) / f"{path.stem}-{path.stat().st_size}"
            self._llm.set_cache(LlamaDiskCache(cache_dir=str(cache_dir), capacity_bytes=2 << 30))
        self.chat_format = chat_format
        self.model_id = model_id or path.stem
        self.model_version = ""
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._grammars: dict[str, Any] = {}
        self._lock = threading.Lock()
        # Free llama.cpp's sampler and context before the interpreter tears modules down: left to the
        # garbage collector at exit, llama-cpp-python's destructors print
        # "TypeError: 'NoneType' object is not callable".
        atexit.register(_close_at_exit, weakref.ref(self))

    @classmethod
    def from_config(cls, config: EngineConfig) -> LlamaCppEngine:
        model_id, model_version, chat_format = registered_identity(Path(config.model_path))
        engine = cls(
            config.model_path,
            model_id=model_id,
            n_ctx=config.n_ctx,
            n_threads=config.n_threads,
            chat_format=config.chat_format or chat_format,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            prompt_cache_dir=config.prompt_cache_dir or None,
        )
        engine.model_version = model_version
        return engine

    def _grammar(self, json_schema: dict[str, Any]):
        from llama_cpp import LlamaGrammar

        key = json.dumps(json_schema, sort_keys=True)
        if key not in self._grammars:
            # Built from the schema as written, not from the sorted cache key: the grammar emits
            # properties in schema order, and sorted keys ("leaf" before "op") left the pointing
            # schema's write ops unreachable for a model that starts with "op" (it wrote only NO_OP).
            self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
        return self._grammars[key]

    def _one(self, prompt: Prompt, grammar) -> Generation:
        start = time.perf_counter()
        try:
            out = self._llm.create_chat_completion(
                messages=chat_messages(prompt, self.chat_format),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                grammar=grammar,
            )
        except ValueError as exc:  # e.g. prompt longer than the context window: this job only
            return Generation(
                model_id=self.model_id, error=f"llama.cpp rejected the prompt: {exc}", retryable=False
            )
        usage = out.get("usage") or {}
        return Generation(
            text=out["choices"][0]["message"].get("content") or "",
            model_id=self.model_id,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_ms=(time.perf_counter() - start) * 1000,
        )

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        self.check_health()
        with self._lock:
            grammar = self._grammar(json_schema) if json_schema else None
            return [self._one(p, grammar) for p in prompts]

    def check_health(self) -> None:
        if self._llm is None:
            raise EngineUnavailable("llama.cpp engine is closed")

    def close(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.close()
