"""How the rest of the project calls the MemListener: ``get_listener_client(config).run(jobs)``, with
``serving.listener.InProcessClient`` for every backend but ``ray`` (the Serve app's HTTP client, here).
No Django: the config is handed in."""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from serving.config import EngineConfig, check_engine_config
from serving.protocol import ListenerBatch, ListenerBatchResult, ListenerJob, ListenerResult

Backend = Literal["local", "extractive", "ray", "openai", "recorded", "standin"]
_ENGINE_FOR_BACKEND = {
    "local": "llamacpp",
    "extractive": "extractive",
    "openai": "openai",
    "recorded": "recorded",
    "standin": "standin",
}


class ListenerClient(Protocol):
    def run(self, jobs: Sequence[ListenerJob]) -> list[ListenerResult]: ...


class ClientConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Backend = "local"
    url: str = "http://127.0.0.1:8000/memlistener"
    timeout_s: float = Field(default=300.0, gt=0)
    engine: EngineConfig = Field(default_factory=EngineConfig)

    @model_validator(mode="after")
    def _runnable(self) -> ClientConfig:
        check_engine_config(engine_config_for(self))
        return self


class RayServeClient:
    """POSTs batches to the Ray Serve MemListener app. Transport failures become retryable errors."""

    def __init__(
        self, url: str, *, timeout_s: float = 300.0, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.url = url
        self._http = httpx.Client(timeout=timeout_s, transport=transport)

    def run(self, jobs: Sequence[ListenerJob]) -> list[ListenerResult]:
        if not jobs:
            return []
        body = ListenerBatch(jobs=list(jobs)).model_dump(mode="json")
        fail = functools.partial(ListenerResult.failed, jobs)
        try:
            resp = self._http.post(self.url, json=body)
        except httpx.TimeoutException as exc:
            return fail(f"memlistener timeout at {self.url}: {exc}", retryable=True)
        except httpx.TransportError as exc:
            return fail(f"memlistener unreachable at {self.url}: {exc}", retryable=True)
        status = resp.status_code
        if status >= 500 or status in (408, 429):
            return fail(f"memlistener HTTP {status} at {self.url}: {resp.text[:200]}", retryable=True)
        if status >= 400:
            return fail(f"memlistener rejected the batch (HTTP {status}): {resp.text[:500]}", retryable=False)
        try:
            results = ListenerBatchResult.model_validate(resp.json()).results
        except (ValueError, ValidationError) as exc:
            return fail(f"memlistener sent an unreadable reply: {exc}", retryable=True)
        if [r.job_id for r in results] != [j.job_id for j in jobs]:
            return fail("memlistener reply does not match the jobs sent", retryable=True)
        return results

    def close(self) -> None:
        self._http.close()


def engine_config_for(config: ClientConfig) -> EngineConfig:
    """The engine config an in-process backend runs (its kind follows the backend); for ``ray``, as given."""
    kind = _ENGINE_FOR_BACKEND.get(config.backend)
    return config.engine.model_copy(update={"kind": kind}) if kind else config.engine


def build_client(config: ClientConfig) -> ListenerClient:
    if config.backend == "ray":
        return RayServeClient(config.url, timeout_s=config.timeout_s)
    from serving.listener import InProcessClient  # the engine's imports only where it runs

    return InProcessClient(engine_config_for(config))


_clients: dict[str, ListenerClient] = {}
_clients_lock = threading.Lock()


def get_listener_client(config: ClientConfig) -> ListenerClient:
    """The MemListener client for ``config`` (``memory.conf.listener_client_config``), cached per config."""
    key = config.model_dump_json()
    with _clients_lock:
        if key not in _clients:
            _clients[key] = build_client(config)
        return _clients[key]


def reset_listener_clients() -> None:
    """Forget cached clients (tests that change settings)."""
    with _clients_lock:
        _clients.clear()
