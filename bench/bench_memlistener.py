"""MemListener benchmarks: Ray Serve throughput with the CPU engine, prompt size and static-prefix
share, and op validity of the chosen local model on LoCoMo dev chunks.

Bounded on purpose (2 shared cores, llama.cpp at a few tokens/s): few jobs, short ``max_tokens``.
Knobs: ``PERSONATREE_LOCOMO_PATH`` (default ``../shared/benchmarks/locomo/locomo_dev5.json`` from
the repo root; the validity metric is skipped with a note when absent),
``PERSONATREE_LOCAL_MODEL_PATH`` (default ``var/models/memlistener.gguf``),
``PERSONATREE_BENCH_MEMLISTENER_CHUNKS`` (validity chunks, default 8),
``PERSONATREE_BENCH_MEMLISTENER_MAX_TOKENS`` (default 96).

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
from memory.engine.schema import default_schema  # noqa: E402
from memory.engine.tree import Tree, apply  # noqa: E402
from serving.protocol import ListenerJob  # noqa: E402

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


def evaluate_model(listener, conversations: list[list[list[dict]]], *, log=None) -> dict:
    """Run each conversation's chunks in order (tree evolves) and score op validity and grounding."""
    schema = default_schema()
    rows = []
    for ci, chunks in enumerate(conversations):
        tree = Tree.empty()
        for k, turns in enumerate(chunks):
            job = ListenerJob(
                job_id=f"c{ci}-{k}",
                subject_id=f"locomo-{ci}",
                base_version=k,
                schema_id=schema.id,
                schema_version=schema.version,
                tree=tree.to_dict(),
                turns=turns,
            )
            t0 = time.perf_counter()
            res = listener.run([job])[0]
            wall = time.perf_counter() - t0
            from memory.engine.ops import Op

            accepted = [Op.from_dict(o) for o in res.ops]
            tree, _ = apply(tree, accepted)
            writes = [o for o in accepted if o.value]
            row = {
                "job": job.job_id,
                "error": res.error,
                "emitted": len(res.ops) + len(res.rejections),
                "accepted": len(res.ops),
                "rejected": [r["reason"] for r in res.rejections],
                "parse_errors": len(res.parse_errors),
                "no_op": any(o.type == "NO_OP" for o in accepted),
                "grounded": sum(grounded(o.value, turns) for o in writes),
                "writes": len(writes),
                "prompt_tokens": res.prompt_tokens,
                "completion_tokens": res.completion_tokens,
                "wall_s": round(wall, 2),
                "tok_per_s": round(res.completion_tokens / wall, 2) if wall else 0.0,
                "raw": res.raw_text[:400],
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


def _local_listener(model_path: str, *, max_tokens: int, max_ops: int):
    from serving.engines.llamacpp import LlamaCppEngine
    from serving.listener import MemListener

    engine = LlamaCppEngine.from_config(
        __import__("serving.config", fromlist=["EngineConfig"]).EngineConfig(
            model_path=model_path, max_tokens=max_tokens, max_ops=max_ops, n_threads=2
        )
    )
    return MemListener(engine, max_ops=max_ops)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["eval"])
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--convs", type=int, default=2)
    ap.add_argument("--chunks-per-conv", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--max-ops", type=int, default=4)
    args = ap.parse_args(argv)
    convs = locomo_conversations(locomo_path(), convs=args.convs, chunks_per_conv=args.chunks_per_conv)
    t0 = time.perf_counter()
    listener = _local_listener(args.model_path, max_tokens=args.max_tokens, max_ops=args.max_ops)
    print(json.dumps({"load_s": round(time.perf_counter() - t0, 2)}), flush=True)
    summary = evaluate_model(listener, convs, log=lambda s: print(s, flush=True))
    summary.pop("rows")
    print(json.dumps({"summary": summary, "model_path": args.model_path}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
