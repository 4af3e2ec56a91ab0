"""Memory quality without Django or a judge model: LoCoMo conversations and Synthetic-Persona-Chat
dialogues through a MemListener, every target of issue 23 measured in one run.

LoCoMo (``--conversations``, default the five dev conversations): for each speaker, that speaker's
turns are the user's, the other speaker's the assistant's (image turns keep their caption, as the
backfill reader does); every turn carries its session's date (``session_N_date_time``) as ``ts``
when ``serving.protocol.ListenerTurn`` has the field. The history is cut with
``memory.engine.chunker.chunk_turns`` (3 pairs, the last partial window included) and each chunk
goes to the listener alone, in order, as a ``ListenerJob`` on the tree so far; accepted ops are
applied with ``memory.engine.tree.apply``. conv-26/30/41/42 are the tune set (pooled), conv-43 the
validation set: the metric values written are conv-43's, the tune values are in each note.

Synthetic-Persona-Chat (``--spc``, dialogues ``--spc-range``, default 800..999, the validation
part): each speaker's dialogue goes through the listener the same way; the facts a speaker states
are the persona sentences with cosine >= 0.6 to one of their sentences.

The judge (``evaluation/quality.py``): all-MiniLM-L6-v2 cosine after ``neutralise`` on both sides
(the speaker's names, I/my and a subject-less value's subject become "the person").

Metrics (fixed names, written into bench/results/latest.json): ``memlistener.grounded_rate`` /
``invented_rate`` / ``wrong_speaker_rate`` (applied ADD/UPDATE values), ``memlistener.s_per_chunk_p50``
(wall time of one LoCoMo listener call), ``memlistener.model_skip_share``,
``quality.locomo_obs_coverage`` (τ 0.5) / ``_06`` / ``_07``, ``quality.locomo_obs_precision`` (τ 0.5)
/ ``_06`` (share of clauses with a fact at >= τ), ``quality.tree_tokens_p50``,
``quality.first_person_rate``, ``quality.words_per_clause_p50``, ``quality.answerable_ratio`` (questions
of categories 1-4 naming a speaker whose answer words are all in the two trees, over the same share
for the history text with session dates), ``quality.answerable_words_ratio`` (tree words / history
words), the same two for the reference of every first-person clause of both speakers pasted with
every session date (``quality.answerable_ratio_first_person_paste`` / ``answerable_words_ratio_...``:
what pasting, not choosing, reaches), ``quality.false_deletes`` (DELETEs and clause-only-removing
UPDATEs: the dev data holds no real retraction), ``quality.spc_stated_coverage_06``,
``quality.spc_precision_06``. Each run also writes ``bench/results/quality/<date>-<sha>.json`` and
``.md`` (per set numbers, the removals, and a seeded sample of 40 tree values with their leaf).

    python bench/bench_quality.py [--data PATH] [--conversations conv-26,conv-30,conv-41,conv-42,conv-43]
        [--spc PATH | --no-spc] [--spc-range 800:1000] [--leaf-labels JSONL]
        [--engine extractive | local | local:GGUF | recorded:JSONL | openai:URL#model]
        [--prompt-mode pointing | full_enum] [--baseline no_op | nearest] [--write | --no-write]

Baselines replace the listener: ``no_op`` (the empty tree) and ``nearest`` (every first-person user
sentence verbatim into its nearest leaf by MiniLM similarity, merged with
``memory.engine.clauses.merge_clauses`` under the leaf's budget; no gate). Baseline runs print only
unless ``--write``. Data: ``--data`` or ``PERSONATREE_LOCOMO_PATH``, default
``../shared/benchmarks/locomo/locomo_dev5.json``; ``--spc`` or ``PERSONATREE_SPC_PATH``, default
``../shared/benchmarks/synthetic_persona_chat/valid.csv``; missing files are skipped with a message.
``bench/run.py quality`` runs the defaults (extractive listener, five conversations, SPC 800..999).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEAF_LABELS = ROOT / "evaluation" / "fixtures" / "leaf_labels.jsonl"
sys.path.insert(0, str(ROOT))

from bench.quality_locomo import (  # noqa: E402
    BASELINES,
    CONVERSATIONS,
    DEFAULT_DATA,
    DEFAULT_SPC,
    SPC_RANGE,
    VALIDATION,
    CachedEmbed,
    Driver,
    _progress,
    data_path,
    engine_config,
    first_person_clauses,
    history_text,
    history_words,
    leaf_accuracy_hook,
    load_sample,
    load_samples,
    measure,
    measure_sample,
    null_coverage,
    observations,
    pool,
    shown,
    speaker_names,
    speaker_questions,
    speaker_turns,
    turns_carry_ts,
)
from bench.quality_results import (  # noqa: E402
    RESULTS,
    SAMPLE,
    SEED,
    _skipped,
    metrics,
    print_table,
    write_latest,
    write_run,
)
from bench.quality_spc import measure_spc  # noqa: E402
from evaluation.quality import sample_values  # noqa: E402
from evaluation.spc import read_rows  # noqa: E402

# The command's module is also the one the tests and bench/compare_listeners.py import from.
__all__ = [
    "CachedEmbed", "Driver", "data_path", "engine_config", "first_person_clauses", "history_text",
    "history_words",
    "leaf_accuracy_hook", "load_sample", "main", "measure", "measure_all", "measure_sample",
    "metrics", "observations", "pool", "run", "speaker_names", "speaker_questions", "speaker_turns",
    "turns_carry_ts", "write_latest", "write_run",
]  # fmt: skip


def measure_all(path: Path, conversations: Sequence[str], driver: Driver, *, spc_path: Path | None = None,
                spc_range: tuple[int, int] = SPC_RANGE, leaf_labels: Path | None = None) -> dict:  # fmt: skip
    """Every conversation, the tune and validation pools, SPC and the value sample: one run's record."""
    started = time.perf_counter()
    samples = load_samples(path)
    missing = [c for c in conversations if c not in samples]
    if missing:
        raise SystemExit(f"bench_quality: conversations {missing} are not in {path}")
    convs = []
    for c in conversations:
        t0 = time.perf_counter()
        convs.append(measure_sample(samples[c], driver))
        _progress(f"{c}: {time.perf_counter() - t0:.0f} s")
    validation = [c for c in convs if c["conversation"] in VALIDATION]
    tune = [c for c in convs if c["conversation"] not in VALIDATION]
    out: dict = {
        "label": driver.label,
        "data": shown(path),
        "ts_passed": driver.with_ts,
        "tune": pool(tune, "tune", driver.listener is not None) if tune else None,
        "validation": pool(validation, "validation", driver.listener is not None) if validation else None,
        "per_conversation": {
            c["conversation"]: pool([c], c["conversation"], driver.listener is not None) for c in convs
        },
        "spc": None,
        "spc_data": None,
        "leaf_accuracy": None,
    }
    out["null_coverage"] = null_coverage(convs, driver.embed)
    trees = {f"{c['conversation']}:{s}": dict(r["tree"]) for c in convs for s, r in c["speakers"].items()}
    out["sample"] = sample_values(trees, SAMPLE, SEED)
    out["locomo_seconds"] = round(time.perf_counter() - started, 1)
    if spc_path is not None and spc_path.is_file():
        t0 = time.perf_counter()
        out["spc"] = measure_spc(read_rows(spc_path), range(*spc_range), driver)
        out["spc"]["seconds"] = round(time.perf_counter() - t0, 1)
        out["spc_data"] = f"{shown(spc_path)} dialogues {spc_range[0]}..{spc_range[1] - 1}"
    elif spc_path is not None:
        out["spc_data"] = f"skipped: not found at {shown(spc_path)}"
    if leaf_labels is not None:
        out["leaf_accuracy"] = leaf_accuracy_hook(leaf_labels, driver.embed)
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["load"] = os.getloadavg()[0]
    return out


def run() -> dict[str, dict]:
    """bench/run.py entry: the extractive listener on the five conversations and SPC 800..999; the
    run folder is written too."""
    path = data_path()
    if not path.is_file():
        return _skipped(path)
    m = measure_all(
        path,
        CONVERSATIONS,
        Driver(),
        spc_path=data_path(None, "PERSONATREE_SPC_PATH", DEFAULT_SPC),
        leaf_labels=LEAF_LABELS,
    )
    rows = metrics(m)
    json_path, md_path = write_run(m, rows)
    print(f"bench_quality: wrote {json_path.relative_to(ROOT)} and {md_path.name}")
    return rows


def _range(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition(":")
    return int(lo), int(hi)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help=f"LoCoMo JSON (default {shown(DEFAULT_DATA)})")
    ap.add_argument("--conversations", default=",".join(CONVERSATIONS),
                    help="comma-separated sample ids; conv-43 is the validation set, the others are pooled")  # fmt: skip
    ap.add_argument("--conversation", help="one conversation (old spelling of --conversations X)")
    ap.add_argument("--spc", help=f"Synthetic-Persona-Chat valid.csv (default {shown(DEFAULT_SPC)})")
    ap.add_argument("--no-spc", action="store_true", help="skip the SPC measurement")
    ap.add_argument("--spc-range", default=f"{SPC_RANGE[0]}:{SPC_RANGE[1]}", type=_range,
                    help="SPC dialogues lo:hi (default 800:1000, the validation part)")  # fmt: skip
    ap.add_argument(
        "--leaf-labels",
        type=Path,
        default=LEAF_LABELS,
        help=f"hand-labelled clauses the placement piece scores (default {LEAF_LABELS.relative_to(ROOT)})",
    )
    ap.add_argument(
        "--engine", default="extractive", help="extractive | local[:GGUF] | recorded:JSONL | openai:URL#model"
    )
    ap.add_argument("--prompt-mode", default="pointing", choices=["pointing", "full_enum"])
    ap.add_argument("--baseline", choices=BASELINES, help="replace the listener by a baseline")
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=None,
                    help="write bench/results/latest.json and the run folder (default: yes for listeners, "
                         "no for baselines)")  # fmt: skip
    args = ap.parse_args(argv)
    path = data_path(args.data)
    if not path.is_file():
        print(
            f"bench_quality: skipped, LoCoMo file not found at {path} (pass --data or set PERSONATREE_LOCOMO_PATH)"
        )
        return 0
    conversations = [args.conversation] if args.conversation else [
        c.strip() for c in args.conversations.split(",") if c.strip()]  # fmt: skip
    spc = None if args.no_spc else data_path(args.spc, "PERSONATREE_SPC_PATH", DEFAULT_SPC)
    driver = Driver(args.engine, args.prompt_mode, args.baseline)
    m = measure_all(path, conversations, driver, spc_path=spc, spc_range=args.spc_range,
                    leaf_labels=args.leaf_labels)  # fmt: skip
    print_table(m)
    rows = metrics(m)
    print()
    for name, r in rows.items():
        print(
            f"{name:<34} {'–' if r['value'] is None else r['value']!s:>10} {r['unit']:<6} {r['target'] or ''}"
        )
    print(f"\n{m['seconds']} s, load average {m['load']:.1f}")
    if args.write if args.write is not None else args.baseline is None:
        write_latest(rows)
        json_path, md_path = write_run(m, rows)
        print(f"\nwrote {RESULTS.relative_to(ROOT)}, {json_path.relative_to(ROOT)} and {md_path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
