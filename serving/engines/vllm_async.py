"""Plumbing of the async vLLM engine that needs no vLLM: its event-loop thread and its scheduler stats.

``EngineLoop`` runs one asyncio loop in a daemon thread, where ``AsyncLLM`` lives; Ray Serve's
worker threads submit coroutines to it, so their sequences share the scheduler's batches."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

T = TypeVar("T")


class EngineLoop:
    """An asyncio event loop in its own daemon thread, for objects that must live on one loop."""

    def __init__(self, name: str = "vllm-async") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule ``coro`` on the loop from any other thread; its result is the future's."""
        if not self.alive:
            coro.close()
            raise RuntimeError("the engine loop is stopped")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for it (never call this from the loop's own thread)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("EngineLoop.run called from the loop thread (would deadlock)")
        return self.submit(coro).result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel what is still pending, stop the loop and join the thread. Idempotent."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():

            async def _cancel_rest() -> None:
                current = asyncio.current_task()
                rest = [t for t in asyncio.all_tasks() if t is not current]
                for task in rest:
                    task.cancel()
                await asyncio.gather(*rest, return_exceptions=True)

            try:
                self.submit(_cancel_rest()).result(timeout)
            except Exception:  # a task that refuses to die must not block shutdown
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()


@dataclass
class StatsSnapshot:
    steps: int = 0
    running: int = 0
    waiting: int = 0
    peak_running: int = 0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """Cached prompt tokens over prompt tokens looked up; None before any lookup."""
        if not self.prefix_cache_queries:
            return None
        return self.prefix_cache_hits / self.prefix_cache_queries

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "prefix_cache_hit_rate": self.prefix_cache_hit_rate}


class SchedulerStats:
    """Totals of vLLM's per-step ``SchedulerStats``, thread-safe; fields read by attribute, so a renamed
    one shows as zero rather than breaking generation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now = StatsSnapshot()

    def record(self, scheduler_stats: Any) -> None:
        if scheduler_stats is None:
            return
        running = int(getattr(scheduler_stats, "num_running_reqs", 0) or 0)
        prefix = getattr(scheduler_stats, "prefix_cache_stats", None)
        with self._lock:
            now = self._now
            now.steps += 1
            now.running, now.waiting = running, int(getattr(scheduler_stats, "num_waiting_reqs", 0) or 0)
            now.peak_running = max(now.peak_running, running)
            now.prefix_cache_queries += int(getattr(prefix, "queries", 0) or 0)
            now.prefix_cache_hits += int(getattr(prefix, "hits", 0) or 0)

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            return replace(self._now)

    def reset(self) -> None:
        """Zero everything (a benchmark or a test measures from here)."""
        with self._lock:
            self._now = StatsSnapshot()


def stat_logger_factory(stats: SchedulerStats) -> Any:
    """A vLLM stat-logger factory ``(vllm_config, engine_index) -> logger`` feeding ``stats`` (imports vLLM)."""
    from vllm.v1.metrics.loggers import StatLoggerBase

    class _Recorder(StatLoggerBase):
        def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
            self.engine_index = engine_index

        def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0) -> None:
            stats.record(scheduler_stats)

        def log_engine_initialized(self) -> None:
            pass

    return _Recorder
