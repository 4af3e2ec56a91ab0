"""Score a MemListener (a trained checkpoint or any backend) on held-out export lines.

For each line of the chosen split the listener gets the job the line records (its tree and
turns), runs its whole pipeline (pointing or full enum, as configured), and its **own ops** --
accepted and gate-rejected alike, so the gate's rules count -- are scored with
:func:`memory.engine.scorer.score` against the line's gold and negatives. A chunk the listener
answers without a model call is scored as its ``NO_OP``; each unreadable item of a reply costs
what an unreadable line costs in the reward (``PARSE_ERROR``). Reported: the mean and median score,
the share of chunks with a perfect score, and the gate's ``UNGROUNDED`` share of the ops.

    python -m evaluation.training.score --data var/training/distilled.jsonl --split val \\
        --listener local:var/models/memlistener-sft.gguf --max-lines 40
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterable
from typing import Any

from evaluation.training.data import FORMAT, document_of, line_schema
from evaluation.training.reward import ops_of
from memory.engine.ops import Op
from memory.engine.scorer import score


def lines_of(path: str, split: str | None, max_lines: int | None) -> list[dict[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            line = json.loads(raw)
            if line.get("format") == FORMAT and (split is None or line.get("split") == split):
                out.append(line)
            if max_lines is not None and len(out) >= max_lines:
                break
    return out


def score_lines(listener, lines: Iterable[dict[str, Any]]) -> dict[str, Any]:
    from serving.protocol import ListenerJob

    totals, seconds, ops_n, ungrounded, parse_errors = [], [], 0, 0, 0
    for line in lines:
        schema = line_schema(line)  # shipped, or the tenant's own from the line's schema_document
        job = ListenerJob(job_id=str(line.get("chunk_key") or line.get("chunk_id")), subject_id=str(line["subject_id"]),
                          base_version=int(line.get("base_version") or 0), schema_id=schema.id,
                          schema_version=schema.version, schema_document=document_of(line.get("schema_document")),
                          tree=line["tree"], turns=line["turns"])  # fmt: skip
        start = time.perf_counter()
        res = listener.run([job])[0]
        seconds.append(time.perf_counter() - start)
        if res.error:
            predicted: list[Op] = []
        else:
            predicted = [o.to_op() for o in res.ops]
        ops_n += sum(op.path is not None for op in predicted)
        ungrounded += sum(o.precheck == "UNGROUNDED" for o in res.ops)
        unreadable = sum(not e["message"].startswith("output truncated") for e in res.parse_errors)
        parse_errors += unreadable
        report = score(
            predicted,
            ops_of(line.get("gold") or []),
            line["tree"],
            line["turns"],
            schema=schema,
            declined_ops=ops_of(line.get("negatives") or []),
            parse_errors=unreadable,
        )
        totals.append(report.total)
    n = len(totals)
    return {
        "lines": n,
        "score_mean": round(statistics.fmean(totals), 3) if n else None,
        "score_p50": round(statistics.median(totals), 3) if n else None,
        "perfect_share": round(sum(t >= 0.999 for t in totals) / n, 3) if n else None,
        "ops": ops_n,
        "ungrounded_share": round(ungrounded / ops_n, 3) if ops_n else None,
        "parse_errors": parse_errors,
        "s_per_chunk_p50": round(statistics.median(seconds), 2) if seconds else None,
    }


def main(argv: list[str] | None = None) -> int:
    from evaluation.training.distill import teacher_config

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="export / teacher JSONL")
    ap.add_argument("--split", default="val", help="'all' for every line")
    ap.add_argument(
        "--listener", action="append", required=True, help="extractive | local:PATH.gguf | openai:URL#MODEL"
    )
    ap.add_argument("--prompt-mode", default="pointing", choices=["pointing", "full_enum"])
    ap.add_argument("--max-lines", type=int, default=None)
    args = ap.parse_args(argv)
    from serving.listener import build_listener

    lines = lines_of(args.data, None if args.split == "all" else args.split, args.max_lines)
    for spec in args.listener:
        row = score_lines(build_listener(teacher_config(spec, args.prompt_mode)), lines)
        print(json.dumps({"listener": spec, "split": args.split, **row}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
