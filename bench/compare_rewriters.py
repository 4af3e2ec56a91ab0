"""Issue 23 step 8, measured: the shipped rules' fact against a local GGUF model's rewrite of the same clause.

Not part of ``make bench`` (the model takes about two seconds a clause on 2 shared cores). Each LoCoMo conversation goes
through the product's listener (the extractive engine, the fact pipeline) speaker by speaker as in
``bench/bench_quality.py``; every clause the pipeline keeps and files (an ADD pointer item) is
recorded with its sentence, message time, leaf and chunk. The same clause then goes to the pinned
GGUF model (``serving.engines.llamacpp.LlamaCppEngine``, the file ``make model`` assembles), with a
short few-shot chat prompt (:func:`few_shot_prompt`) asking for a third-person fact of at most 12 words in
the user's words; its reply is cleaned (:func:`clean_reply`) and its relative dates written out by
the product's date step (``memory.engine.dates.with_dates``), as the rules' facts are.

Both values go through the product's gate alone (``memory.engine.gate.gate`` with the listener's
policy: grounding against the cited sentence and the chunk's derived dates, small talk), as an ADD
on an empty leaf, so neither leans on what the leaf held. Four trees per speaker are judged:

- ``rules``: the listener's tree as written;
- ``model``: each rules clause replaced by the model's value, dropped when the gate refuses it;
- ``model_gated``: the model's value where the gate accepts it, else the rules clause stays (the
  step 8 design: an off-hot-path UPDATE that the gate may refuse);
- ``model_3rd``: as ``model_gated``, with a value in the first person refused too (a check the
  gate does not make today).

Per set (tune: conv-26, 30, 41, 42; validation: conv-43): gate refusals, words p50 and first-person
rate of the tree clauses, coverage@0.6 / precision@0.6 of the LoCoMo observations (the MiniLM judge
of ``evaluation/quality.py``, names neutralised), the answerable share, seconds per clause. Writes
``bench/results/rewriter/<date>-<sha>.json``; every pair goes to ``var/rewriter/pairs-<stamp>.jsonl``,
the model's replies to ``var/rewriter/recordings.jsonl`` (reused by the next run for the same prompt,
with the seconds they took then).

The rules' seconds are those of their rewrite and date step alone (``state_fact``); the steps before
(segment, classify, place) are the same for both and are not counted.

    .venv/bin/python bench/compare_rewriters.py --threads 1 [--conversations conv-26,conv-43] [--model PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

OUT = ROOT / "bench" / "results" / "rewriter"
VAR = ROOT / "var" / "rewriter"
MAX_WORDS = 12
PROMPT_VERSION = "rewriter-2"

SYSTEM = (
    "Rewrite what the speaker said as one short fact about them, in the third person, for their "
    "memory file. Start with the verb, never with I, He or She. At most 12 words. Use only their "
    "words. Keep names, numbers and time words (yesterday, last week). Drop greetings, opinions "
    "about the chat and filler. If there is no lasting fact about the speaker, answer NONE."
)
#: Few-shot turns (invented, not from LoCoMo): the speaker's words, then the fact.
SHOTS = (
    ("Speaker: Maya. Said on 8 May 2023.\nSentence: Oh, and I've actually been running a lot lately!",
     "Has been running a lot lately"),
    ("Speaker: Tom. Said on 2 March 2022.\nSentence: I'm a nurse at the children's hospital downtown, and I love it.",
     "Is a nurse at the children's hospital downtown and loves it"),
    ("Speaker: Ana. Said on 19 June 2023.\nSentence: My sister Eva and I went hiking in the Alps last week",
     "Went hiking in the Alps with their sister Eva last week"),
    ("Speaker: Lee. Said on 3 July 2022.\nSentence: Yeah, I baked bread for my neighbors on Sunday!",
     "Baked bread for their neighbors on Sunday"),
    ("Speaker: Raj. Said on 4 October 2022.\nSentence: Haha yeah, how about you?", "NONE"),
)  # fmt: skip

_LABEL = re.compile(r"^\s*(?:fact|answer|output)\s*:\s*", re.IGNORECASE)
_QUOTES = "\"'\u201c\u201d\u2018\u2019`*"
_PRONOUN_LEAD = re.compile(r"^(?:he|she|they)\s+(?=\w)", re.IGNORECASE)
_NONE = re.compile(r"^\W*none\W*$", re.IGNORECASE)


# --- the prompt and the reply (pure) --------------------------------------------------------------


def said_on(ts: dt.datetime | None) -> str:
    return f" Said on {ts.day} {ts:%B %Y}." if ts is not None else ""


def rewrite_prompt(speaker: str, clause: str, ts: dt.datetime | None) -> str:
    """The user message of the rewrite prompt for one kept clause: the speaker's first name, the
    message date and the clause (the few-shot turns before it are the same for every call, so
    llama.cpp keeps their KV)."""
    first = speaker.split()[0] if speaker.split() else "the user"
    return f"Speaker: {first}.{said_on(ts)}\nSentence: {' '.join(clause.split())}"


def few_shot_prompt(dynamic: str):
    """``dynamic`` as a ``serving.engines.base.Prompt`` whose chat messages are the rules, the
    few-shot turns and then ``dynamic`` (a 0.5B model copies the sentence when the examples sit
    in the system message)."""
    from serving.engines.base import Prompt

    class FewShot(Prompt):
        def messages(self) -> list[dict[str, str]]:
            shots = [{"role": r, "content": c} for u, a in SHOTS for r, c in (("user", u), ("assistant", a))]
            return [{"role": "system", "content": SYSTEM}, *shots, {"role": "user", "content": self.dynamic}]

    return FewShot(SYSTEM, dynamic, PROMPT_VERSION)


def clean_reply(text: str, speaker: str = "") -> str:
    """The model's reply as a value: its first line without a "Fact:" label, quotes, a final stop
    or a leading subject (the speaker's first name, He/She/They); "" for NONE or nothing."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _LABEL.sub("", line).strip().strip(_QUOTES).strip()
    if not line or _NONE.match(line):
        return ""
    first = speaker.split()[0] if speaker.split() else ""
    if first and re.match(rf"{re.escape(first)}\b(?!')", line):
        line = line[len(first) :].lstrip(" ,:")
    elif first and re.match(rf"{re.escape(first)}['\u2019]s\b", line):
        line = "Their" + line[len(first) + 2 :]
    line = _PRONOUN_LEAD.sub("", line)
    line = line.rstrip(" .!")
    return line[:1].upper() + line[1:] if line else ""


# --- recording the pipeline's kept clauses --------------------------------------------------------


@dataclass
class Kept:
    """One clause the pipeline filed, and what each rewriter made of it."""

    conversation: str
    speaker: str
    chunk: int
    clause: str
    sentence: str
    ts: dt.datetime | None
    path: str
    rules: str
    evidence: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str | None] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    raw: str = ""


def capturing_engine():
    """The extractive engine, keeping every ADD pointer item it writes with its clause and leaf."""
    from serving.engines.extractive import ExtractiveEngine

    class Capturing(ExtractiveEngine):
        def __init__(self) -> None:
            self.items: list[tuple] = []

        def generate(self, prompts, json_schema):
            gens = super().generate(prompts, json_schema)
            for prompt, gen in zip(prompts, gens, strict=True):
                ctx = prompt.pointing
                if ctx is None:
                    continue
                units = {u.id: u for u in ctx.sentences}
                paths = {c.id: c.path for c in ctx.candidates.leaves}
                for item in gen.items or ():
                    if item["op"] == "ADD":
                        self.items.append((units[item["sentence"]], paths[item["leaf"]], item["value"]))
            return gens

    return Capturing()


def run_rules(sample: dict, driver, engine) -> tuple[dict, list[Kept]]:
    """Both speakers through the product's listener: per speaker the tree, and every filed clause."""
    from quality_locomo import chunks_of, listener_step, run_speaker, speaker_turns

    from memory.engine.dates import chunk_evidence

    conversation, kept, trees = sample["sample_id"], [], {}
    for speaker in (sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]):
        inner = listener_step(driver.listener, driver.schema, f"{conversation}:{speaker}")

        def step(tree, turns, k, inner=inner, speaker=speaker):
            before = len(engine.items)
            out = inner(tree, turns, k)
            for unit, path, value in engine.items[before:]:
                kept.append(Kept(conversation, speaker, k, unit.text, unit.origin, unit.ts, path, value,
                                 evidence=chunk_evidence(turns)))  # fmt: skip
            return out

        trees[speaker] = dict(
            run_speaker(chunks_of(speaker_turns(sample, speaker), driver.with_ts), step)["tree"]
        )
    return trees, kept


# --- the model side -------------------------------------------------------------------------------


class Recordings:
    """The model's replies by prompt digest (JSONL), so a rerun asks only for new prompts."""

    def __init__(self, path: Path, model_id: str) -> None:
        self.path, self.model_id, self.rows = path, model_id, {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                self.rows[row["key"]] = row

    def key(self, static: str, dynamic: str) -> str:
        text = json.dumps([self.model_id, PROMPT_VERSION, static, SHOTS, dynamic])
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        return self.rows.get(key)

    def put(self, key: str, text: str, seconds: float) -> None:
        row = {"key": key, "model_id": self.model_id, "text": text, "seconds": round(seconds, 4)}
        self.rows[key] = row
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")


def model_engine(path: str, threads: int):
    from serving.engines.llamacpp import LlamaCppEngine, registered_identity

    model_id, _version, chat_format = registered_identity(Path(path))
    return LlamaCppEngine(path, model_id=model_id, n_ctx=2048, n_threads=threads, chat_format=chat_format,
                          max_tokens=40, temperature=0.0)  # fmt: skip


def rewrite_all(kept: Sequence[Kept], engine, recordings: Recordings) -> None:
    from memory.engine.dates import with_dates

    for n, k in enumerate(kept, 1):
        dynamic = rewrite_prompt(k.speaker, k.clause, k.ts)
        key = recordings.key(SYSTEM, dynamic)
        hit = recordings.get(key)
        if hit is None:
            t0 = time.perf_counter()
            gen = engine.generate([few_shot_prompt(dynamic)], None)[0]
            text = gen.text if gen.error is None else ""
            seconds = time.perf_counter() - t0
            recordings.put(key, text, seconds)
            hit = {"text": text, "seconds": seconds}
        k.raw = hit["text"]
        k.values["model"] = with_dates(clean_reply(k.raw, k.speaker), k.ts, context=k.sentence)
        k.seconds["model"] = float(hit["seconds"])
        if n % 50 == 0:
            print(f"compare_rewriters: {n}/{len(kept)} clauses (load {os.getloadavg()[0]:.1f})", file=sys.stderr,
                  flush=True)  # fmt: skip


def time_rules(kept: Sequence[Kept]) -> None:
    """The rules' own value again, timed (the listener's call also classifies and places)."""
    from serving.engines.extractive import state_fact

    for k in kept:
        t0 = time.perf_counter()
        again = state_fact(k.clause, k.ts, k.sentence)
        k.seconds["rules"] = time.perf_counter() - t0
        k.values["rules"] = k.rules
        if again != k.rules:  # a fact the pipeline later dropped or shortened: the filed value counts
            k.values.setdefault("rules_again", again)


# --- the gate and the trees -----------------------------------------------------------------------


def refusal(schema, path: str, value: str, sentence: str, evidence: Sequence[str]) -> str | None:
    """The listener's gate on ``value`` as an ADD to an empty ``path`` citing ``sentence``: the
    reason it refuses it, or None."""
    from memory.engine.gate import GatePolicy, gate
    from memory.engine.ops import Op, OpType
    from memory.engine.tree import Tree

    if not value.strip():
        return "EMPTY_VALUE"
    policy = GatePolicy(grounding=True, small_talk=True)
    result = gate(schema, Tree.empty(), [Op(OpType.ADD, path, value, source=sentence)], policy, evidence)
    return str(result.rejected[0].reason) if result.rejected else None


def first_person(value: str) -> str | None:
    """``"FIRST_PERSON"`` when ``value`` speaks as the user (I/my/we: issue 23's first-person rate)."""
    from evaluation.quality import first_person_rate

    return "FIRST_PERSON" if value and first_person_rate([value]) else None


VARIANTS = ("rules", "model", "model_gated", "model_3rd")
#: The values (and refusals, seconds) each variant is judged on.
SOURCE = {"rules": "rules", "model": "model", "model_gated": "model", "model_3rd": "model_3rd"}


def variant_trees(
    trees: Mapping[str, Mapping[str, str]], kept: Sequence[Kept]
) -> tuple[dict[str, dict], int]:
    """Per variant, per speaker: the rules tree with each filed clause replaced (module docstring);
    and how many tree clauses match no filed clause (merged or trimmed on filing: left as they are)."""
    swap: dict[str, dict[str, dict[str, str | None]]] = {v: {} for v in VARIANTS}
    for k in kept:
        per = {
            "model": k.values["model"] if k.refused["model"] is None else None,
            "model_gated": k.values["model"] if k.refused["model"] is None else k.rules,
            "model_3rd": k.values["model"] if k.refused["model_3rd"] is None else k.rules,
        }
        for v, value in per.items():
            swap[v].setdefault(k.speaker, {}).setdefault(k.rules.strip(), value)
    out: dict[str, dict] = {v: {} for v in VARIANTS}
    unmatched = 0
    for speaker, tree in trees.items():
        for v in VARIANTS:
            out[v][speaker] = {}
        for path, value in tree.items():
            clauses = [c.strip() for c in value.split(";") if c.strip()]
            unmatched += sum(c not in swap["model"].get(speaker, {}) for c in clauses)
            out["rules"][speaker][path] = value  # the listener's tree as written
            for v in VARIANTS[1:]:
                table = swap[v].get(speaker, {})
                repl = [r for r in (table.get(c, c) for c in clauses) if r]
                if repl:
                    out[v][speaker][path] = "; ".join(repl)
    return out, unmatched


# --- measuring ------------------------------------------------------------------------------------


def measure_conversation(sample: dict, trees: dict, kept: list[Kept], embed) -> dict:
    from quality_locomo import history_text, observations, speaker_names, speaker_questions

    from evaluation import quality

    questions = speaker_questions(sample)
    variants, unmatched = variant_trees(trees, kept)
    out: dict = {"unmatched_clauses": unmatched}
    for v, per_speaker in variants.items():
        clauses = [c for t in per_speaker.values() for c in quality.tree_clauses(t)]
        coverage = [
            quality.observation_coverage(t, observations(sample, s), embed, names=speaker_names(s))
            for s, t in per_speaker.items()
        ]
        tree_text = "\n".join(clauses)
        out[v] = {
            "clauses": clauses,
            "coverage": coverage,
            "answerable": quality.answerable(
                [q["answer"] for q in questions], tree_text, history_text(sample)
            ),
        }
    return out


def summarise(convs: Sequence[dict], kept: Sequence[Kept]) -> dict:
    from evaluation import quality

    out = {"conversations": [c["conversation"] for c in convs], "kept_clauses": len(kept),
           "tree_clauses_matching_no_filed_clause": sum(c["variants"]["unmatched_clauses"] for c in convs)}  # fmt: skip
    for v in VARIANTS:
        parts = [c["variants"][v] for c in convs]
        clauses = [x for p in parts for x in p["clauses"]]
        cov = quality.pool_coverage([c for p in parts for c in p["coverage"]])
        ans = {k: sum(p["answerable"][k] for p in parts) for k in ("questions", "in_tree", "in_history")}
        values = [k.values[SOURCE[v]] for k in kept]
        refused = [k.refused[SOURCE[v]] for k in kept]
        seconds = [k.seconds[SOURCE[v]] for k in kept]
        reasons: dict[str, int] = {}
        for r in refused:
            if r:
                reasons[r] = reasons.get(r, 0) + 1
        out[v] = {
            "values_refused": sum(r is not None for r in refused),
            "refusal_rate": round(sum(r is not None for r in refused) / len(kept), 4) if kept else None,
            "refusal_reasons": reasons,
            "value_words_p50": quality.words_per_clause_p50([x for x in values if x]),
            "value_over_12_words": sum(len(x.split()) > MAX_WORDS for x in values if x),
            "tree_clauses": len(clauses),
            "words_per_clause_p50": quality.words_per_clause_p50(clauses),
            "first_person_rate": quality.first_person_rate(clauses),
            "coverage_06": cov["coverage"].get("0.6"),
            "precision_06": (cov["precision_at"] or {}).get("0.6"),
            "answerable": {
                **ans,
                **quality.answerable_ratio(ans["in_tree"], ans["in_history"], ans["questions"]),
            },
            "s_per_clause_p50": round(statistics.median(seconds), 4) if seconds else None,
            "s_per_clause_mean": round(statistics.fmean(seconds), 4) if seconds else None,
        }
    return out


def pair(k: Kept) -> dict:
    return {"conversation": k.conversation, "speaker": k.speaker, "chunk": k.chunk, "path": k.path,
            "sentence": k.sentence, "clause": k.clause, "ts": k.ts.isoformat() if k.ts else None,
            "rules": k.rules, "model_raw": k.raw, "model": k.values.get("model"), "refused": k.refused,
            "seconds": {n: round(s, 4) for n, s in k.seconds.items()}}  # fmt: skip


ROW = "{:<12} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8} {:>10} {:>9}"


def print_table(label: str, s: dict) -> None:
    print(f"\n{label}: {', '.join(s['conversations'])}; {s['kept_clauses']} kept clauses")
    print(
        ROW.format(
            "variant", "refused", "words50", "1st pers", "cov@.6", "prec@.6", "answer", "s/clause", "clauses"
        )
    )
    for v in VARIANTS:
        r = s[v]
        print(ROW.format(v, f"{r['refusal_rate']:.3f}", f"{r['words_per_clause_p50']}", f"{r['first_person_rate']:.3f}",
                         f"{r['coverage_06']:.3f}", f"{r['precision_06']:.3f}",
                         f"{r['answerable'].get('ratio') or 0:.3f}", f"{r['s_per_clause_p50']:.4f}",
                         r["tree_clauses"]))  # fmt: skip


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main(argv: list[str] | None = None) -> int:
    from quality_locomo import TUNE, VALIDATION, Driver, data_path, default_embedder, load_samples, shown

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--conversations", default=",".join((*TUNE, *VALIDATION)))
    ap.add_argument("--model", default=str(ROOT / "var" / "models" / "memlistener.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--recordings", default=str(VAR / "recordings.jsonl"))
    ap.add_argument("--examples", type=int, default=5, help="pairs printed side by side")
    args = ap.parse_args(argv)
    path = data_path(args.data)
    if not path.is_file():
        print(f"compare_rewriters: no data at {path}")
        return 0
    wanted = [c.strip() for c in args.conversations.split(",") if c.strip()]
    samples = load_samples(path)
    from serving.config import EngineConfig
    from serving.listener import build_listener

    started, load0 = time.perf_counter(), os.getloadavg()
    capture = capturing_engine()
    driver = Driver(
        listener=build_listener(EngineConfig(kind="extractive", prompt_mode="pointing"), engine=capture)
    )
    embed = default_embedder()
    engine = model_engine(args.model, args.threads)
    recordings = Recordings(Path(args.recordings), engine.model_id)
    convs, all_kept = [], []
    for name in wanted:
        sample = samples[name]
        trees, kept = run_rules(sample, driver, capture)
        time_rules(kept)
        rewrite_all(kept, engine, recordings)
        for k in kept:
            k.refused = {v: refusal(driver.schema, k.path, k.values[v], k.sentence, k.evidence)
                         for v in ("rules", "model")}  # fmt: skip
            k.values["model_3rd"], k.seconds["model_3rd"] = k.values["model"], k.seconds["model"]
            k.refused["model_3rd"] = k.refused["model"] or first_person(k.values["model"])
        convs.append({"conversation": name, "variants": measure_conversation(sample, trees, kept, embed),
                      "kept": kept})  # fmt: skip
        all_kept += kept
        print(
            f"compare_rewriters: {name} done, {len(kept)} clauses (load {os.getloadavg()[0]:.1f})",
            file=sys.stderr,
        )
    sets = {}
    for label, names in (("tune", TUNE), ("validation", VALIDATION)):
        chosen = [c for c in convs if c["conversation"] in names]
        if chosen:
            sets[label] = summarise(chosen, [k for c in chosen for k in c["kept"]])
            print_table(label, sets[label])
    differ = [k for k in all_kept if k.values["model"] != k.rules]
    examples = random.Random(0).sample(differ, min(args.examples, len(differ)))
    print("\nexamples (seed 0, clauses where the two differ):")
    for k in examples:
        print(f"- sentence: {k.sentence}\n  rules:    {k.rules}  [{k.refused['rules'] or 'accepted'}]\n"
              f"  model:    {k.values['model']}  [{k.refused['model'] or 'accepted'}]")  # fmt: skip
    sha = _git("rev-parse", "--short", "HEAD") or "nogit"
    stamp = f"{dt.date.today().isoformat()}-{sha}"
    VAR.mkdir(parents=True, exist_ok=True)
    pairs_path = VAR / f"pairs-{stamp}.jsonl"
    pairs_path.write_text("".join(json.dumps(pair(k)) + "\n" for k in all_kept), encoding="utf-8")
    record = {
        "command": " ".join(["python", *sys.argv]),
        "head": sha,
        "engine_dirty": bool(_git("status", "--short", "memory/engine", "serving")),
        "data": shown(path),
        "model": {
            "path": shown(Path(args.model)),
            "model_id": engine.model_id,
            "threads": args.threads,
            "prompt_version": PROMPT_VERSION,
            "system": SYSTEM,
            "shots": SHOTS,
        },  # fmt: skip
        "sets": sets,
        "seconds": round(time.perf_counter() - started, 1),
        "load_start": [round(x, 2) for x in load0],
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "examples": [pair(k) for k in examples],
        "refused_model_examples": [pair(k) for k in all_kept if k.refused["model"]][:10],
    }
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{stamp}.json"
    out.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    print(f"\nwrote {shown(out)} and {shown(pairs_path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
