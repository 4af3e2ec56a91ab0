"""PersonaMem run: backfill each needed shared-context prefix, then answer every question per mode.

Protocol (docs/EVALUATION.md): a question sees only `context[:end_index]`. Each shared context is
ingested once through the real backfill path up to the largest end index any selected question
needs; a question then reads the tree version and the evidence that existed at its own end index
(`as_of_seq` = seq of message `end_index - 1`). The router never sees the answer. A failed or
unreadable responder reply is scored wrong and counted as failed — never a default letter.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from evaluation import pipeline
from evaluation.datasets.personamem import check_end_indices, load_contexts, load_questions
from evaluation.metrics import Outcome, accuracy_table, distribution
from evaluation.responder import MC_JSON_SCHEMA, MC_SYSTEM, mc_user_prompt
from evaluation.scoring import extract_choice
from memory.backfill.personamem import PersonamemSource
from memory.backfill.records import derive_key
from memory.engine.render import count_tokens

MODES = ("no_memory", "full_history", "tree_only", "tree_router", "tree_agentic")
TREE_MODES = {"tree_only": "fast", "tree_router": "auto", "tree_agentic": "deep"}  # context_build modes


def history_text(messages: Sequence[dict], budget_tokens: int) -> tuple[str, bool]:
    """`role: content` lines, keeping the most recent messages that fit `budget_tokens` (truncated flag)."""
    lines: list[str] = []
    used = 0
    for m in reversed(messages):
        line = f"{m['role']}: {' '.join(str(m['content']).split())}"
        cost = count_tokens(line) + 1
        if used + cost > budget_tokens:
            return "\n".join(reversed(lines)), True
        lines.append(line)
        used += cost
    return "\n".join(reversed(lines)), False


def last_seq_before(seqs: dict[str, int], label: str, context_id: str, end_index: int) -> int:
    """Seq of the last ingested message among `context[:end_index]` (empty turns are not ingested);
    -1 when there is none (the question then sees an empty tree and no evidence)."""
    for i in range(end_index - 1, -1, -1):
        seq = seqs.get(derive_key(label, context_id, i))
        if seq is not None:
            return seq
    return -1


def run_personamem(
    *,
    questions_path: str,
    contexts_path: str,
    ctx: pipeline.RunContext,
    modes: Sequence[str] = MODES,
    limit: int | None = None,
    history_budget: int = 6000,
    progress=None,
) -> dict:
    unknown = set(modes) - set(MODES)
    if unknown:
        raise ValueError(f"unknown modes: {', '.join(sorted(unknown))}; known: {', '.join(MODES)}")
    questions = load_questions(questions_path, limit=limit)
    contexts = load_contexts(contexts_path, ids={q.shared_context_id for q in questions})
    check_end_indices(questions, contexts)
    need = {}
    for q in questions:
        need[q.shared_context_id] = max(need.get(q.shared_context_id, 0), q.end_index)

    label = contexts_path.rsplit("/", 1)[-1]
    source = PersonamemSource(contexts_path, end_index=need, label=label)
    ingestion, subjects, seqs = {}, {}, {}
    histories = [h for h in source if h.external_id in need]
    bar = (
        progress(total=len(histories) + len(questions) * len(modes), desc="personamem") if progress else None
    )
    for history in histories:
        cid = history.external_id
        started = time.perf_counter()
        subject = pipeline.ingest_history(ctx=ctx, history=history)
        seconds = time.perf_counter() - started
        subjects[cid], seqs[cid] = subject, pipeline.seq_by_key(subject)
        ingestion[cid] = pipeline.ingestion_row(ctx=ctx, history=history, subject=subject, seconds=seconds)
        if bar:
            bar.update(1)

    outcomes = {m: [] for m in modes}
    tokens = {m: [] for m in modes}
    items, truncated = [], 0
    for q in questions:
        subject = subjects[q.shared_context_id]
        as_of_seq = last_seq_before(seqs[q.shared_context_id], label, q.shared_context_id, q.end_index)
        for mode in modes:
            row = {"question_id": q.question_id, "question_type": q.question_type, "mode": mode}
            if mode == "no_memory":
                memory_text, n_tokens = "", 0
            elif mode == "full_history":
                memory_text, cut = history_text(contexts[q.shared_context_id][: q.end_index], history_budget)
                truncated += cut
                n_tokens, row["truncated"] = count_tokens(memory_text), cut
            else:
                built = pipeline.memory_context(
                    ctx=ctx, subject=subject, query=q.question, mode=TREE_MODES[mode], as_of_seq=as_of_seq
                )
                memory_text, n_tokens = built.text, built.token_count
                row.update(tree_version=built.tree_version, mode_used=built.mode_used)
            reply = ctx.responder.ask(
                MC_SYSTEM,
                mc_user_prompt(memory_text, q.question, q.options_block()),
                MC_JSON_SCHEMA,
                key=f"personamem|{q.question_id}|{mode}",
            )
            choice = extract_choice(None if reply.error else reply.text, q.options)
            correct = choice.letter == q.gold
            outcomes[mode].append(Outcome(q.question_type, correct, failed=choice.letter is None))
            tokens[mode].append(n_tokens)
            items.append(
                {
                    **row,
                    "context_tokens": n_tokens,
                    "choice": choice.letter,
                    "rule": choice.rule,
                    "gold": q.gold,
                    "correct": correct,
                    "error": reply.error,
                }
            )
            if bar:
                bar.update(1)
    if bar:
        bar.close()

    mode_results = {}
    for mode in modes:
        note = ""
        if mode == "full_history":
            note = f"history sliced at each end index, truncated to the newest {history_budget} tokens ({truncated} of {len(questions)} questions truncated)"
        mode_results[mode] = {
            "accuracy": accuracy_table(outcomes[mode]),
            "context_tokens": distribution(tokens[mode]),
            "note": note,
        }
    return {
        "title": "PersonaMem evaluation",
        "benchmark": "personamem",
        "modes": mode_results,
        "ingestion": ingestion,
        "items": items,
        "run": {
            "questions": len(questions),
            "contexts": len(need),
            "modes": list(modes),
            "limit": limit,
            "history_budget_tokens": history_budget,
            "subjects": {c: s.external_id for c, s in subjects.items()},
        },
    }


__all__ = ["MODES", "history_text", "run_personamem"]
