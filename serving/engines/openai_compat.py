"""Any OpenAI-compatible chat endpoint (a vLLM server, a hosted API) via the ``openai`` client.

Retries are the client's (backoff honouring ``Retry-After``); errors after them are per-job results,
retryable unless a human must act (credentials, exhausted quota) or the request was refused (a 400).
Constrained output through ``response_format={"type": "json_schema", ...}``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai

from serving.config import EngineConfig
from serving.engines.base import EngineUnavailable, Generation, Prompt

MAX_CONCURRENCY = 8  # requests in flight per generate call


def classify_error(exc: Exception) -> tuple[str, bool]:
    """(message, retryable) for an exception raised by the openai client."""
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"endpoint refused the credentials (HTTP {exc.status_code}): check OPENAI_API_KEY", False
    if isinstance(exc, openai.RateLimitError):
        body = exc.body if isinstance(exc.body, dict) else {}
        err = body.get("error")
        code = body.get("code") or (err.get("code") if isinstance(err, dict) else None)
        if code == "insufficient_quota":
            return "endpoint quota exhausted (HTTP 429 insufficient_quota)", False
        return "endpoint rate limit (HTTP 429) persisted after retries", True
    if isinstance(exc, openai.APITimeoutError):
        return "endpoint timed out after retries", True
    if isinstance(exc, openai.APIConnectionError):
        return f"endpoint unreachable after retries: {exc}", True
    if isinstance(exc, openai.InternalServerError):
        return f"endpoint server error (HTTP {exc.status_code}) after retries", True
    if isinstance(exc, openai.APIStatusError):
        return (
            f"endpoint rejected the request (HTTP {exc.status_code}): {exc.message}",
            exc.status_code >= 500,
        )
    return f"endpoint call failed: {exc!r}", True


class OpenAICompatEngine:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        max_tokens: int = 256,
        temperature: float = 0.0,
    ) -> None:
        if not base_url or not model:
            raise ValueError("openai engine needs base_url and model (PERSONATREE_OPENAI_BASE_URL / _MODEL)")
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=max_retries
        )
        self.model = model
        self.model_id = f"openai:{model}"
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._closed = False

    @classmethod
    def from_config(cls, config: EngineConfig) -> OpenAICompatEngine:
        fields = {"base_url", "model", "api_key", "timeout_s", "max_retries", "max_tokens", "temperature"}
        return cls(**config.model_dump(include=fields))

    def _one(self, prompt: Prompt, json_schema: dict[str, Any] | None) -> Generation:
        kwargs: dict[str, Any] = {}
        if json_schema:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "memlistener_ops", "schema": json_schema, "strict": True},
            }
        start = time.perf_counter()
        try:
            resp = self._client.chat.completions.create(
                model=self.model,
                messages=prompt.messages(),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                **kwargs,
            )
        except openai.OpenAIError as exc:
            message, retryable = classify_error(exc)
            return Generation(model_id=self.model_id, error=message, retryable=retryable)
        usage = resp.usage
        return Generation(
            text=(resp.choices[0].message.content or "") if resp.choices else "",
            model_id=f"openai:{resp.model or self.model}",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_ms=(time.perf_counter() - start) * 1000,
        )

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        self.check_health()
        if len(prompts) == 1:
            return [self._one(prompts[0], json_schema)]
        with ThreadPoolExecutor(max_workers=min(MAX_CONCURRENCY, len(prompts))) as pool:
            return list(pool.map(lambda p: self._one(p, json_schema), prompts))

    def check_health(self) -> None:
        if self._closed:
            raise EngineUnavailable("openai engine is closed")

    def close(self) -> None:
        self._closed = True
        self._client.close()
