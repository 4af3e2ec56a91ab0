"""Ray Serve application of the MemListener (docs/MEMLISTENER.md), configured by ``AppConfig``.

Every job of every request (HTTP ``ListenerBatch`` or ``handle.run.remote``) goes through one
``@serve.batch`` queue, one ``ListenerResult`` each; a bad body is a 422. The model loads in the
constructor, never in ``check_health`` (a minutes-long load outlived Serve's health-check timeout).
``POST <route>/v1/chat/completions`` answers OpenAI chat requests with the same engine."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

from serving import chat_compat, tracing
from serving.config import AppConfig
from serving.engines.base import EngineError, EngineUnavailable, Generation
from serving.protocol import ListenerBatch, ListenerBatchResult, ListenerJob, ListenerResult

if TYPE_CHECKING:
    from serving.listener import MemListener

log = logging.getLogger(__name__)
ROUTE_PREFIX = "/memlistener"
# Groups in the engine at once when it batches across calls (``concurrent_generate``: the async
# vLLM engine, where they join its running batch). Other engines take one group at a time.
CONCURRENT_BATCHES = 8


@serve.deployment(name="MemListener")
class MemListenerDeployment:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = AppConfig.model_validate(config)
        tracing.install()  # PERSONATREE_OTEL: continue the callers' traces (serving/tracing.py)
        self._listener: MemListener | None = None
        self._start_error: Exception | None = None
        self._load_lock = threading.Lock()
        for batcher in (self._run_batch, self._run_batch_concurrent):
            batcher.set_max_batch_size(self.config.max_batch_size)
            batcher.set_batch_wait_timeout_s(self.config.batch_wait_timeout_s)
        self._load()  # the model load: here, so the replica takes traffic only once it is loaded

    def _load(self) -> None:
        """Build the engine and listener once (concurrent callers wait)."""
        with self._load_lock:
            if self._listener is not None or self._start_error is not None:
                return
            from serving.engines import build_engine
            from serving.listener import build_listener

            try:
                engine = build_engine(self.config.engine)
            except Exception as exc:  # reported by check_health and per job
                log.exception("memlistener engine failed to start")
                self._start_error = exc
                return
            self._listener = build_listener(self.config.engine, engine, lenient=self.config.lenient_gate)

    async def start(self) -> None:
        await asyncio.to_thread(self._load)

    def _submit(self, job: ListenerJob):
        engine = self._listener.engine if self._listener is not None else None
        if getattr(engine, "concurrent_generate", False):
            return self._run_batch_concurrent(job)
        return self._run_batch(job)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.05, max_concurrent_batches=CONCURRENT_BATCHES)
    async def _run_batch_concurrent(self, jobs: list[ListenerJob]) -> list[ListenerResult]:
        return await self._run_group(jobs)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.05)
    async def _run_batch(self, jobs: list[ListenerJob]) -> list[ListenerResult]:
        return await self._run_group(jobs)

    async def _run_group(self, jobs: list[ListenerJob]) -> list[ListenerResult]:
        await self.start()
        if self._listener is None:
            msg = f"memlistener engine unavailable: {self._start_error}"
            return ListenerResult.failed(jobs, msg, retryable=True)
        return await asyncio.to_thread(self._listener.run, jobs)

    async def run(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Handle entry point: plain dicts in and out."""
        parsed = ListenerBatch.model_validate({"jobs": jobs}).jobs
        results = await asyncio.gather(*(self._submit(j) for j in parsed))
        return [r.model_dump(mode="json") for r in results]

    async def __call__(self, request: Request) -> JSONResponse:
        if request.url.path.rstrip("/").endswith(chat_compat.CHAT_PATH):
            with tracing.server_span(request.headers, "memlistener.chat"):
                return await self._chat(request)
        with tracing.server_span(request.headers, "memlistener.batch") as span:
            try:
                batch = ListenerBatch.model_validate(await request.json())
            except ValidationError as exc:
                return JSONResponse(
                    {"error": "invalid batch", "detail": exc.errors(include_url=False)}, status_code=422
                )
            except ValueError as exc:
                return JSONResponse({"error": f"body is not JSON: {exc}"}, status_code=400)
            if span is not None:
                span.set_attribute("memlistener.jobs", len(batch.jobs))
            results = await asyncio.gather(*(self._submit(j) for j in batch.jobs))
            if span is not None:
                span.set_attribute("memlistener.errors", sum(1 for r in results if r.error))
            return JSONResponse(ListenerBatchResult(results=list(results)).model_dump(mode="json"))

    async def _chat(self, request: Request) -> JSONResponse:
        try:
            prompt, schema = chat_compat.parse(await request.json())
        except ValueError as exc:  # bad JSON or a request the engine cannot take
            return JSONResponse(chat_compat.error_body(str(exc), "invalid_request_error"), status_code=400)
        await self.start()
        if self._listener is None:
            message = f"memlistener engine unavailable: {self._start_error}"
            return JSONResponse(chat_compat.error_body(message, "engine_unavailable"), status_code=503)
        try:
            (gen,) = await asyncio.to_thread(self._listener.engine.generate, [prompt], schema)
        except EngineError as exc:  # engine-wide: dead (retryable) or refusing, answered as one job's
            gen = Generation(error=str(exc), retryable=exc.retryable)
        status, body = chat_compat.completion(gen)
        return JSONResponse(body, status_code=status)

    async def check_health(self) -> None:
        """Never loads: reports a failed load, or asks the loaded engine."""
        if self._listener is None:
            raise EngineUnavailable(f"memlistener engine failed to start: {self._start_error}")
        self._listener.engine.check_health()


def build_app(args: dict[str, Any] | None = None) -> serve.Application:
    """Application builder for ``serve run`` / ``serve deploy``; ``args`` is an AppConfig dict."""
    config = AppConfig.model_validate(args or {})
    return MemListenerDeployment.options(  # type: ignore[attr-defined]  # a Deployment (ray is not analysed)
        **config.replica_options(),
        max_ongoing_requests=config.max_ongoing_requests,
        ray_actor_options={"num_cpus": config.num_cpus, "num_gpus": config.num_gpus},
    ).bind(config.model_dump(mode="json"))
