"""bench_quality's LoCoMo side: the data files, the listener loop (a MemListener or a baseline) over
one speaker's chunks, one conversation measured and several pooled; the leaf-accuracy hook.
``bench/bench_quality.py`` (the command) documents the metrics."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from evaluation import quality
from evaluation.training.cosine import user_sentences
from memory.backfill.locomo import parse_locomo_date, turn_text
from memory.engine.candidates import is_self_disclosure, leaf_text
from memory.engine.chunker import chunk_turns
from memory.engine.clauses import merge_clauses
from memory.engine.dates import DATE_EVIDENCE, chunk_evidence
from memory.engine.ops import Op, OpType
from memory.engine.schema import default_schema
from memory.engine.segment import segment
from memory.engine.tree import Tree, apply

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "benchmarks"
DEFAULT_DATA = SHARED / "locomo" / "locomo_dev5.json"
DEFAULT_SPC = SHARED / "synthetic_persona_chat" / "valid.csv"
BASELINES = ("no_op", "nearest")
TUNE = ("conv-26", "conv-30", "conv-41", "conv-42")
VALIDATION = ("conv-43",)
CONVERSATIONS = (*TUNE, *VALIDATION)
SPC_RANGE = (800, 1000)
QA_CATEGORIES = (1, 2, 3, 4)
TAU = 0.6
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


def _session_date(conv: dict, n: int) -> str:
    return str(conv.get(f"session_{n}_date_time") or "")


def session_dates(sample: dict) -> list[str]:
    conv = sample["conversation"]
    return [_session_date(conv, n) for n in _session_numbers(conv)]


def history_text(sample: dict) -> str:
    """Both speakers' turns and the session dates: what a perfect memory could quote."""
    conv = sample["conversation"]
    lines = []
    for n in _session_numbers(conv):
        lines.append(_session_date(conv, n))
        lines += [turn_text(t) for t in conv[f"session_{n}"]]
    return "\n".join(line for line in lines if line)


def first_person_clauses(sample: dict) -> list[str]:
    """Every clause (:func:`memory.engine.segment.segment`) of both speakers' turns that says I, me,
    my, we, us or our (:func:`evaluation.quality.says_first_person`): a tree that pasted all of them
    is the reference the answerable ratio is read against (:func:`measure_sample`'s ``pasted``)."""
    conv = sample["conversation"]
    turns = [t for n in _session_numbers(conv) for t in conv[f"session_{n}"]]
    return [
        c.text
        for t in turns
        for c in segment(t.get("text") or "", turn=0)
        if quality.says_first_person(c.text)
    ]


def history_words(sample: dict) -> int:
    conv = sample["conversation"]
    return quality.word_count(turn_text(t) for n in _session_numbers(conv) for t in conv[f"session_{n}"])


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
        dropped = quality.removal(str(op.type), old, op.value)
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
        return [o.to_op() for o in res.accepted], res.skipped_model, res.error

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
    from serving.embedder import default_embed

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
        run["values"] = quality.value_metrics(run["rows"])
        facts[speaker] = observations(sample, speaker)
        run["coverage"] = quality.observation_coverage(
            dict(run["tree"]), facts[speaker], driver.embed, names=speaker_names(speaker)
        )
        per_speaker[speaker] = run
    runs = list(per_speaker.values())
    clauses = [c for run in runs for c in quality.tree_clauses(dict(run["tree"]))]
    tree_text = "\n".join(clauses)
    questions = speaker_questions(sample)
    answers, history = [q["answer"] for q in questions], history_text(sample)
    first_person = first_person_clauses(sample)
    return {
        "conversation": conversation,
        "speakers": per_speaker,
        "facts": facts,
        "clauses": clauses,
        "answerable": quality.answerable(answers, tree_text, history),
        # every first-person clause pasted, with every session date (dates not counted as words)
        "pasted": quality.answerable(answers, "\n".join(first_person + session_dates(sample)), history),
        "pasted_words": quality.word_count(first_person),
        "tree_words": quality.word_count(clauses),
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
        parts.append(quality.observation_coverage(tree, facts, embed, names=names))
    return quality.pool_coverage(parts)


def pool(convs: Sequence[dict], label: str, listener: bool = True) -> dict:
    """Several measured conversations as one set (counts pooled, medians over every chunk / tree);
    ``listener=False`` (a baseline) leaves the model skip share out."""
    runs = [run for c in convs for run in c["speakers"].values()]
    seconds = [s for run in runs for s in run["seconds"]]
    skipped = [s for run in runs for s in run["skipped"]]
    clauses = [x for c in convs for x in c["clauses"]]
    ans = {k: sum(c["answerable"][k] for c in convs) for k in ("questions", "in_tree", "in_history")}
    pasted = {k: sum(c["pasted"][k] for c in convs) for k in ("questions", "in_tree", "in_history")}
    tree_words, hist_words = sum(c["tree_words"] for c in convs), sum(c["history_words"] for c in convs)
    pasted_words = sum(c["pasted_words"] for c in convs)
    removals = [r for run in runs for r in run["removals"]]
    return {
        "label": label,
        "conversations": [c["conversation"] for c in convs],
        "values": quality.value_metrics([r for run in runs for r in run["rows"]]),
        "coverage": quality.pool_coverage([run["coverage"] for run in runs]),
        "chunks": len(seconds),
        "errors": sum(run["errors"] for run in runs),
        "s_per_chunk_p50": statistics.median(seconds) if seconds else None,
        "model_skip_share": (sum(bool(s) for s in skipped) / len(seconds)) if seconds and listener else None,
        "tree_tokens_p50": statistics.median(run["coverage"]["tree_tokens"] for run in runs)
        if runs
        else None,
        "clauses": len(clauses),
        "first_person_rate": quality.first_person_rate(clauses),
        "words_per_clause_p50": quality.words_per_clause_p50(clauses),
        "answerable": {
            **ans,
            **quality.answerable_ratio(ans["in_tree"], ans["in_history"], ans["questions"]),
        },
        "tree_words": tree_words,
        "history_words": hist_words,
        "answerable_words_ratio": round(tree_words / hist_words, 4) if hist_words else None,
        "pasted": {
            **quality.answerable_ratio(pasted["in_tree"], pasted["in_history"], pasted["questions"]),
            "words_ratio": round(pasted_words / hist_words, 4) if hist_words else None,
        },
        "false_deletes": len(removals),
        "removals": removals,
    }


def measure(path: Path, conversation: str, *, engine: str = "extractive", prompt_mode: PromptMode = "pointing",
            baseline: str | None = None, embed: Embed | None = None) -> dict:  # fmt: skip
    """One LoCoMo conversation, pooled over its two speakers (``pool`` of one)."""
    driver = Driver(engine, prompt_mode, baseline, embed)
    conv = measure_sample(load_sample(path, conversation), driver)
    return {**pool([conv], driver.label, driver.listener is not None), "speakers": conv["speakers"], "conversation": conversation,
            "load": os.getloadavg()[0]}  # fmt: skip


HEAD_FILE = Path(__file__).resolve().parent.parent / "memory" / "engine" / "models" / "leaf_head.json"


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
        # The shipped head was trained on these clauses: their top-1 rate is its fit, not a measure.
        # The measure is the trainer's own, recorded in the head file: 5-fold CV grouped by source,
        # and a slice held out of all tuning (evaluation/placement_train.py).
        training = json.loads(HEAD_FILE.read_text(encoding="utf-8")).get("training", {})
        cross = training["cross_validated"]["clause"]["blend"]
        held = training.get("held_out", {}).get("blend")
    except Exception as exc:  # another piece's API: report, never stop the run
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"accuracy": cross, "held_out": held, "in_sample_fit": round(right / len(labels), 4) if labels else None,
            "clauses": len(labels), "labels": shown(path)}  # fmt: skip
