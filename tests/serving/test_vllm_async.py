"""The async vLLM engine's plumbing without vLLM (main virtualenv): its event-loop thread, its
scheduler stats, and the Serve app feeding an engine that batches across calls several
``@serve.batch`` groups at once. The engine itself runs in ``make test-vllm`` (test_vllm.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from serving.engines.vllm_async import EngineLoop, SchedulerStats

ROOT = Path(__file__).resolve().parents[2]


def test_the_loop_runs_coroutines_submitted_from_other_threads():
    loop = EngineLoop()
    try:
        seen: list[str] = []

        async def tag(name: str) -> str:
            await asyncio.sleep(0.01)
            seen.append(threading.current_thread().name)
            return name

        threads = [
            threading.Thread(target=lambda n=n: seen.append(loop.run(tag(f"t{n}"), 5))) for n in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert sorted(s for s in seen if s.startswith("t")) == ["t0", "t1", "t2"]
        assert [s for s in seen if not s.startswith("t")] == ["vllm-async"] * 3  # all ran on the loop

        async def inner() -> None:  # run() from the loop's own thread would deadlock: refused
            loop.run(tag("x"))

        with pytest.raises(RuntimeError, match="deadlock"):
            loop.run(inner(), 5)
    finally:
        loop.stop()
    assert not loop.alive
    loop.stop()  # idempotent
    with pytest.raises(RuntimeError, match="stopped"):
        loop.submit(asyncio.sleep(0))


def test_stop_cancels_what_is_still_running():
    loop = EngineLoop()
    pending = loop.submit(asyncio.sleep(60))
    loop.stop()
    assert pending.cancelled() and not loop.alive


def _step(running: int, waiting: int = 0, queries: int = 0, hits: int = 0):
    return SimpleNamespace(
        num_running_reqs=running,
        num_waiting_reqs=waiting,
        prefix_cache_stats=SimpleNamespace(queries=queries, hits=hits),
    )


def test_scheduler_stats_track_the_peak_and_the_prefix_cache_hit_rate():
    stats = SchedulerStats()
    assert stats.snapshot().prefix_cache_hit_rate is None  # nothing looked up yet
    for step in (_step(1, queries=100), _step(3, waiting=2, queries=100, hits=80), _step(2), None):
        stats.record(step)
    snap = stats.snapshot()
    assert (snap.steps, snap.running, snap.waiting, snap.peak_running) == (3, 2, 0, 3)
    assert snap.prefix_cache_hit_rate == pytest.approx(0.4)
    assert snap.as_dict()["prefix_cache_hit_rate"] == pytest.approx(0.4)
    stats.record(SimpleNamespace())  # fields vLLM renamed read as zero, never raise
    stats.reset()
    snap = stats.snapshot()
    assert (snap.steps, snap.peak_running, snap.prefix_cache_queries, snap.running) == (0, 0, 0, 0)


# Two one-job groups reach an engine whose generate() blocks until two calls are inside it. The
# concurrent batcher lets both in; the sequential one (engines that are not concurrent) cannot, so
# the barrier breaks and both jobs fail. Run in a child process: a @serve.batch queue binds to the
# first event loop that uses it.
_SCRIPT = """
import asyncio, json, sys, threading
from memory.engine.schema import default_schema
from ray.serve import batching
from serving.app import MemListenerDeployment
from serving.config import AppConfig, EngineConfig
from tests.serving.conftest import make_job

# Outside a replica the batch queue cannot read the replica's max_ongoing_requests (a warning only).
batching._BatchQueue._warn_if_max_batch_size_exceeds_max_ongoing_requests = lambda self: None

class Paired:
    def __init__(self, inner, concurrent):
        self.inner, self.model_id, self.concurrent_generate = inner, inner.model_id, concurrent
        self.barrier = threading.Barrier(2, timeout=3)
    def generate(self, prompts, json_schema):
        self.barrier.wait()
        return self.inner.generate(prompts, json_schema)
    def check_health(self):
        pass
    def close(self):
        pass

config = AppConfig(engine=EngineConfig(kind="standin", standin_mode="derived"), max_batch_size=1,
                   batch_wait_timeout_s=0.0)
dep = MemListenerDeployment.func_or_class(config.model_dump(mode="json"))
asyncio.run(dep.start())  # loads the engine (if the constructor did not)
dep._listener.engine = Paired(dep._listener.engine, sys.argv[1] == "concurrent")
schema = default_schema()
turns = [{"role": "user", "content": "I work as a nurse in Lyon."}]
jobs = [make_job(schema, turns, job_id=f"j{i}").model_dump(mode="json") for i in range(2)]
print(json.dumps(asyncio.run(dep.run(jobs))))
"""


def _run_two(mode: str) -> list[dict]:
    pytest.importorskip("ray.serve", reason="Ray Serve is an optional extra (pip install '.[serve]')")
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_an_engine_that_batches_across_calls_gets_several_groups_at_once():
    results = _run_two("concurrent")
    assert [r["job_id"] for r in results] == ["j0", "j1"]
    assert all(r["error"] is None for r in results), results


def test_other_engines_get_one_group_at_a_time():
    results = _run_two("sequential")
    assert all(r["error"] and r["retryable"] for r in results), results


def _bench_module(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench_gpu():
    return _bench_module("bench_gpu")


def test_bench_gpu_without_a_gpu_measures_nothing_and_says_so(bench_gpu, monkeypatch, capsys):
    monkeypatch.setattr(bench_gpu, "gpu_name", lambda: None)
    assert bench_gpu.main([]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"measured": False, "note": report["note"]} and "no GPU" in report["note"]
    assert bench_gpu.run() == {}  # no rows: nothing pretends to be a number
    with pytest.raises(SystemExit):
        bench_gpu.parse_args(["--concurrency", "0"])


def test_bench_gpu_chunks_are_distinct_and_it_is_not_in_the_default_run(bench_gpu, monkeypatch, tmp_path):
    monkeypatch.setenv("PERSONATREE_LOCOMO_PATH", str(tmp_path / "absent.json"))  # the test chunks
    chunks = bench_gpu.load_chunks(10)
    assert len(chunks) == 10 and len({json.dumps(c) for c in chunks}) == 10
    assert "bench_gpu" in _bench_module("run").OPT_IN  # bench/run.py runs it only when named
