"""How the rest of the project calls the MemListener.

``get_listener_client(config)`` returns an object with ``run(jobs) -> list[ListenerResult]``:

- ``local``    : in-process MemListener on the llama.cpp engine (the embedded default);
- ``openai``   : in-process MemListener on an OpenAI-compatible endpoint;
- ``recorded`` : in-process MemListener replaying a recording file (tests, demos without a model);
- ``standin``  : in-process MemListener on the zero-latency stand-in (backend benchmarks only);
- ``ray``      : HTTP client of the Ray Serve MemListener app (``serving.app``).

Nothing here touches Django: the configuration is passed in (the Django side makes it from its
settings with ``memory.conf.listener_client_config(ClientConfig)``), so Ray workers import this module
without Django.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from serving.config import EngineConfig, check_engine_config
from serving.lazy import Lazy
from serving.protocol import ListenerBatch, ListenerBatchResult, ListenerJob, ListenerResult, ListenerTurn

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


def _error_results(jobs: Sequence[ListenerJob], message: str, *, retryable: bool) -> list[ListenerResult]:
    return [ListenerResult(job_id=j.job_id, error=message, retryable=retryable) for j in jobs]


#: A statement every step of the fact pipeline reads (a clause to classify, place, rewrite and date).
_WARM_UP_TEXT = "I moved to Lisbon last week and I work as a nurse at the children's hospital."


class InProcessClient:
    """Runs a MemListener in this process. The engine is built on first use (model load is slow)."""

    def __init__(self, engine_config: EngineConfig) -> None:
        self.engine_config = engine_config
        self._listener = Lazy(self._build)
        self._lock = threading.Lock()

    def _build(self):
        from serving.listener import build_listener

        return build_listener(self.engine_config)

    @property
    def listener(self):
        return self._listener.get()

    def warm(self, schema_id: str, schema_version: int) -> None:
        """Load what the first real job would (engine, embedder, classifier, the schema's leaf vectors,
        the rewriter's tables) with one throw-away job: a caller with other work to do first (a
        backfill storing its messages) runs this in a thread, and its first ``run`` waits for it."""
        from datetime import UTC, datetime

        turns = [
            ListenerTurn(role="user", content=_WARM_UP_TEXT, ts=datetime(2024, 1, 19, tzinfo=UTC)),
            ListenerTurn(role="assistant", content="That sounds like a big change."),
        ]
        self.run([ListenerJob(job_id="warm-up", subject_id="warm-up", base_version=0, schema_id=schema_id,
                              schema_version=schema_version, tree={}, turns=turns)])  # fmt: skip

    def prefetch(self, jobs: Sequence[ListenerJob]) -> int:
        """Do ahead, for many jobs at once, what the listener's pointing step does for each job
        without its tree (clauses, parse, embeddings, verdicts, leaves); a later ``run`` of the same
        turns picks it up. For a caller that knows its next chunks (a backfill). Returns the chunks
        analysed; 0 when the listener has no fact pipeline or the engine cannot start."""
        try:
            listener = self.listener
        except Exception:  # noqa: BLE001 - the real run reports it
            return 0
        pointing = getattr(listener, "pointing", None)
        if pointing is None or not jobs:
            return 0
        groups: dict[tuple, tuple[object, str, list]] = {}
        for job in jobs:
            try:
                schema, digest = listener.job_schema(job)
            except Exception:  # noqa: BLE001 - a bad job is reported by its run
                continue
            group = groups.setdefault((schema.key, digest), (schema, digest, []))
            group[2].append([t.model_dump() for t in job.turns])
        done = 0
        with self._lock:
            for schema, digest, turns_list in groups.values():
                done += pointing.prefetch(schema, turns_list, digest=digest or None)
        return done

    def run(self, jobs: Sequence[ListenerJob]) -> list[ListenerResult]:
        if not jobs:
            return []
        try:
            listener = self.listener
        except Exception as exc:  # engine could not start: model file missing, runtime absent...
            return _error_results(jobs, f"memlistener engine unavailable: {exc}", retryable=True)
        with self._lock:  # one generate at a time per in-process engine (llama.cpp is not reentrant)
            return listener.run(list(jobs))


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
        try:
            resp = self._http.post(self.url, json=body)
        except httpx.TimeoutException as exc:
            return _error_results(jobs, f"memlistener timeout at {self.url}: {exc}", retryable=True)
        except httpx.TransportError as exc:
            return _error_results(jobs, f"memlistener unreachable at {self.url}: {exc}", retryable=True)
        if resp.status_code >= 500 or resp.status_code in (408, 429):
            return _error_results(
                jobs, f"memlistener HTTP {resp.status_code} at {self.url}: {resp.text[:200]}", retryable=True
            )
        if resp.status_code >= 400:
            return _error_results(
                jobs,
                f"memlistener rejected the batch (HTTP {resp.status_code}): {resp.text[:500]}",
                retryable=False,
            )
        try:
            results = ListenerBatchResult.model_validate(resp.json()).results
        except (ValueError, ValidationError) as exc:
            return _error_results(jobs, f"memlistener sent an unreadable reply: {exc}", retryable=True)
        if [r.job_id for r in results] != [j.job_id for j in jobs]:
            return _error_results(jobs, "memlistener reply does not match the jobs sent", retryable=True)
        return results

    def close(self) -> None:
        self._http.close()


def engine_config_for(config: ClientConfig) -> EngineConfig:
    """The engine config an in-process backend runs (its kind follows the backend); for ``ray``,
    the engine settings as given (the Ray app has its own)."""
    kind = _ENGINE_FOR_BACKEND.get(config.backend)
    return config.engine.model_copy(update={"kind": kind}) if kind else config.engine


def build_client(config: ClientConfig) -> ListenerClient:
    if config.backend == "ray":
        return RayServeClient(config.url, timeout_s=config.timeout_s)
    return InProcessClient(engine_config_for(config))


_clients: dict[str, ListenerClient] = {}
_clients_lock = threading.Lock()


def get_listener_client(config: ClientConfig) -> ListenerClient:
    """The MemListener client for ``config`` (from Django settings:
    ``memory.conf.listener_client_config(ClientConfig)``), cached per config."""
    key = config.model_dump_json()
    with _clients_lock:
        if key not in _clients:
            _clients[key] = build_client(config)
        return _clients[key]


def reset_listener_clients() -> None:
    """Forget cached clients (tests that change settings)."""
    with _clients_lock:
        _clients.clear()
