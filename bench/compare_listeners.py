"""Compare MemListeners on the same slice of a LoCoMo dev conversation (model choice, docs/MEMLISTENER.md).

Not part of ``make bench`` (a model run takes minutes): each listener gets the first ``--chunks``
chunks of each speaker of ``--conversation``, in order, each on the tree so far (accepted ops
applied). Reported per listener: seconds per chunk (median), share of chunks that skipped the
model, ops the listener emitted *before* the gate (accepted + rejected), how many the gate accepted,
the share it rejected as ``UNGROUNDED`` (the model's invented-value rate), parse errors, and MiniLM
coverage / precision of the observations whose evidence turn lies in the slice.

    python bench/compare_listeners.py --conversation conv-30 --chunks 8 \
        --listener extractive --listener local:var/models/memlistener.gguf \
        --listener local:var/models/qwen2.5-coder-1.5b.gguf [--prompt-mode pointing|full_enum]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_quality import data_path, engine_config, load_sample  # noqa: E402

from evaluation.quality import observation_coverage  # noqa: E402
from memory.backfill.locomo import turn_text  # noqa: E402
from memory.engine.chunker import chunk_turns  # noqa: E402
from memory.engine.schema import default_schema  # noqa: E402
from memory.engine.tree import Tree, apply  # noqa: E402


def speaker_slice(sample: dict, speaker: str, n_chunks: int):
    conv = sample["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)
    turns, dia = [], []
    for n in numbers:
        for t in conv[f"session_{n}"]:
            turns.append(
                {"role": "user" if t["speaker"] == speaker else "assistant", "content": turn_text(t)}
            )
            dia.append(t.get("dia_id"))
    chunks = chunk_turns([{**t, "seq": i + 1} for i, t in enumerate(turns)], pairs=3, include_partial=True)[
        :n_chunks
    ]
    last_seq = chunks[-1].end_seq if chunks else 0
    seen = {d for d in dia[:last_seq] if d}
    facts = [
        str(f[0])
        for _, per in sorted((sample.get("observation") or {}).items())
        for f in per.get(speaker, [])
        if (f[1] if isinstance(f[1], str) else "") in seen
    ]
    return [[{"role": t.role, "content": t.content} for t in c.turns] for c in chunks], facts


def run_listener(spec: str, prompt_mode: str, sample: dict, n_chunks: int, embed) -> dict:
    from serving.listener import build_listener
    from serving.protocol import ListenerJob

    schema = default_schema()
    listener = build_listener(engine_config(spec, prompt_mode))
    seconds, skipped, emitted, accepted, ungrounded, parse_errors = [], 0, 0, 0, 0, 0
    coverages = []
    for speaker in (sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]):
        chunks, facts = speaker_slice(sample, speaker, n_chunks)
        tree = Tree.empty()
        for k, turns in enumerate(chunks):
            job = ListenerJob(job_id=f"{speaker}-{k}", subject_id=speaker, base_version=k, schema_id=schema.id,
                              schema_version=schema.version, tree=tree.to_dict(), turns=turns)  # fmt: skip
            t0 = time.perf_counter()
            res = listener.run([job])[0]
            seconds.append(time.perf_counter() - t0)
            if res.error:
                print(f"  {spec} {speaker} chunk {k}: error {res.error}", file=sys.stderr)
                continue
            skipped += res.skipped_model
            real = [o for o in res.accepted if o.op != "NO_OP"]
            rejected = [o for o in res.rejected if o.op != "NO_OP"]
            emitted += len(real) + len(rejected)
            accepted += len(real)
            ungrounded += sum(o.precheck == "UNGROUNDED" for o in rejected)
            parse_errors += len(res.parse_errors)
            tree, _ = apply(tree, [o.to_op() for o in real])
        coverages.append(observation_coverage(tree.to_dict(), facts, embed))
    facts_n = sum(c["facts"] for c in coverages)
    covered = sum(round(c["coverage"]["0.5"] * c["facts"]) for c in coverages if c["facts"])
    clauses = sum(c["clauses"] for c in coverages)
    precise = sum(round((c["precision"] or 0) * c["clauses"]) for c in coverages)
    return {
        "listener": spec,
        "prompt_mode": prompt_mode,
        "chunks": len(seconds),
        "s_per_chunk_p50": round(statistics.median(seconds), 2) if seconds else None,
        "skip_share": round(skipped / len(seconds), 3) if seconds else None,
        "ops_emitted": emitted,
        "ops_accepted": accepted,
        "ungrounded_share": round(ungrounded / emitted, 3) if emitted else None,
        "parse_errors": parse_errors,
        "facts": facts_n,
        "coverage_05": round(covered / facts_n, 3) if facts_n else None,
        "precision": round(precise / clauses, 3) if clauses else None,
        "clauses": clauses,
        "load": round(os.getloadavg()[0], 2),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--conversation", default="conv-30")
    ap.add_argument("--chunks", type=int, default=8, help="first N chunks of each speaker")
    ap.add_argument("--listener", action="append", required=True)
    ap.add_argument("--prompt-mode", default="pointing", choices=["pointing", "full_enum"])
    ap.add_argument("--out", default=None, help="append the rows to this JSONL file")
    args = ap.parse_args(argv)
    path = data_path(args.data)
    if not path.is_file():
        print(f"compare_listeners: no data at {path}")
        return 0
    sample = load_sample(path, args.conversation)
    from serving.embedder import default_embed

    embed = default_embed("minilm")
    for spec in args.listener:
        row = run_listener(spec, args.prompt_mode, sample, args.chunks, embed)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
