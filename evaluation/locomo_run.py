"""LoCoMo run: one tree per speaker through the real backfill path, then recall@k, QA and coverage.

- Trees: `LocomoSource` (memory/backfill) gives each speaker's history with that speaker's turns
  as the user's; `--sessions N` keeps the first N sessions (the slice is reported).
- Evidence recall@k (LLM-free): the question's subject is the speaker it names (else speaker_a);
  the ranked evidence units of the recall search are matched against the gold `dia_id`s mapped to
  the same pair units (`memory.recall.units`), scored by `evaluation.recall_metrics.evaluate_recall`.
- QA per category and mode through the product's `answer_build` (optionally only the first `qa_limit` selected questions of each
  conversation — recall@k still covers all of them), scored by `scoring.score_locomo`; a question naming both or neither
  speaker reads both speakers' memory contexts. Questions whose gold evidence lies outside the
  ingested slice (or, in a slice, without readable evidence ids) are left out and counted.
- Coverage: each speaker's observation facts (within the slice) judged against the final tree.
- Quality (LLM-free, `quality_run`): per speaker and pooled, the grounded / invented / wrong-speaker
  rates of the applied model values, MiniLM coverage of the observation facts at τ 0.5/0.6/0.7 and
  the clauses' precision, tree tokens; per question, the share of the gold answer's tokens in the
  context each mode hands the responder (full_history and tree_only here, built without a model;
  tree_router and tree_agentic from the contexts their QA calls read).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import replace

from evaluation import pipeline
from evaluation.coverage import judge_coverage
from evaluation.datasets.locomo import CATEGORY_NAMES, LocomoConversation, load_locomo
from evaluation.metrics import Outcome, accuracy_table, distribution, recall_section
from evaluation.quality import context_answer_recall, context_recall_section
from evaluation.quality_run import quality_section
from evaluation.recall_metrics import RecallQuestion, evaluate_recall
from evaluation.scoring import is_abstention, score_locomo
from memory.backfill.locomo import LocomoSource
from memory.backfill.records import derive_key
from memory.engine.render import count_tokens
from memory.services.query import answer_prompt

MODES = ("no_memory", "full_history", "tree_only", "tree_router", "tree_agentic")
HISTORY_BUDGET = 6000  # full-history mode: newest tokens of the conversation (the local model's window is 8k)
TREE_MODES = {"tree_only": "fast", "tree_router": "auto", "tree_agentic": "deep"}  # context_build modes
# Modes whose context is built without a model call: their context answer recall is measured in the
# quality phase (also with --no-qa); the others' from the contexts their QA calls read.
LLM_FREE_CONTEXT_MODES = ("full_history", "tree_only")


def subjects_for(question: str, speakers: Sequence[str]) -> list[str]:
    named = [s for s in speakers if re.search(rf"\b{re.escape(s)}\b", question, re.IGNORECASE)]
    return named if len(named) == 1 else list(speakers)


def _slice_sessions(history, max_sessions: int | None):
    if max_sessions is None:
        return history
    keep = {f"session_{n}" for n in range(1, max_sessions + 1)}
    return replace(history, messages=tuple(m for m in history.messages if m.session_id in keep))


def run_locomo(
    *,
    data_path: str,
    ctx: pipeline.RunContext,
    conversations: Sequence[str] | None = None,
    speakers: Sequence[str] | None = None,
    max_sessions: int | None = None,
    modes: Sequence[str] = MODES,
    ks: Sequence[int] = (1, 5, 10),
    qa: bool = True,
    qa_limit: int | None = None,
    coverage: bool = True,
    quality: bool = True,
    quality_embed=None,
    history_budget: int = HISTORY_BUDGET,
    ingest_only: bool = False,
    progress=None,
    checkpoint=None,
) -> dict:
    """Run the phases in order (ingest, recall@k, quality, coverage, QA per mode); `checkpoint(results)` is
    called after each phase with everything measured so far, so a run stopped midway leaves true partial
    results. `quality_embed` replaces the quality phase's MiniLM embedder (tests)."""
    unknown = set(modes) - set(MODES)
    if unknown:
        raise ValueError(f"unknown modes: {', '.join(sorted(unknown))}; known: {', '.join(MODES)}")
    convs = {
        c.sample_id: c
        for c in load_locomo(data_path, sample_ids=set(conversations) if conversations else None)
    }
    label = data_path.rsplit("/", 1)[-1]
    source = LocomoSource(data_path, speakers=list(speakers) if speakers else None, label=label)
    histories = [h for h in source if h.meta["sample_id"] in convs]
    if not histories:
        raise ValueError("no LoCoMo history selected (check --conversations / --speakers)")

    bar = progress(total=len(histories), desc="locomo ingest") if progress else None
    subjects: dict[tuple[str, str], object] = {}
    ingestion = {}
    for history in histories:
        history = _slice_sessions(history, max_sessions)
        started = time.perf_counter()
        subject = pipeline.ingest_history(ctx=ctx, history=history)
        seconds = time.perf_counter() - started
        subjects[(history.meta["sample_id"], history.meta["speaker"])] = subject
        ingestion[history.external_id] = pipeline.ingestion_row(
            ctx=ctx, history=history, subject=subject, seconds=seconds
        )
        if bar:
            bar.update(1)
    if bar:
        bar.close()

    run_info = {
        "conversations": sorted(convs),
        "speakers": list(speakers) if speakers else "both",
        "sessions": max_sessions or "all",
    }
    if ingest_only:
        return {
            "title": "LoCoMo ingestion",
            "benchmark": "locomo",
            "ingestion": ingestion,
            "run": {**run_info, "phase": "ingest only"},
        }

    names = {str(k): v for k, v in CATEGORY_NAMES.items()}
    results = {
        "title": "LoCoMo evaluation",
        "benchmark": "locomo",
        "ingestion": ingestion,
        "run": {
            **run_info,
            "modes": list(modes) if qa else [],
            "ks": list(ks),
            "qa_limit_per_conversation": qa_limit,
        },
    }

    # Phase 1: evidence recall@k (LLM-free), every selected question.
    recall_qs, retrieved, turn_to_unit = [], {}, {}
    retrieval_items, excluded, asked = [], 0, []
    for sample_id, conv in convs.items():
        present = [s for s in conv.speakers if (sample_id, s) in subjects]
        if not present:
            continue
        turns = conv.turns(max_sessions=max_sessions)
        in_slice = {t.dia_id for t in turns}
        dia_keys = {t.dia_id: derive_key(label, sample_id, t.dia_id) for t in turns}
        units = {s: pipeline.unit_map(subjects[(sample_id, s)], dia_keys) for s in present}
        # In a session slice a question without readable evidence ids cannot be placed: leave it out.
        selected = [
            q for q in conv.qa if set(q.evidence) <= in_slice and (q.evidence or max_sessions is None)
        ]
        excluded += len(conv.qa) - len(selected)
        for i, q in enumerate(selected):
            qid = f"{sample_id}#{i}"
            targets = [s for s in subjects_for(q.question, conv.speakers) if s in present] or present
            main = targets[0]
            recall_qs.append(RecallQuestion(qid, str(q.category), tuple(f"{main}|{d}" for d in q.evidence)))
            turn_to_unit.update({f"{main}|{d}": u for d, u in units[main].items()})
            hits = pipeline.retrieve(
                ctx=ctx, subject=subjects[(sample_id, main)], query=q.question, limit=max(ks)
            )
            retrieved[qid] = hits
            retrieval_items.append(
                {
                    "qid": qid,
                    "category": q.category_name,
                    "subject": main,
                    "gold_dia_ids": list(q.evidence),
                    "gold_units": sorted({units[main][d] for d in q.evidence if d in units[main]}),
                    "retrieved": hits,
                }
            )
            if qa_limit is None or i < qa_limit:
                asked.append((conv, q, qid, [subjects[(sample_id, s)] for s in targets]))
    report = evaluate_recall(recall_qs, retrieved, turn_to_unit, ks=tuple(ks))
    results["retrieval"] = recall_section(report, names=names)
    results["retrieval_items"] = retrieval_items
    results["run"]["questions_outside_slice"] = excluded
    _checkpoint(checkpoint, results)
    histories = {
        sample_id: full_history(conv, max_sessions=max_sessions, budget_tokens=history_budget)
        for sample_id, conv in convs.items()
    }

    # Phase 2: LLM-free quality of the trees, and context answer recall of the model-free contexts.
    if quality:
        embed = {"embed": quality_embed} if quality_embed is not None else {}
        results["quality"] = quality_section(
            (
                (
                    sample_id,
                    s,
                    subjects[(sample_id, s)],
                    [o.fact for o in conv.observations_for(s, max_sessions=max_sessions)],
                )
                for sample_id, conv in convs.items()
                for s in conv.speakers
                if (sample_id, s) in subjects
            ),
            **embed,
        )
        results["context_recall_items"] = []
        for mode in [m for m in modes if m in LLM_FREE_CONTEXT_MODES]:
            for conv, q, qid, targets in asked:
                if q.answer is None:
                    continue
                if mode == "full_history":
                    text = history_text(histories[conv.sample_id])
                else:
                    text = "\n\n".join(
                        pipeline.memory_context(ctx=ctx, subject=t, query=q.question, mode="fast").text
                        for t in targets
                    )
                results["context_recall_items"].append(_recall_row(qid, q, mode, text))
        results["context_recall"] = context_recall_section(results["context_recall_items"])
        _checkpoint(checkpoint, results)

    # Phase 3: coverage of the observation facts by each final tree (responder as judge).
    if coverage:
        results["coverage"] = {}
        for sample_id, conv in convs.items():
            for s in conv.speakers:
                if (sample_id, s) not in subjects:
                    continue
                tree_text = pipeline.final_tree_text(subjects[(sample_id, s)])
                facts = [o.fact for o in conv.observations_for(s, max_sessions=max_sessions)]
                summary, _ = judge_coverage(
                    tree_text, facts, ctx.responder.ask, key_prefix=f"judge|{sample_id}:{s}|"
                )
                results["coverage"][f"{sample_id}:{s}"] = summary
                _checkpoint(checkpoint, results)

    # Phase 4: QA, one mode after the other (each finished mode is written before the next starts).
    if qa:
        results["modes"], results["items"] = {}, []
        for mode in modes:
            outcomes, tokens = {mode: []}, {mode: []}
            bar = progress(total=len(asked), desc=f"QA {mode}") if progress else None
            for conv, q, qid, targets in asked:
                history = histories[conv.sample_id] if mode == "full_history" else None
                item = _answer(ctx, conv, q, qid, mode, targets, outcomes, tokens, history=history)
                results["items"].append(item)
                if (
                    quality
                    and mode in TREE_MODES
                    and mode not in LLM_FREE_CONTEXT_MODES
                    and q.answer is not None
                ):
                    results["context_recall_items"].append(
                        {**_recall_row(qid, q, mode, None), "recall": item["context_answer_recall"]}
                    )
                if bar:
                    bar.update(1)
            if bar:
                bar.close()
            results["modes"][mode] = {
                "accuracy": accuracy_table(outcomes[mode]),
                "context_tokens": distribution(tokens[mode]),
                "note": _history_note(histories, history_budget) if mode == "full_history" else "",
            }
            if quality:
                results["context_recall"] = context_recall_section(results["context_recall_items"])
            _checkpoint(checkpoint, results)
    return results


def _checkpoint(checkpoint, results: dict) -> None:
    if checkpoint is not None:
        checkpoint(results)


def full_history(conv: LocomoConversation, *, max_sessions: int | None, budget_tokens: int) -> dict:
    """The conversation itself as the answer prompt's evidence, newest turns first until `budget_tokens`
    (older turns dropped): one `(session date) Speaker: text` line per turn, in dialogue order."""
    sessions = conv.sessions if max_sessions is None else conv.sessions[:max_sessions]
    lines = [
        {"source": {"ts": s.date_time}, "text": f"{t.speaker}: {' '.join(t.text.split())}"}
        for s in sessions
        for t in s.turns
    ]
    kept, used = [], 0
    for line in reversed(lines):
        cost = count_tokens(f"[{len(lines)}] ({line['source']['ts']}) {line['text']}") + 1
        if used + cost > budget_tokens:
            break
        kept.append(line)
        used += cost
    return {
        "context": {"text": ""},
        "evidence": kept[::-1],
        "tokens": used,
        "turns": len(lines),
        "kept": len(kept),
    }


def history_text(history: dict) -> str:
    """The evidence lines of a `full_history` context as the answer prompt shows them."""
    return "\n".join(f"({e['source'].get('ts') or 'time unknown'}) {e['text']}" for e in history["evidence"])


def _recall_row(qid: str, q, mode: str, context: str | None) -> dict:
    recall = context_answer_recall(context, q.answer) if context is not None else None
    return {"qid": qid, "category": q.category_name, "mode": mode, "recall": recall}


def _history_note(histories: dict, budget: int) -> str:
    parts = [f"{sid}: newest {h['kept']} of {h['turns']} turns" for sid, h in histories.items()]
    cut = sum(h["kept"] < h["turns"] for h in histories.values())
    return (
        f"whole conversation as evidence, truncated to the newest {budget} tokens "
        f"({cut} of {len(histories)} conversations truncated; {', '.join(parts)})"
    )


def _answer(
    ctx, conv: LocomoConversation, q, qid: str, mode: str, subjects: list, outcomes, tokens, history=None
) -> dict:
    """no_memory: the responder alone; full_history: the product's answer prompt with the (truncated)
    conversation as its evidence. Tree modes: the product's `answer_build` per subject read; with two
    subjects (a question about both speakers or neither) the first reply that does not abstain counts."""
    versions, n_tokens, replies, error, reads, texts = [], 0, [], None, [], []
    if mode in ("no_memory", "full_history"):  # the product's answer prompt, empty memory (+ history)
        context = history or {"context": {"text": ""}, "evidence": []}
        prompt = answer_prompt(q.question, context)
        reply = ctx.responder.ask_prompt(prompt, None, key=f"locomo|{qid}|{mode}")
        replies, error = [reply.text], reply.error
        n_tokens = context.get("tokens", 0)
        texts = [history_text(history)] if history else [None]
    else:
        for subject in subjects:
            out = pipeline.answer(ctx=ctx, subject=subject, query=q.question, mode=TREE_MODES[mode])
            replies.append(out["answer"])
            error = error or out["error"]
            n_tokens += out["tokens"]
            versions.append(out["version"])
            texts.append(out["context"])
            reads.append(
                {"mode_used": out["mode_used"], "recall": out["recall"], "evidence": out["evidence"]}
            )
    usable = [r for r in replies if r and r.strip()]
    text = next((r for r in usable if not is_abstention(r)), usable[0] if usable else None)
    scored = score_locomo(text, q)
    # the share of the gold answer's tokens in what the responder read (None: no context or no answer)
    recall = None if None in texts or not texts else context_answer_recall("\n\n".join(texts), q.answer)
    outcomes[mode].append(Outcome(q.category_name, scored.correct, failed=scored.failed, score=scored.score))
    tokens[mode].append(n_tokens)
    return {
        "qid": qid,
        "category": q.category_name,
        "mode": mode,
        "answer": text,
        "error": error,
        "score": scored.score,
        "correct": scored.correct,
        "context_tokens": n_tokens,
        "context_answer_recall": recall,
        "tree_versions": versions,
        "reads": reads,  # per subject read: the mode the router/caller used, recall + expansion status
    }


__all__ = ["HISTORY_BUDGET", "MODES", "full_history", "history_text", "run_locomo", "subjects_for"]
