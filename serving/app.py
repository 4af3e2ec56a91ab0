"""Ray Serve application of the MemListener.

``MemListenerDeployment`` accepts batches of jobs (HTTP POST of ``ListenerBatch`` JSON, or
``handle.run.remote([...])``), feeds every job into one ``@serve.batch`` queue so concurrent
requests are grouped into a single engine call, and returns one ``ListenerResult`` per job
(ops + rejections + parse errors + token counts + latency). Nothing raises past the deployment:
a malformed body is a 422 with the validation errors, engine failures are per-job errors.

Configuration is ``serving.config.AppConfig`` (pydantic), passed explicitly as the application
args (``serve run serving/config/cpu.yaml``), so this module never imports Django.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pydantic import ValidationError
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

from serving.config import AppConfig
from serving.engines.base import EngineUnavailable
from serving.protocol import ListenerBatch, ListenerBatchResult, ListenerJob, ListenerResult

log = logging.getLogger(__name__)
ROUTE_PREFIX = "/memlistener"


@serve.deployment(name="MemListener")
class MemListenerDeployment:
    def __init__(self, config: dict[str, Any]) -> None:
        # Cheap: validate only. The engine (model load) starts in start(), awaited lazily.
        self.config = AppConfig.model_validate(config)
        self._listener = None
        self._start_error: Exception | None = None
        self._run_batch.set_max_batch_size(self.config.max_batch_size)
        self._run_batch.set_batch_wait_timeout_s(self.config.batch_wait_timeout_s)

    async def start(self) -> None:
        if self._listener is not None or self._start_error is not None:
            return
        from serving.engines import build_engine
        from serving.listener import build_listener

        try:
            engine = await asyncio.to_thread(build_engine, self.config.engine)
        except Exception as exc:  # reported by check_health and per job
            log.exception("memlistener engine failed to start")
            self._start_error = exc
            return
        # One factory for every path: max_ops, the prompt mode and the candidate settings of the
        # YAML's engine config all reach the listener.
        self._listener = build_listener(self.config.engine, engine, lenient=self.config.lenient_gate)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.05)
    async def _run_batch(self, jobs: list[ListenerJob]) -> list[ListenerResult]:
        await self.start()
        if self._listener is None:
            msg = f"memlistener engine unavailable: {self._start_error}"
            return [ListenerResult(job_id=j.job_id, error=msg, retryable=True) for j in jobs]
        return await asyncio.to_thread(self._listener.run, jobs)

    async def run(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Handle entry point: plain dicts in and out (only plain data crosses the RPC boundary)."""
        parsed = ListenerBatch.model_validate({"jobs": jobs}).jobs
        results = await asyncio.gather(*(self._run_batch(j) for j in parsed))
        return [r.model_dump(mode="json") for r in results]

    async def __call__(self, request: Request) -> JSONResponse:
        try:
            batch = ListenerBatch.model_validate(await request.json())
        except ValidationError as exc:
            return JSONResponse(
                {"error": "invalid batch", "detail": exc.errors(include_url=False)}, status_code=422
            )
        except ValueError as exc:
            return JSONResponse({"error": f"body is not JSON: {exc}"}, status_code=400)
        results = await asyncio.gather(*(self._run_batch(j) for j in batch.jobs))
        return JSONResponse(ListenerBatchResult(results=list(results)).model_dump(mode="json"))

    async def check_health(self) -> None:
        await self.start()
        if self._listener is None:
            raise EngineUnavailable(f"memlistener engine failed to start: {self._start_error}")
        self._listener.engine.check_health()


def build_app(args: dict[str, Any] | None = None) -> serve.Application:
    """Application builder for ``serve run`` / ``serve deploy``; ``args`` is an AppConfig dict."""
    config = AppConfig.model_validate(args or {})
    return MemListenerDeployment.options(
        num_replicas=config.num_replicas,
        max_ongoing_requests=config.max_ongoing_requests,
        ray_actor_options={"num_cpus": config.num_cpus, "num_gpus": config.num_gpus},
    ).bind(config.model_dump(mode="json"))
