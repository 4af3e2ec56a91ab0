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
words), ``quality.false_deletes`` (DELETEs and clause-only-removing UPDATEs: the dev data holds no
real retraction), ``quality.spc_stated_coverage_06``, ``quality.spc_precision_06``. Each run also
writes ``bench/results/quality/<date>-<sha>.json`` and ``.md`` (per set numbers, the removals, and a
seeded sample of 40 tree values with their leaf).

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
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.quality import (  # noqa: E402
    answerable,
    answerable_ratio,
    first_person_rate,
    observation_coverage,
    pool_coverage,
    removal,
    sample_values,
    stated_facts,
    tree_clauses,
    value_metrics,
    word_count,
    words_per_clause_p50,
)
from evaluation.spc import read_rows, sides  # noqa: E402
from memory.backfill.locomo import parse_locomo_date, turn_text  # noqa: E402
from memory.engine.candidates import is_self_disclosure, leaf_text, user_sentences  # noqa: E402
from memory.engine.chunker import chunk_turns  # noqa: E402
from memory.engine.clauses import merge_clauses  # noqa: E402
from memory.engine.dates import DATE_EVIDENCE, chunk_evidence  # noqa: E402
from memory.engine.ops import Op, OpType  # noqa: E402
from memory.engine.schema import default_schema  # noqa: E402
from memory.engine.tree import Tree, apply  # noqa: E402

SHARED = ROOT.parent / "shared" / "benchmarks"
DEFAULT_DATA = SHARED / "locomo" / "locomo_dev5.json"
DEFAULT_SPC = SHARED / "synthetic_persona_chat" / "valid.csv"
RESULTS = ROOT / "bench" / "results" / "latest.json"
RUNS = ROOT / "bench" / "results" / "quality"
BASELINES = ("no_op", "nearest")
TUNE = ("conv-26", "conv-30", "conv-41", "conv-42")
VALIDATION = ("conv-43",)
CONVERSATIONS = (*TUNE, *VALIDATION)
SPC_RANGE = (800, 1000)
QA_CATEGORIES = (1, 2, 3, 4)
TAU = 0.6
SAMPLE = 40
SEED = 0
TARGETS = {
    "quality.locomo_obs_coverage_06": ">= 0.40",
    "quality.locomo_obs_precision_06": ">= 0.55",
    "quality.first_person_rate": "<= 0.02",
    "quality.words_per_clause_p50": "<= 12",
    "quality.answerable_ratio": ">= 0.80",
    "quality.answerable_words_ratio": "<= 0.10",
    "quality.false_deletes": "0",
    "quality.spc_stated_coverage_06": ">= 0.60",
    "memlistener.s_per_chunk_p50": "<= 1.0",
}
Embed = Callable[[Sequence[str]], np.ndarray]
PromptMode = Literal["pointing", "full_enum"]


# --- data ------------------------------------------------------------------------------------------


def data_path(
    arg: str | None = None, env: str = "PERSONATREE_LOCOMO_PATH", default: Path = DEFAULT_DATA
) -> Path:
    p = Path(arg or os.environ.get(env, "") or default)
    return p if p.is_absolute() else (Path.cwd() / p).resolve()


def shown(path: Path) -> str:
    """A data path as docs name it: inside the repository relative to it, beside it as ``../...``."""
    if path.resolve().is_relative_to(ROOT):
        return str(path.resolve().relative_to(ROOT))
    try:
        return "../" + str(path.resolve().relative_to(ROOT.parent))
    except ValueError:
        return str(path)


def load_samples(path: Path) -> dict[str, dict]:
    return {s.get("sample_id"): s for s in json.loads(path.read_text(encoding="utf-8"))}


def load_sample(path: Path, conversation: str) -> dict:
    sample = load_samples(path).get(conversation)
    if sample is None:
        raise SystemExit(f"bench_quality: conversation {conversation!r} is not in {path}")
    return sample


def _session_numbers(conv: dict) -> list[int]:
    return sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)


def speaker_turns(sample: dict, speaker: str) -> list[dict]:
    """The whole conversation with ``speaker`` as the user; ``ts`` is the session date (ISO) or None."""
    conv = sample["conversation"]
    turns: list[dict] = []
    for n in _session_numbers(conv):
        when = parse_locomo_date(conv.get(f"session_{n}_date_time"))
        for t in conv[f"session_{n}"]:
            role = "user" if t["speaker"] == speaker else "assistant"
            ts = when.isoformat() if when else None
            turns.append({"role": role, "content": turn_text(t), "seq": len(turns) + 1, "ts": ts})
    return turns


def history_text(sample: dict) -> str:
    """Both speakers' turns and the session dates: what a perfect memory could quote."""
    conv = sample["conversation"]
    lines = []
    for n in _session_numbers(conv):
        lines.append(str(conv.get(f"session_{n}_date_time") or ""))
        lines += [turn_text(t) for t in conv[f"session_{n}"]]
    return "\n".join(line for line in lines if line)


def history_words(sample: dict) -> int:
    conv = sample["conversation"]
    return word_count(turn_text(t) for n in _session_numbers(conv) for t in conv[f"session_{n}"])


def observations(sample: dict, speaker: str) -> list[str]:
    out = []
    for _key, per_speaker in sorted((sample.get("observation") or {}).items()):
        out += [str(fact[0]) for fact in per_speaker.get(speaker, [])]
    return out


def speaker_names(speaker: str) -> list[str]:
    """The names a judge neutralises: the full name and the first name."""
    parts = speaker.split()
    return list(dict.fromkeys([speaker, *parts[:1]])) if parts else []


def speaker_questions(sample: dict) -> list[dict]:
    """QA of categories 1-4 with an answer whose question names one of the speakers (first name or a
    3+ letter short form of it, "Mel" for Melanie)."""
    conv = sample["conversation"]
    firsts = [conv[k].split()[0].lower() for k in ("speaker_a", "speaker_b") if conv.get(k)]
    out = []
    for qa in sample.get("qa") or []:
        answer = qa.get("answer")
        if qa.get("category") not in QA_CATEGORIES or answer is None or str(answer).strip() == "":
            continue
        qwords = {w.strip("?,.!'\u2019s").lower() for w in str(qa.get("question", "")).split()}
        qwords |= {w.split("'")[0].split("\u2019")[0] for w in qwords}
        if any(w and len(w) >= 3 and f.startswith(w) for w in qwords for f in firsts):
            out.append(qa)
    return out


# --- the listener loop -----------------------------------------------------------------------------


def engine_config(spec: str, prompt_mode: PromptMode):
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
    # the user's words plus the dates the gate derives from their timestamps ("yesterday")
    user = "\n".join(u.removeprefix(DATE_EVIDENCE) for u in chunk_evidence(turns))
    other = "\n".join(t["content"] for t in turns if t["role"] == "assistant")
    return [
        {"new_value": op.value, "old_value": tree.get(op.path or ""), "user_text": user, "other_text": other}
        for op in ops
        if op.type in (OpType.ADD, OpType.UPDATE) and op.value
    ]


def _removals(tree: Tree, ops: list[Op], turns: list[dict], subject: str, k: int) -> list[dict]:
    """DELETEs and UPDATEs that only take clauses away (:func:`evaluation.quality.removal`)."""
    values, out = dict(tree), []
    for op in ops:
        if op.path is None:
            continue
        old = values.get(op.path)
        dropped = removal(str(op.type), old, op.value)
        if dropped:
            user = [t["content"] for t in turns if t["role"] == "user"]
            out.append({"subject": subject, "chunk": k, "op": str(op.type), "path": op.path, "old": old,
                        "new": op.value, "dropped": dropped, "source": op.source, "user_turns": user})  # fmt: skip
        if op.type == OpType.DELETE:
            values.pop(op.path, None)
        elif op.value:
            values[op.path] = op.value
    return out


def run_speaker(chunks: list[list[dict]], step, subject: str = "") -> dict:
    """``step(tree, turns, k) -> (accepted ops, skipped_model | None, error)`` over the chunks in order."""
    tree, rows, seconds, skipped, errors, removed = Tree.empty(), [], [], [], 0, []
    for k, turns in enumerate(chunks):
        t0 = time.perf_counter()
        ops, skip, error = step(tree, turns, k)
        seconds.append(time.perf_counter() - t0)
        errors += bool(error)
        if skip is not None:
            skipped.append(skip)
        rows += _rows(tree, ops, turns)
        removed += _removals(tree, ops, turns, subject, k)
        tree, _ = apply(tree, ops)
    return {"tree": tree, "rows": rows, "seconds": seconds, "skipped": skipped, "errors": errors,
            "removals": removed}  # fmt: skip


def turns_carry_ts() -> bool:
    """Does ``ListenerTurn`` accept ``ts`` yet (another piece of issue 23 adds it)?"""
    from serving.protocol import ListenerTurn

    return "ts" in ListenerTurn.model_fields


def chunks_of(turns: list[dict], with_ts: bool) -> list[list[dict]]:
    keys = ("role", "content", "ts") if with_ts else ("role", "content")
    out = []
    for c in chunk_turns(turns, pairs=3, include_partial=True):
        out.append([{k: v for k, v in t.to_dict().items() if k in keys} for t in c.turns])
    return out


def listener_step(listener, schema, subject: str):
    from serving.protocol import ListenerJob, ListenerTurn

    def step(tree: Tree, turns: list[dict], k: int):
        job = ListenerJob(
            job_id=f"{subject}-{k}",
            subject_id=subject,
            base_version=k,
            schema_id=schema.id,
            schema_version=schema.version,
            tree=tree.to_dict(),
            turns=[ListenerTurn.model_validate(t) for t in turns],
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


class CachedEmbed:
    """An embedder that embeds each distinct text once per run (the judge sees many texts twice)."""

    def __init__(self, embed: Embed) -> None:
        self.embed = embed
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            for text, vector in zip(missing, np.asarray(self.embed(missing)), strict=True):
                self.cache[text] = vector
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 1))


def default_embedder() -> Embed:
    from serving.pointing import default_embed

    embed: Embed = default_embed("minilm")  # type: ignore[assignment]  # returns unit vectors
    return CachedEmbed(embed)


class Driver:
    """The listener (or a baseline) and the judge's embedder for one run."""

    def __init__(self, engine: str = "extractive", prompt_mode: PromptMode = "pointing", baseline: str | None = None,
                 embed: Embed | None = None, listener=None) -> None:  # fmt: skip
        self.schema = default_schema()
        self.embed = embed or default_embedder()
        self.baseline = baseline
        self.label = f"baseline {baseline}" if baseline else f"{engine} ({prompt_mode})"
        self.with_ts = turns_carry_ts() if baseline is None else False
        self.listener = listener
        if baseline is None and listener is None:
            from serving.listener import build_listener

            self.listener = build_listener(engine_config(engine, prompt_mode))

    def step(self, subject: str):
        if self.baseline == "no_op":
            return lambda tree, turns, k: ([], None, None)
        if self.baseline == "nearest":
            return nearest_step(self.schema, self.embed)
        return listener_step(self.listener, self.schema, subject)

    def run(self, turns: list[dict], subject: str) -> dict:
        return run_speaker(chunks_of(turns, self.with_ts), self.step(subject), subject)


# --- measuring -------------------------------------------------------------------------------------


def _progress(text: str) -> None:
    print(f"bench_quality: {text} (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)


def measure_sample(sample: dict, driver: Driver) -> dict:
    """Both speakers of one LoCoMo conversation: runs, judged coverage, form and answerability."""
    conversation = sample["sample_id"]
    per_speaker, facts = {}, {}
    for speaker in (sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]):
        run = driver.run(speaker_turns(sample, speaker), f"{conversation}:{speaker}")
        run["values"] = value_metrics(run["rows"])
        facts[speaker] = observations(sample, speaker)
        run["coverage"] = observation_coverage(
            dict(run["tree"]), facts[speaker], driver.embed, names=speaker_names(speaker)
        )
        per_speaker[speaker] = run
    runs = list(per_speaker.values())
    clauses = [c for run in runs for c in tree_clauses(dict(run["tree"]))]
    tree_text = "\n".join(clauses)
    questions = speaker_questions(sample)
    return {
        "conversation": conversation,
        "speakers": per_speaker,
        "facts": facts,
        "clauses": clauses,
        "answerable": answerable([q["answer"] for q in questions], tree_text, history_text(sample)),
        "tree_words": word_count(clauses),
        "history_words": history_words(sample),
    }


def null_coverage(convs: Sequence[dict], embed: Embed) -> dict | None:
    """The judge's floor: each conversation's observation facts against the NEXT conversation's two
    trees (other people), pooled. A judge that neutralises names gives unrelated facts some cosine;
    coverage should be read against this."""
    if len(convs) < 2:
        return None
    parts = []
    for i, conv in enumerate(convs):
        other = convs[(i + 1) % len(convs)]
        tree = {f"{s}/{path}": v for s, r in other["speakers"].items() for path, v in dict(r["tree"]).items()}
        names = [n for c in (conv, other) for s in c["speakers"] for n in speaker_names(s)]
        facts = [f for s in conv["speakers"] for f in conv["facts"][s]]
        parts.append(observation_coverage(tree, facts, embed, names=names))
    return pool_coverage(parts)


def pool(convs: Sequence[dict], label: str, listener: bool = True) -> dict:
    """Several measured conversations as one set (counts pooled, medians over every chunk / tree);
    ``listener=False`` (a baseline) leaves the model skip share out."""
    runs = [run for c in convs for run in c["speakers"].values()]
    seconds = [s for run in runs for s in run["seconds"]]
    skipped = [s for run in runs for s in run["skipped"]]
    clauses = [x for c in convs for x in c["clauses"]]
    ans = {k: sum(c["answerable"][k] for c in convs) for k in ("questions", "in_tree", "in_history")}
    tree_words, hist_words = sum(c["tree_words"] for c in convs), sum(c["history_words"] for c in convs)
    removals = [r for run in runs for r in run["removals"]]
    return {
        "label": label,
        "conversations": [c["conversation"] for c in convs],
        "values": value_metrics([r for run in runs for r in run["rows"]]),
        "coverage": pool_coverage([run["coverage"] for run in runs]),
        "chunks": len(seconds),
        "errors": sum(run["errors"] for run in runs),
        "s_per_chunk_p50": statistics.median(seconds) if seconds else None,
        "model_skip_share": (sum(bool(s) for s in skipped) / len(seconds)) if seconds and listener else None,
        "tree_tokens_p50": statistics.median(run["coverage"]["tree_tokens"] for run in runs)
        if runs
        else None,
        "clauses": len(clauses),
        "first_person_rate": first_person_rate(clauses),
        "words_per_clause_p50": words_per_clause_p50(clauses),
        "answerable": {**ans, **answerable_ratio(ans["in_tree"], ans["in_history"], ans["questions"])},
        "tree_words": tree_words,
        "history_words": hist_words,
        "answerable_words_ratio": round(tree_words / hist_words, 4) if hist_words else None,
        "false_deletes": len(removals),
        "removals": removals,
    }


def measure_spc(rows: Sequence[dict], indices: Iterable[int], driver: Driver, tau: float = TAU) -> dict:
    """Each speaker of the chosen SPC dialogues: coverage at ``tau`` of the persona facts they state,
    and the share of their tree's clauses with a persona fact at ``tau``."""
    stated = covered = clauses = precise = facts = 0
    seconds: list[float] = []
    tree_clauses_all: list[str] = []
    key = f"{tau:g}"
    subjects = 0
    t0 = time.perf_counter()
    for n, side in enumerate(sides(rows, indices), start=1):
        if n % 100 == 0:
            _progress(f"SPC: {n} speakers, {time.perf_counter() - t0:.0f} s")
        run = driver.run(list(side.turns), side.subject)
        tree = dict(run["tree"])
        seconds += run["seconds"]
        said = stated_facts(side.personas, side.sentences(), driver.embed, tau)
        cov = observation_coverage(tree, said, driver.embed, taus=(tau,), precision_tau=tau, names=())
        prec = observation_coverage(
            tree, side.personas, driver.embed, taus=(tau,), precision_tau=tau, names=()
        )
        subjects += 1
        facts += len(side.personas)
        stated += len(said)
        covered += cov["covered"][key]
        clauses += prec["clauses"]
        precise += prec["precise_clauses"] or 0
        tree_clauses_all += tree_clauses(tree)
    return {
        "subjects": subjects,
        "persona_facts": facts,
        "stated": stated,
        "covered": covered,
        "coverage": round(covered / stated, 4) if stated else None,
        "clauses": clauses,
        "precise_clauses": precise,
        "precision": round(precise / clauses, 4) if clauses else None,
        "chunks": len(seconds),
        "s_per_chunk_p50": statistics.median(seconds) if seconds else None,
        "first_person_rate": first_person_rate(tree_clauses_all),
        "words_per_clause_p50": words_per_clause_p50(tree_clauses_all),
    }


def measure(path: Path, conversation: str, *, engine: str = "extractive", prompt_mode: PromptMode = "pointing",
            baseline: str | None = None, embed: Embed | None = None) -> dict:  # fmt: skip
    """One LoCoMo conversation, pooled over its two speakers (``pool`` of one)."""
    driver = Driver(engine, prompt_mode, baseline, embed)
    conv = measure_sample(load_sample(path, conversation), driver)
    return {**pool([conv], driver.label, driver.listener is not None), "speakers": conv["speakers"], "conversation": conversation,
            "load": os.getloadavg()[0]}  # fmt: skip


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


def leaf_accuracy_hook(path: Path, embed: Embed) -> dict:
    """Leaf accuracy of the shipped placer on hand-labelled clauses (JSONL ``clause``, ``leaf``, ``alt``):
    top-1 of ``memory.engine.placement.LeafPlacer.rank`` in {leaf} ∪ alt; an unfiled clause is wrong.
    The placement piece owns the number (and its cross-validation when it trains on these clauses);
    this only reports it beside the others. ``{"error": ...}`` when the placer is not there."""
    try:
        from memory.engine.placement import LeafPlacer

        labels = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        placer = LeafPlacer.for_schema(default_schema())
        texts = placer.texts()
        embedded = [[float(x) for x in v] for v in embed([t for _, t in texts])]
        leaf_vectors = placer.vectors(embedded) if hasattr(placer, "vectors") else embedded  # indexed once
        vectors = embed([r["clause"] for r in labels])
        right = 0
        for row, vector in zip(labels, vectors, strict=True):
            ranked = placer.rank(row["clause"], [float(x) for x in vector], leaf_vectors, top=1)
            right += bool(ranked) and ranked[0][0] in {row["leaf"], *row.get("alt", [])}
    except Exception as exc:  # another piece's API: report, never stop the run
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"accuracy": round(right / len(labels), 4) if labels else None, "clauses": len(labels),
            "labels": shown(path)}  # fmt: skip


# --- metrics ---------------------------------------------------------------------------------------


def _metric(value, unit, note, target=None):
    return {"value": value, "unit": unit, "target": target, "note": note}


def _rnd(x, n=4):
    return None if x is None else round(float(x), n)


def _set_values(p: dict) -> dict[str, object]:
    """The headline numbers of one pooled set, by metric name."""
    v, c, a = p["values"], p["coverage"], p["answerable"]
    at = c.get("precision_at") or {}
    return {
        "memlistener.grounded_rate": v["grounded_rate"],
        "memlistener.invented_rate": v["invented_rate"],
        "memlistener.wrong_speaker_rate": v["wrong_speaker_rate"],
        "memlistener.s_per_chunk_p50": _rnd(p["s_per_chunk_p50"]),
        "memlistener.model_skip_share": _rnd(p["model_skip_share"]),
        "quality.locomo_obs_coverage": c["coverage"].get("0.5"),
        "quality.locomo_obs_coverage_06": c["coverage"].get("0.6"),
        "quality.locomo_obs_coverage_07": c["coverage"].get("0.7"),
        "quality.locomo_obs_precision": c["precision"],
        "quality.locomo_obs_precision_06": at.get("0.6"),
        "quality.tree_tokens_p50": _rnd(p["tree_tokens_p50"], 1),
        "quality.first_person_rate": p["first_person_rate"],
        "quality.words_per_clause_p50": p["words_per_clause_p50"],
        "quality.answerable_ratio": a["ratio"],
        "quality.answerable_words_ratio": p["answerable_words_ratio"],
        "quality.false_deletes": p["false_deletes"],
    }


UNITS = {"memlistener.s_per_chunk_p50": "s", "quality.tree_tokens_p50": "tokens",
         "quality.words_per_clause_p50": "words", "quality.false_deletes": "ops"}  # fmt: skip


def _detail(name: str, p: dict) -> str:
    v, c, a = p["values"], p["coverage"], p["answerable"]
    if name == "memlistener.model_skip_share":
        return f"chunks answered without a model call, of {p['chunks']}"
    if name.startswith("memlistener.") and name != "memlistener.s_per_chunk_p50":
        return f"{v['values']} applied ADD/UPDATE values"
    if name == "memlistener.s_per_chunk_p50":
        return f"median wall time of one listener call over {p['chunks']} chunks ({p['errors']} errors)"
    if name.startswith("quality.locomo_obs"):
        return f"{c['facts']} observation facts, {c['clauses']} clauses, neutralised MiniLM cosine"
    if name == "quality.answerable_ratio":
        return (f"{a['questions']} questions (cat 1-4, naming a speaker): answer words all in the trees "
                f"{a['in_tree']}, in the history {a['in_history']}")  # fmt: skip
    if name == "quality.answerable_words_ratio":
        return f"tree words {p['tree_words']} / history words {p['history_words']}"
    if name == "quality.false_deletes":
        return "DELETEs + UPDATEs only removing clauses; no real retraction in the dev data (list in the run file)"
    return f"{p['clauses']} clauses"


def metrics(m: dict) -> dict[str, dict]:
    """latest.json rows: the validation set's values (the tune set's in the note), SPC, the load."""
    head = m.get("validation") or m.get("tune") or m
    other = m.get("tune") if m.get("validation") else None
    load = f"load average {m.get('load', os.getloadavg()[0]):.1f} on {os.cpu_count() or 0} cores"
    label = m.get("label") or head.get("label", "")
    where = f"LoCoMo {'+'.join(head['conversations'])} ({label}, both speakers)"
    head_values = _set_values(head)
    other_values = _set_values(other) if other else {}
    rows = {}
    for name, value in head_values.items():
        note = f"{_detail(name, head)}; {where}"
        if other:
            note += (
                f"; tune {'+'.join(other['conversations'])}: {other_values[name]} ({_detail(name, other)})"
            )
        if name.startswith("quality.locomo_obs") and m.get("null_coverage"):
            null = m["null_coverage"]
            key = name.removeprefix("quality.locomo_obs_")
            floor = {
                "coverage": null["coverage"].get("0.5"),
                "coverage_06": null["coverage"].get("0.6"),
                "coverage_07": null["coverage"].get("0.7"),
                "precision": null["precision"],
                "precision_06": (null["precision_at"] or {}).get("0.6"),
            }.get(key)
            note += f"; judge floor (each conversation's facts against the next one's trees): {floor}"
        rows[name] = _metric(value, UNITS.get(name, "ratio"), f"{note}; {load}", TARGETS.get(name))
    spc = m.get("spc")
    spc_where = m.get("spc_data") or "skipped: no --spc"
    if spc:
        base = (f"{spc['subjects']} speakers, {spc['stated']} of {spc['persona_facts']} persona facts stated "
                f"(cosine >= 0.6 to a sentence), {spc['clauses']} clauses, {spc['chunks']} chunks "
                f"(s/chunk p50 {_rnd(spc['s_per_chunk_p50'])}), first-person {spc['first_person_rate']}, "
                f"words/clause p50 {spc['words_per_clause_p50']}; {spc_where}; {load}")  # fmt: skip
        rows["quality.spc_stated_coverage_06"] = _metric(
            spc["coverage"], "ratio", f"stated facts with a clause at >= 0.6; {base}",
            TARGETS["quality.spc_stated_coverage_06"])  # fmt: skip
        rows["quality.spc_precision_06"] = _metric(
            spc["precision"], "ratio", f"clauses with a persona fact at >= 0.6; {base}"
        )
    else:
        for name in ("quality.spc_stated_coverage_06", "quality.spc_precision_06"):
            rows[name] = _metric(None, "ratio", f"{spc_where}; {load}", TARGETS.get(name))
    if m.get("leaf_accuracy"):
        acc = m["leaf_accuracy"]
        rows["quality.leaf_accuracy"] = _metric(
            acc.get("accuracy"), "ratio", json.dumps(acc)[:300], ">= 0.80"
        )
    return rows


METRIC_NAMES = (
    "memlistener.grounded_rate", "memlistener.invented_rate", "memlistener.wrong_speaker_rate",
    "memlistener.s_per_chunk_p50", "memlistener.model_skip_share", "quality.locomo_obs_coverage",
    "quality.locomo_obs_coverage_06", "quality.locomo_obs_coverage_07", "quality.locomo_obs_precision",
    "quality.locomo_obs_precision_06", "quality.tree_tokens_p50", "quality.first_person_rate",
    "quality.words_per_clause_p50", "quality.answerable_ratio", "quality.answerable_words_ratio",
    "quality.false_deletes", "quality.spc_stated_coverage_06", "quality.spc_precision_06",
)  # fmt: skip


# --- output ----------------------------------------------------------------------------------------


def _fmt(x) -> str:
    return "–" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


SUMMARY = [("cov@.6", "quality.locomo_obs_coverage_06"), ("prec@.6", "quality.locomo_obs_precision_06"),
           ("1st person", "quality.first_person_rate"), ("words p50", "quality.words_per_clause_p50"),
           ("answerable", "quality.answerable_ratio"), ("words ratio", "quality.answerable_words_ratio"),
           ("false del", "quality.false_deletes"), ("grounded", "memlistener.grounded_rate"),
           ("s/chunk", "memlistener.s_per_chunk_p50")]  # fmt: skip


def summary_rows(m: dict) -> list[tuple[str, dict]]:
    sets = [(name, p) for name, p in (m.get("per_conversation") or {}).items()]
    sets += [(f"{k} pooled", m[k]) for k in ("tune", "validation") if m.get(k)]
    if not sets and m.get("conversations"):
        sets = [(m["conversation"], m)]
    return sets


def print_table(m: dict) -> None:
    print(f"{m.get('label')}: " + " | ".join(h for h, _ in SUMMARY))
    for name, p in summary_rows(m):
        values = _set_values(p)
        print(f"{name:<18} {p['chunks']:>5} chunks | " + " | ".join(_fmt(values[k]) for _, k in SUMMARY))
    if m.get("spc"):
        spc = m["spc"]
        print(f"SPC {m['spc_data']}: stated coverage@.6 {_fmt(spc['coverage'])}, precision@.6 "
              f"{_fmt(spc['precision'])} ({spc['stated']} stated facts, {spc['clauses']} clauses)")  # fmt: skip


def markdown(m: dict, rows: dict[str, dict], stamp: str) -> str:
    """The run's readable summary: the metrics, per-set table, removals, a sample of values."""
    head = "+".join((m.get("validation") or m.get("tune") or {}).get("conversations", []))
    tune_names = "+".join(m["tune"]["conversations"]) if m.get("tune") and m.get("validation") else "–"
    out = [f"# Quality run {stamp}", "",
           f"Listener: {m['label']}; data {m['data']}; SPC {m.get('spc_data')}; turns carry ts: {m['ts_passed']}; "
           f"{m['seconds']} s (LoCoMo {m['locomo_seconds']} s); load average {m['load']:.1f} on "
           f"{os.cpu_count() or 0} cores.", "",
           f"| metric | value ({head}) | target | tune ({tune_names}) |", "|---|---|---|---|"]  # fmt: skip
    tune = _set_values(m["tune"]) if m.get("tune") and m.get("validation") else {}
    for name, r in rows.items():
        out.append(f"| `{name}` | {_fmt(r['value'])} | {r['target'] or ''} | {_fmt(tune.get(name))} |")
    out += ["", "| set | chunks | " + " | ".join(h for h, _ in SUMMARY) + " |",
            "|---|---|" + "---|" * len(SUMMARY)]  # fmt: skip
    for name, p in summary_rows(m):
        values = _set_values(p)
        out.append(f"| {name} | {p['chunks']} | " + " | ".join(_fmt(values[k]) for _, k in SUMMARY) + " |")
    null = m.get("null_coverage")
    if null:
        out += ["", f"Judge floor (each conversation's facts against the next conversation's trees, neutralised): "
                f"coverage@.6 {_fmt(null['coverage'].get('0.6'))}, precision@.6 "
                f"{_fmt((null['precision_at'] or {}).get('0.6'))}."]  # fmt: skip
    removals = [r for k in ("tune", "validation") if m.get(k) for r in m[k]["removals"]]
    out += ["", f"## Removals ({len(removals)}; the dev conversations hold no real retraction)", ""]
    for r in removals:
        said = " / ".join(r["user_turns"])[:300]
        out.append(f"- {r['subject']} chunk {r['chunk']}: {r['op']} `{r['path']}` dropped "
                   f"{json.dumps(r['dropped'])[:200]}; user said: {said!r}")  # fmt: skip
    out += ["", f"## {len(m['sample'])} tree values (seeded sample, seed {SEED})", "",
            "| subject | leaf | value |", "|---|---|---|"]  # fmt: skip
    for r in m["sample"]:
        value = r["value"].replace("|", "\\|")
        out.append(f"| {r['subject']} | `{r['path']}` | {value} |")
    return "\n".join(out) + "\n"


def _git_sha() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip() or "nogit"  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "nogit"


def _jsonable(m: dict) -> dict:
    """The run record without trees' internals (trees as plain dicts, rows dropped)."""

    def clean(p: dict | None) -> dict | None:
        if p is None:
            return None
        return {k: v for k, v in p.items() if k not in ("speakers",)}

    return {
        **{k: v for k, v in m.items() if k not in ("tune", "validation", "per_conversation")},
        "tune": clean(m.get("tune")),
        "validation": clean(m.get("validation")),
        "per_conversation": {k: clean(v) for k, v in (m.get("per_conversation") or {}).items()},
    }


def write_run(m: dict, rows: dict[str, dict], folder: Path | None = None) -> tuple[Path, Path]:
    """``<folder>/<date>-<sha>.json`` (metrics + the run record) and ``.md`` (the readable summary)."""
    folder = folder or RUNS
    folder.mkdir(parents=True, exist_ok=True)
    stamp = f"{dt.date.today().isoformat()}-{_git_sha()}"
    record = {"metrics": rows, "run": _jsonable(m), "command": " ".join(["python", *sys.argv])}
    json_path, md_path = folder / f"{stamp}.json", folder / f"{stamp}.md"
    json_path.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    md_path.write_text(markdown(m, rows, stamp), encoding="utf-8")
    return json_path, md_path


def write_latest(rows: dict[str, dict]) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    previous.update(rows)
    RESULTS.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")


NAMES = (
    "memlistener.grounded_rate", "memlistener.invented_rate", "memlistener.wrong_speaker_rate",
    "memlistener.s_per_chunk_p50", "memlistener.model_skip_share", "quality.locomo_obs_coverage",
    "quality.locomo_obs_coverage_06", "quality.locomo_obs_coverage_07", "quality.locomo_obs_precision",
    "quality.locomo_obs_precision_06", "quality.tree_tokens_p50", "quality.first_person_rate",
    "quality.words_per_clause_p50", "quality.answerable_ratio", "quality.answerable_words_ratio",
    "quality.false_deletes", "quality.spc_stated_coverage_06", "quality.spc_precision_06",
)  # fmt: skip


def _skipped(path: Path) -> dict[str, dict]:
    note = f"skipped: LoCoMo file not found at {path} (pass --data or set PERSONATREE_LOCOMO_PATH)"
    return {k: _metric(None, UNITS.get(k, "ratio"), note, TARGETS.get(k)) for k in NAMES}


def run() -> dict[str, dict]:
    """bench/run.py entry: the extractive listener on the five conversations and SPC 800..999; the
    run folder is written too."""
    path = data_path()
    if not path.is_file():
        return _skipped(path)
    m = measure_all(
        path, CONVERSATIONS, Driver(), spc_path=data_path(None, "PERSONATREE_SPC_PATH", DEFAULT_SPC)
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
        "--leaf-labels", type=Path, help="hand-labelled clauses (the placement piece scores them)"
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
