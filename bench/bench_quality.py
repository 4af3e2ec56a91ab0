"""Memory quality without Django or a judge model: one LoCoMo conversation through a MemListener.

For each speaker of ``--conversation`` (default conv-30): that speaker's turns are the user's, the
other speaker's the assistant's (image turns keep their caption, as the backfill reader does); the
history is cut with ``memory.engine.chunker.chunk_turns`` (3 pairs; the last, partial window
included, as the backfill's final flush does) and each chunk goes to the listener alone, in order,
as a ``ListenerJob`` on the tree so far; accepted ops are applied with ``memory.engine.tree.apply``. Then ``evaluation/quality.py`` measures the
applied ADD/UPDATE values (grounded / invented / wrong speaker against the chunk's turns) and the
MiniLM coverage of the speaker's LoCoMo ``observation`` facts by the final tree.

Metrics (fixed names, written into bench/results/latest.json): ``memlistener.grounded_rate``,
``memlistener.invented_rate``, ``memlistener.wrong_speaker_rate``, ``memlistener.s_per_chunk_p50``
(wall time of one listener call, median over both speakers' chunks), ``memlistener.model_skip_share``
(chunks answered without a model call), ``quality.locomo_obs_coverage`` (τ 0.5, both speakers
pooled), ``quality.locomo_obs_coverage_06`` / ``_07``, ``quality.locomo_obs_precision``,
``quality.tree_tokens_p50`` (median over the two final trees, ``path: value`` lines).

    python bench/bench_quality.py [--data PATH] [--conversation conv-30]
        [--engine extractive | local | local:GGUF | recorded:JSONL | openai:URL#model]
        [--prompt-mode pointing | full_enum] [--baseline no_op | nearest] [--write | --no-write]

Baselines replace the listener: ``no_op`` (the empty tree) and ``nearest`` (every first-person user
sentence verbatim into its nearest leaf by MiniLM similarity, merged with
``memory.engine.clauses.merge_clauses`` under the leaf's budget; no gate). Baseline runs print only
unless ``--write``. Data: ``--data`` or ``PERSONATREE_LOCOMO_PATH``, default
``../shared/benchmarks/locomo/locomo_dev5.json`` from the repository root; skipped with a message when
absent. ``bench/run.py quality`` runs the default (extractive listener, conv-30).
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

from evaluation.quality import observation_coverage, pool_coverage, value_metrics  # noqa: E402
from memory.backfill.locomo import turn_text  # noqa: E402
from memory.engine.candidates import is_self_disclosure, leaf_text, user_sentences  # noqa: E402
from memory.engine.chunker import chunk_turns  # noqa: E402
from memory.engine.clauses import merge_clauses  # noqa: E402
from memory.engine.ops import Op, OpType  # noqa: E402
from memory.engine.schema import default_schema  # noqa: E402
from memory.engine.tree import Tree, apply  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "benchmarks" / "locomo" / "locomo_dev5.json"
RESULTS = ROOT / "bench" / "results" / "latest.json"
BASELINES = ("no_op", "nearest")


def data_path(arg: str | None = None) -> Path:
    p = Path(arg or os.environ.get("PERSONATREE_LOCOMO_PATH", "") or DEFAULT_DATA)
    return p if p.is_absolute() else (Path.cwd() / p).resolve()


def load_sample(path: Path, conversation: str) -> dict:
    for sample in json.loads(path.read_text(encoding="utf-8")):
        if sample.get("sample_id") == conversation:
            return sample
    raise SystemExit(f"bench_quality: conversation {conversation!r} is not in {path}")


def speaker_turns(sample: dict, speaker: str) -> list[dict]:
    conv = sample["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)
    turns = []
    for n in numbers:
        for t in conv[f"session_{n}"]:
            role = "user" if t["speaker"] == speaker else "assistant"
            turns.append({"role": role, "content": turn_text(t), "seq": len(turns) + 1})
    return turns


def observations(sample: dict, speaker: str) -> list[str]:
    out = []
    for _key, per_speaker in sorted((sample.get("observation") or {}).items()):
        out += [str(fact[0]) for fact in per_speaker.get(speaker, [])]
    return out


def engine_config(spec: str, prompt_mode: str):
    from serving.config import EngineConfig

    kind, _, rest = spec.partition(":")
    if kind == "extractive":
        return EngineConfig(kind="extractive", prompt_mode=prompt_mode)
    if kind == "local":
        path = rest or str(ROOT / "var" / "models" / "memlistener.gguf")
        cache = str(ROOT / "var" / "cache" / "llama")
        return EngineConfig(kind="llamacpp", model_path=path, prompt_cache_dir=cache, prompt_mode=prompt_mode)
    if kind == "recorded" and rest:
        return EngineConfig(kind="recorded", recording_path=rest, prompt_mode=prompt_mode)
    if kind == "openai" and rest:
        url, _, model = rest.partition("#")
        return EngineConfig(kind="openai", base_url=url, model=model, prompt_mode=prompt_mode)
    raise SystemExit(
        f"bench_quality: unknown --engine {spec!r} (extractive | local[:GGUF] | recorded:F | openai:URL)"
    )


def _rows(tree: Tree, ops: list[Op], turns: list[dict]) -> list[dict]:
    user = "\n".join(t["content"] for t in turns if t["role"] == "user")
    other = "\n".join(t["content"] for t in turns if t["role"] == "assistant")
    return [
        {"new_value": op.value, "old_value": tree.get(op.path), "user_text": user, "other_text": other}
        for op in ops
        if op.type in (OpType.ADD, OpType.UPDATE) and op.value
    ]


def run_speaker(chunks: list[list[dict]], step) -> dict:
    """``step(tree, turns, k) -> (accepted ops, skipped_model | None, error)`` over the chunks in order."""
    tree, rows, seconds, skipped, errors = Tree.empty(), [], [], [], 0
    for k, turns in enumerate(chunks):
        t0 = time.perf_counter()
        ops, skip, error = step(tree, turns, k)
        seconds.append(time.perf_counter() - t0)
        errors += bool(error)
        if skip is not None:
            skipped.append(skip)
        rows += _rows(tree, ops, turns)
        tree, _ = apply(tree, ops)
    return {"tree": tree, "rows": rows, "seconds": seconds, "skipped": skipped, "errors": errors}


def listener_step(listener, schema, subject: str):
    from serving.protocol import ListenerJob

    def step(tree: Tree, turns: list[dict], k: int):
        job = ListenerJob(
            job_id=f"{subject}-{k}",
            subject_id=subject,
            base_version=k,
            schema_id=schema.id,
            schema_version=schema.version,
            tree=tree.to_dict(),
            turns=turns,
        )
        res = listener.run([job])[0]
        return [Op.from_dict(o) for o in res.ops], res.skipped_model, res.error

    return step


def nearest_step(schema, embed):
    paths = [leaf.path for leaf in schema.leaves]
    budgets = {leaf.path: leaf.budget for leaf in schema.leaves}
    leaf_vectors = embed([leaf_text(leaf.path, leaf.description) for leaf in schema.leaves])

    def step(tree: Tree, turns: list[dict], k: int):
        sentences = [s.text for s in user_sentences(turns) if is_self_disclosure(s.text)]
        ops, values = [], dict(tree)
        if sentences:
            best = (embed(sentences) @ leaf_vectors.T).argmax(axis=1)
            for sentence, i in zip(sentences, best, strict=True):
                path = paths[int(i)]
                merged = merge_clauses(values.get(path), sentence, budgets[path])
                if merged != values.get(path):
                    kind = OpType.UPDATE if path in values else OpType.ADD
                    ops.append(Op(kind, path, merged, source=sentence))
                    values[path] = merged
        return _collapse(ops), None, None

    return step


def _collapse(ops: list[Op]) -> list[Op]:
    """One op per leaf (the last merge holds the earlier ones), so each value is measured once."""
    last = {op.path: op for op in ops}
    return list(last.values())


def measure(path: Path, conversation: str, *, engine: str = "extractive", prompt_mode: str = "pointing",
            baseline: str | None = None) -> dict:  # fmt: skip
    from serving.pointing import default_embed

    sample = load_sample(path, conversation)
    schema = default_schema()
    embed = default_embed("minilm")
    if baseline is None:
        from serving.listener import build_listener

        listener = build_listener(engine_config(engine, prompt_mode))
    per_speaker = {}
    for speaker in (sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]):
        chunks = [[{"role": t.role, "content": t.content} for t in c.turns]
                  for c in chunk_turns(speaker_turns(sample, speaker), pairs=3, include_partial=True)]  # fmt: skip
        if baseline == "no_op":
            step = lambda tree, turns, k: ([], None, None)  # noqa: E731
        elif baseline == "nearest":
            step = nearest_step(schema, embed)
        else:
            step = listener_step(listener, schema, f"{conversation}:{speaker}")
        run = run_speaker(chunks, step)
        run["values"] = value_metrics(run["rows"])
        run["coverage"] = observation_coverage(dict(run["tree"]), observations(sample, speaker), embed)
        per_speaker[speaker] = run
    runs = list(per_speaker.values())
    both = {
        "values": value_metrics([r for run in runs for r in run["rows"]]),
        "coverage": pool_coverage([run["coverage"] for run in runs]),
    }
    seconds = [s for run in runs for s in run["seconds"]]
    skipped = [s for run in runs for s in run["skipped"]]
    return {
        "label": f"baseline {baseline}" if baseline else f"{engine} ({prompt_mode})",
        "conversation": conversation,
        "speakers": per_speaker,
        "both": both,
        "chunks": len(seconds),
        "errors": sum(run["errors"] for run in runs),
        "s_per_chunk_p50": statistics.median(seconds) if seconds else None,
        "model_skip_share": (sum(bool(s) for s in skipped) / len(seconds))
        if baseline is None and seconds
        else None,
        "tree_tokens_p50": statistics.median(run["coverage"]["tree_tokens"] for run in runs),
        "load": os.getloadavg()[0],
    }


def _metric(value, unit, note, target=None):
    return {"value": value, "unit": unit, "target": target, "note": note}


def metrics(m: dict) -> dict[str, dict]:
    v, c = m["both"]["values"], m["both"]["coverage"]
    where = (
        f"LoCoMo {m['conversation']}, both speakers, {m['chunks']} chunks, {m['label']}; "
        f"load average {m['load']:.1f} on {os.cpu_count() or 0} cores"
    )
    rnd = lambda x, n=4: None if x is None else round(x, n)  # noqa: E731
    vals = f"{v['values']} applied ADD/UPDATE values; {where}"
    cov = f"{c['facts']} observation facts, {c['clauses']} clauses, MiniLM cosine; {where}"
    return {
        "memlistener.grounded_rate": _metric(v["grounded_rate"], "ratio", vals),
        "memlistener.invented_rate": _metric(v["invented_rate"], "ratio", vals),
        "memlistener.wrong_speaker_rate": _metric(v["wrong_speaker_rate"], "ratio", vals),
        "memlistener.s_per_chunk_p50": _metric(
            rnd(m["s_per_chunk_p50"]),
            "s",
            f"median wall time of one listener call ({m['errors']} errors); {where}",
        ),
        "memlistener.model_skip_share": _metric(
            rnd(m["model_skip_share"]), "ratio", f"chunks with skipped_model; {where}"
        ),
        "quality.locomo_obs_coverage": _metric(c["coverage"]["0.5"], "ratio", f"τ 0.5; {cov}"),
        "quality.locomo_obs_coverage_06": _metric(c["coverage"]["0.6"], "ratio", f"τ 0.6; {cov}"),
        "quality.locomo_obs_coverage_07": _metric(c["coverage"]["0.7"], "ratio", f"τ 0.7; {cov}"),
        "quality.locomo_obs_precision": _metric(
            c["precision"], "ratio", f"clauses with a fact at >= 0.5; {cov}"
        ),
        "quality.tree_tokens_p50": _metric(
            float(m["tree_tokens_p50"]),
            "tokens",
            f"median of the two final trees, path: value lines; {where}",
        ),
    }


def print_table(m: dict) -> None:
    headers = ["subject", "values", "grounded", "invented", "wrong spk", "facts", "cov@.5", "cov@.6",
               "cov@.7", "precision", "clauses", "tokens"]  # fmt: skip
    rows = [(s, r["values"], r["coverage"]) for s, r in m["speakers"].items()]
    rows.append(("both", m["both"]["values"], m["both"]["coverage"]))
    fmt = lambda x: "–" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))  # noqa: E731
    print(f"{m['label']} on {m['conversation']}: {m['chunks']} chunks, {m['errors']} errors, "
          f"s/chunk p50 {fmt(m['s_per_chunk_p50'])}, model skip share {fmt(m['model_skip_share'])}")  # fmt: skip
    print(" | ".join(headers))
    for name, v, c in rows:
        cells = [name, v["values"], v["grounded_rate"], v["invented_rate"], v["wrong_speaker_rate"], c["facts"],
                 *c["coverage"].values(), c["precision"], c["clauses"], c["tree_tokens"]]  # fmt: skip
        print(" | ".join(fmt(x) for x in cells))


def write_latest(rows: dict[str, dict]) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    previous.update(rows)
    RESULTS.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")


def _skipped(path: Path) -> dict[str, dict]:
    note = f"skipped: LoCoMo file not found at {path} (pass --data or set PERSONATREE_LOCOMO_PATH)"
    keys = ["memlistener.grounded_rate", "memlistener.invented_rate", "memlistener.wrong_speaker_rate",
            "memlistener.s_per_chunk_p50", "memlistener.model_skip_share", "quality.locomo_obs_coverage",
            "quality.locomo_obs_coverage_06", "quality.locomo_obs_coverage_07", "quality.locomo_obs_precision",
            "quality.tree_tokens_p50"]  # fmt: skip
    return {k: _metric(None, "", note) for k in keys}


def run() -> dict[str, dict]:
    """bench/run.py entry: the extractive listener on conv-30."""
    path = data_path()
    if not path.is_file():
        return _skipped(path)
    return metrics(measure(path, "conv-30"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data", help=f"LoCoMo JSON (default {DEFAULT_DATA.relative_to(ROOT.parent)} beside the repo)"
    )
    ap.add_argument("--conversation", default="conv-30")
    ap.add_argument(
        "--engine", default="extractive", help="extractive | local[:GGUF] | recorded:JSONL | openai:URL#model"
    )
    ap.add_argument("--prompt-mode", default="pointing", choices=["pointing", "full_enum"])
    ap.add_argument("--baseline", choices=BASELINES, help="replace the listener by a baseline")
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=None,
                    help="write bench/results/latest.json (default: yes for listeners, no for baselines)")  # fmt: skip
    args = ap.parse_args(argv)
    path = data_path(args.data)
    if not path.is_file():
        print(
            f"bench_quality: skipped, LoCoMo file not found at {path} (pass --data or set PERSONATREE_LOCOMO_PATH)"
        )
        return 0
    m = measure(
        path, args.conversation, engine=args.engine, prompt_mode=args.prompt_mode, baseline=args.baseline
    )
    print_table(m)
    rows = metrics(m)
    print()
    for name, r in rows.items():
        print(f"{name:<34} {'–' if r['value'] is None else r['value']!s:>10} {r['unit']}")
    if args.write if args.write is not None else args.baseline is None:
        write_latest(rows)
        print(f"\nwrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
