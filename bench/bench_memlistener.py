"""MemListener benchmarks: Ray Serve throughput with the CPU engine, prompt size and static-prefix
share, and op validity of the chosen local model on LoCoMo dev chunks.

Bounded on purpose (2 shared cores, llama.cpp at a few tokens/s): few jobs, short ``max_tokens``.
Knobs: ``PERSONATREE_LOCOMO_PATH`` (default ``../shared/benchmarks/locomo/locomo_dev5.json`` from
the repo root; the validity metric is skipped with a note when absent),
``PERSONATREE_LOCAL_MODEL_PATH`` (default ``var/models/memlistener.gguf``),
``PERSONATREE_BENCH_MEMLISTENER_CHUNKS`` (validity chunks, default 4),
``PERSONATREE_BENCH_MEMLISTENER_MAX_TOKENS`` (validity, default 96) and
``PERSONATREE_BENCH_MEMLISTENER_SERVE_MAX_TOKENS`` (throughput, default 32). The llama.cpp disk
prompt cache (``var/cache/llama``) keeps the static prefix's KV state between runs.

``python bench/bench_memlistener.py eval --model-path X`` runs the model comparison of
docs/MEMLISTENER.md on one GGUF and prints per-chunk rows plus a summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory.engine.chunker import chunk_turns  # noqa: E402
from memory.engine.render import count_tokens  # noqa: E402
from memory.engine.schema import default_schema  # noqa: E402
from memory.engine.tree import Tree, apply  # noqa: E402
from tests.serving.jobs import make_job  # noqa: E402

LOCOMO_DEFAULT = ROOT.parent / "shared" / "benchmarks" / "locomo" / "locomo_dev5.json"
_WORD = re.compile(r"[a-z0-9]+")


def locomo_path() -> Path:
    return Path(os.environ.get("PERSONATREE_LOCOMO_PATH", str(LOCOMO_DEFAULT)))


def locomo_conversations(path: Path, *, convs: int, chunks_per_conv: int) -> list[list[list[dict]]]:
    """Per conversation, its first chunks (3 pairs) with speaker_a as the user."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in data[:convs]:
        conv = sample["conversation"]
        a = conv["speaker_a"]
        turns, seq = [], 0
        n = 1
        while f"session_{n}" in conv:
            for t in conv[f"session_{n}"]:
                turns.append(
                    {"role": "user" if t["speaker"] == a else "assistant", "content": t["text"], "seq": seq}
                )
                seq += 1
            n += 1
        chunks = chunk_turns(turns, pairs=3)[:chunks_per_conv]
        out.append([[{"role": t.role, "content": t.content} for t in c.turns] for c in chunks])
    return out


def grounded(value: str, turns: list[dict]) -> bool:
    """Proxy for "not invented": at least half of the value's content words occur in the user turns."""
    words = [w for w in _WORD.findall(value.lower()) if len(w) > 3]
    if not words:
        return False
    text = " ".join(t["content"].lower() for t in turns if t["role"] == "user")
    return sum(w in text for w in words) / len(words) >= 0.5


def evaluate_model(listener, conversations: list[list[list[dict]]], *, schema=None, log=None) -> dict:
    """Run each conversation's chunks in order (tree evolves) and score op validity and grounding."""
    schema = schema or default_schema()
    rows = []
    for ci, chunks in enumerate(conversations):
        tree = Tree.empty()
        for k, turns in enumerate(chunks):
            job = make_job(
                schema,
                turns,
                job_id=f"c{ci}-{k}",
                subject_id=f"locomo-{ci}",
                base_version=k,
                tree=tree.to_dict(),
            )
            t0 = time.perf_counter()
            res = listener.run([job])[0]
            wall = time.perf_counter() - t0
            accepted = [o.to_op() for o in res.accepted]
            tree, _ = apply(tree, accepted)
            writes = [o for o in accepted if o.value]
            row = {
                "job": job.job_id,
                "error": res.error,
                "emitted": len(res.ops),
                "accepted": len(accepted),
                "rejected": [o.precheck for o in res.rejected],
                "parse_errors": len(res.parse_errors),
                "no_op": any(o.type == "NO_OP" for o in accepted),
                "grounded": sum(grounded(o.value, turns) for o in writes),
                "writes": len(writes),
                "prompt_tokens": res.prompt_tokens,
                "completion_tokens": res.completion_tokens,
                "wall_s": round(wall, 2),
                "tok_per_s": round(res.completion_tokens / wall, 2) if wall else 0.0,
                "raw": res.raw_text,
            }
            rows.append(row)
            if log:
                log(json.dumps(row, ensure_ascii=False))
    emitted = sum(r["emitted"] for r in rows)
    accepted = sum(r["accepted"] for r in rows)
    writes = sum(r["writes"] for r in rows)
    return {
        "chunks": len(rows),
        "errors": sum(1 for r in rows if r["error"]),
        "chunks_with_parse_errors": sum(1 for r in rows if r["parse_errors"]),
        "ops_emitted": emitted,
        "ops_accepted": accepted,
        "op_valid_rate": accepted / emitted if emitted else 0.0,
        "grounded_rate": sum(r["grounded"] for r in rows) / writes if writes else 0.0,
        "no_op_chunks": sum(1 for r in rows if r["no_op"]),
        "median_wall_s": statistics.median(r["wall_s"] for r in rows) if rows else 0.0,
        "median_tok_per_s": statistics.median(r["tok_per_s"] for r in rows) if rows else 0.0,
        "rows": rows,
    }


def _engine_config(model_path: str, *, max_tokens: int, max_ops: int, cache: bool = True):
    from serving.config import EngineConfig

    return EngineConfig(
        kind="llamacpp",
        model_path=model_path,
        max_tokens=max_tokens,
        max_ops=max_ops,
        prompt_cache_dir=str(ROOT / "var" / "cache" / "llama") if cache else "",
    )


def _local_listener(model_path: str, *, max_tokens: int, max_ops: int, cache: bool = False, schema=None):
    from memory.engine.schema import get_schema
    from serving.engines.llamacpp import LlamaCppEngine
    from serving.listener import MemListener

    config = _engine_config(model_path, max_tokens=max_tokens, max_ops=max_ops, cache=cache)
    resolver = (lambda _i, _v: schema) if schema is not None else get_schema
    return MemListener(LlamaCppEngine.from_config(config), max_ops=max_ops, schema_resolver=resolver)


def _metric(value, unit, target, note):
    return {"value": value, "unit": unit, "target": target, "note": note}


def _fixture_chunks() -> list[list[dict]]:
    data = json.loads(
        (ROOT / "tests" / "fixtures" / "recordings" / "chunks.json").read_text(encoding="utf-8")
    )
    return [c["turns"] for c in data]


def prompt_metrics(chunks: list[list[dict]], source: str) -> dict:
    from serving.prompt import build_prompt

    schema = default_schema()
    # A realistic tree: 15 filled leaves of ~8 words (a subject a few sessions in).
    tree = {leaf.path: "a short note of about eight words in it" for leaf in schema.leaves[:15]}
    totals, shares = [], []
    for turns in chunks:
        p = build_prompt(schema, tree, turns)
        total = count_tokens(p.text)
        totals.append(total)
        shares.append(count_tokens(p.static) / total)
    note = f"{len(chunks)} {source} chunks (3 pairs), tree with 15 filled leaves; engine token counter"
    return {
        "memlistener.prompt_tokens": _metric(float(statistics.median(totals)), "tokens", None, note),
        "memlistener.static_prefix_share": _metric(
            round(statistics.median(shares), 4), "ratio", ">= 0.6", note
        ),
    }


def throughput_metrics(model_path: str, chunks: list[list[dict]], *, max_tokens: int) -> dict:
    """jobs/s through the real Ray Serve app with the llama.cpp engine, one request of b jobs."""
    from serving.client import RayServeClient
    from serving.config import AppConfig
    from tests.ray_serve import serve_memlistener

    schema = default_schema()
    config = AppConfig(
        engine=_engine_config(model_path, max_tokens=max_tokens, max_ops=2),
        max_batch_size=16,
        batch_wait_timeout_s=0.1,
        num_cpus=1,
    )
    out = {}
    with serve_memlistener(config) as url:
        client = RayServeClient(url, timeout_s=3600)

        def jobs(n, tag):
            return [
                make_job(schema, chunks[i % len(chunks)], job_id=f"{tag}-{i}", subject_id=f"bench-{i}")
                for i in range(n)
            ]

        warm = client.run(jobs(1, "warm"))  # static prefix evaluated (or loaded from the disk cache) here
        for b in (1, 4, 16):
            start = time.perf_counter()
            results = client.run(jobs(b, f"b{b}"))
            elapsed = time.perf_counter() - start
            failed = sum(1 for r in results if r.error)
            out[f"memlistener.jobs_per_s_b{b}"] = _metric(
                round(b / elapsed, 4),
                "jobs/s",
                None,
                f"Ray Serve + llama.cpp (1 replica, n_threads auto), {b} jobs in one request, max_tokens={max_tokens}, "
                f"{failed} failed; warm-up error: {warm[0].error}",
            )
    return out


def run() -> dict[str, dict]:
    max_tokens = int(os.environ.get("PERSONATREE_BENCH_MEMLISTENER_MAX_TOKENS", "96"))
    n_chunks = int(os.environ.get("PERSONATREE_BENCH_MEMLISTENER_CHUNKS", "4"))
    model_path = os.environ.get(
        "PERSONATREE_LOCAL_MODEL_PATH", str(ROOT / "var" / "models" / "memlistener.gguf")
    )
    path = locomo_path()
    have_locomo = path.is_file()
    if have_locomo:
        convs = locomo_conversations(path, convs=2, chunks_per_conv=max(1, n_chunks // 2))
        chunks = [c for conv in convs for c in conv]
    else:
        convs, chunks = [], _fixture_chunks()
    metrics = prompt_metrics(chunks, "LoCoMo dev" if have_locomo else "fixture")
    names = ("memlistener.jobs_per_s_b1", "memlistener.jobs_per_s_b4", "memlistener.jobs_per_s_b16")
    if not Path(model_path).is_file():
        skip = f"skipped: no local model at {model_path} (run `make model`)"
        for name in names:
            metrics[name] = _metric(None, "jobs/s", None, skip)
        metrics["memlistener.local_op_valid_rate"] = _metric(None, "ratio", None, skip)
        return metrics
    metrics.update(
        throughput_metrics(
            model_path,
            chunks[:4],
            max_tokens=int(os.environ.get("PERSONATREE_BENCH_MEMLISTENER_SERVE_MAX_TOKENS", "32")),
        )
    )
    if not have_locomo:
        metrics["memlistener.local_op_valid_rate"] = _metric(
            None, "ratio", None, f"skipped: LoCoMo not found at {path} (set PERSONATREE_LOCOMO_PATH)"
        )
        return metrics
    listener = _local_listener(model_path, max_tokens=max_tokens, max_ops=4, cache=True)
    summary = evaluate_model(listener, convs)
    metrics["memlistener.local_op_valid_rate"] = _metric(
        round(summary["op_valid_rate"], 4),
        "ratio",
        None,
        f"{summary['chunks']} LoCoMo dev chunks, {summary['ops_emitted']} ops emitted, {summary['ops_accepted']} "
        f"schema-valid and gate-accepted; grounded {summary['grounded_rate']:.2f}; "
        f"{summary['errors']} engine errors; median {summary['median_wall_s']} s/chunk",
    )
    return metrics


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["eval"])
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--convs", type=int, default=2)
    ap.add_argument("--chunks-per-conv", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--max-ops", type=int, default=4)
    ap.add_argument("--schema", default="", help="schema file (default: the shipped default schema)")
    args = ap.parse_args(argv)
    from memory.engine.schema import load_schema

    schema = load_schema(args.schema) if args.schema else default_schema()
    convs = locomo_conversations(locomo_path(), convs=args.convs, chunks_per_conv=args.chunks_per_conv)
    t0 = time.perf_counter()
    listener = _local_listener(
        args.model_path, max_tokens=args.max_tokens, max_ops=args.max_ops, schema=schema
    )
    print(json.dumps({"load_s": round(time.perf_counter() - t0, 2), "schema": schema.id}), flush=True)
    summary = evaluate_model(listener, convs, schema=schema, log=lambda s: print(s, flush=True))
    summary.pop("rows")
    print(json.dumps({"summary": summary, "model_path": args.model_path}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
