"""Compare the two answer modes of ``/answer`` (extractive vs the responder model) on LoCoMo dev QA.

Not part of ``make bench`` (the 0.5B responder takes seconds per answer). One conversation is
backfilled through the product's path (``evaluation.pipeline``: the configured default MemListener,
evidence indexed), into its own SQLite database and Milvus Lite file under ``--work``; then for the
first ``--limit`` questions of categories 1-4, each subject the question names gets ONE context from
the product's context builder (``--mode``, default auto: the router; deep recall expands the query
with the responder as the product does), and both answer modes answer over that same context:
``memory.services.query.extractive_build`` and ``model_build``. Reported per mode: LoCoMo token-F1
(``evaluation.scoring.score_locomo``; for the extractive answer also with its citations stripped),
the share of answers flagged as contradicting the context (a negation or abstention while the gold
answer's words are in the context), and milliseconds per answer. Items go to ``--out`` (JSON) for
reading.

    .venv/bin/python bench/compare_answers.py --conversation conv-26 --limit 60 --out var/compare_answers/answers.json
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "benchmarks" / "locomo" / "locomo_dev5.json"
NEGATION = re.compile(
    r"\b(not|no|never|none|nothing|cannot|can't|don't|doesn't|didn't|isn't|wasn't|unknown)\b", re.IGNORECASE
)
CITATION = re.compile(r"\s*\[[^\]]*\]")
ATTRIBUTION = re.compile(r"\((?:the user|the other speaker)(?:, ([^)]*))?\)")


def plain(answer: str) -> str:
    """The extractive answer without its citations and speaker attributions (dates kept)."""
    return ATTRIBUTION.sub(lambda m: m.group(1) or "", CITATION.sub("", answer)).replace('"', "")


def setup(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.local")
    os.environ["DATABASE_URL"] = f"sqlite:///{work / 'eval.sqlite3'}"
    os.environ["PERSONATREE_MILVUS_URI"] = str(work / "milvus.db")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build_contexts(args, conv, questions, records: list[dict], cache: Path | None) -> list[dict]:
    """Backfill the conversation, then per question and subject read: the product's context (and the
    leaves it rendered) and, unless --no-model, the responder's answer over it. Appends to `records`
    (questions already there are skipped) and rewrites `cache` after each question."""
    from evaluation import pipeline
    from evaluation.locomo_run import subjects_for
    from memory.backfill.locomo import LocomoSource
    from memory.selectors import ALL_TIERS
    from memory.services import query as q_service

    ctx = pipeline.run_context(
        run_id="answers",
        memlistener=None,  # the product's default listener
        responder=args.responder,
        responder_max_tokens=48,
        tenant_name=f"answers-{args.conversation}",
    )
    label = args.data.rsplit("/", 1)[-1]
    subjects = {}
    for history in LocomoSource(args.data, label=label):
        if history.meta["sample_id"] != args.conversation:
            continue
        t0 = time.perf_counter()
        subjects[history.meta["speaker"]] = pipeline.ingest_history(ctx=ctx, history=history)
        print(f"ingested {history.external_id} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    for n, qa in enumerate(questions):
        if n < len(records):
            continue
        ask_model = not args.no_model and (args.model_limit is None or n < args.model_limit)
        reads, model = [], []
        for speaker in subjects_for(qa.question, conv.speakers):
            built, leaves = q_service._context(
                subject=subjects[speaker],
                query=qa.question,
                mode=args.mode,
                as_of=None,
                token_budget=q_service.DEFAULT_TOKEN_BUDGET,  # what /answer uses when not told
                tiers=ALL_TIERS,
            )
            reads.append({"context": built.to_dict(), "leaves": dict(leaves)})
            if ask_model:
                try:
                    md = q_service.model_build(built)
                    model.append((md.answer, md.timings_ms["answer_ms"]))
                except q_service.ModelUnavailable as exc:
                    model.append(("", 0.0))
                    print(f"model failed: {exc}", file=sys.stderr)
        records.append({"question": qa.question, "reads": reads, "model": model})
        if cache is not None:
            cache.write_text(json.dumps(records))
        print(f"[{n}] context built ({len(reads)} read(s))", file=sys.stderr)
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--conversation", default="conv-26")
    ap.add_argument("--limit", type=int, default=60, help="questions of categories 1-4, in file order")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N such questions")
    ap.add_argument("--mode", default="auto", choices=("fast", "auto", "deep"))
    ap.add_argument("--responder", default="local")
    ap.add_argument("--no-model", action="store_true", help="extractive only (fast iteration)")
    ap.add_argument("--model-limit", type=int, help="ask the responder model for the first N questions only")
    ap.add_argument("--work", default="var/compare_answers")
    ap.add_argument("--out", required=True)
    ap.add_argument(
        "--contexts",
        help="JSON file of built contexts (and model answers): written after a run, read instead of building "
        "when it exists (re-answers extractively over the same contexts, no backfill, no model)",
    )
    args = ap.parse_args()
    if args.conversation == "conv-43":
        raise SystemExit("conv-43 is held out for validation")
    setup(Path(args.work))

    from evaluation import pipeline
    from evaluation.datasets.locomo import load_locomo
    from evaluation.quality import context_answer_recall
    from evaluation.scoring import is_abstention, score_locomo
    from memory.services import query as q_service
    from memory.services.results import ContextResult

    (conv,) = load_locomo(args.data, sample_ids={args.conversation})
    questions = [q for q in conv.qa if q.category in (1, 2, 3, 4) and q.answer]
    questions = questions[args.skip : args.skip + args.limit]
    cache = Path(args.contexts) if args.contexts else None
    records = json.loads(cache.read_text()) if cache is not None and cache.exists() else []
    if len(records) < len(questions):
        records = build_contexts(args, conv, questions, records, cache)
    items: list[dict[str, Any]] = []
    for n, (qa, record) in enumerate(zip(questions, records, strict=True)):
        per_mode: dict[str, list[tuple[str, float]]] = {"extractive": [], "model": record["model"]}
        contexts = []
        for read in record["reads"]:
            built = ContextResult(**read["context"])
            contexts.append(pipeline._context_text(built.to_dict()))
            ex = q_service.extractive_build(built, read["leaves"])
            per_mode["extractive"].append((ex.answer, ex.timings_ms["answer_ms"]))
        context = "\n\n".join(contexts)
        recall = context_answer_recall(context, qa.answer)
        item: dict[str, Any] = {
            "i": n,
            "category": qa.category_name,
            "question": qa.question,
            "gold": qa.answer,
            "context_answer_recall": recall,
            "context_tokens": len(context.split()),
        }
        for mode, replies in per_mode.items():
            if not replies:
                continue
            usable = [r for r in replies if r[0].strip()]
            text = next((r[0] for r in usable if not is_abstention(r[0])), usable[0][0] if usable else "")
            score = score_locomo(text, qa).score
            flagged = (
                bool(text) and bool(NEGATION.search(text) or is_abstention(text)) and (recall or 0) >= 0.5
            )
            item[mode] = {
                "answer": text,
                "f1": score,
                "contradiction_flag": flagged,
                "ms": sum(r[1] for r in replies),
            }
            if mode == "extractive":
                item[mode]["f1_plain"] = score_locomo(plain(text), qa).score
        items.append(item)

    summary: dict = {"conversation": args.conversation, "questions": len(items), "context_mode": args.mode}
    for mode in ("extractive", "model"):
        rows = [i[mode] for i in items if mode in i]
        if not rows:
            continue
        summary[mode] = {
            "f1_mean": round(statistics.mean(r["f1"] for r in rows), 4),
            "contradiction_flags": sum(r["contradiction_flag"] for r in rows),
            "abstentions": sum(is_abstention(r["answer"]) for r in rows),
            "ms_per_answer_p50": round(statistics.median(r["ms"] for r in rows), 1),
        }
        if mode == "extractive":
            summary[mode]["f1_plain_mean"] = round(statistics.mean(r["f1_plain"] for r in rows), 4)
    summary["context_answer_recall_mean"] = round(
        statistics.mean(i["context_answer_recall"] or 0 for i in items), 4
    )
    Path(args.out).write_text(json.dumps({"summary": summary, "items": items}, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
