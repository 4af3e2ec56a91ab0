"""The harness's one boundary with the rest of the project: it calls the real services, never copies them.

backfill history -> `messages_ingest` (+ flush) -> chunks processed in-process by the ingestion
path with the MemListener client (wrapped to count calls/tokens) -> tree versions + OpRecords ->
evidence indexed on `version_applied` -> `context_build` (tree / router / agentic) for answers and
the recall search for LLM-free recall@k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluation import store
from evaluation.counting import CountingClient
from evaluation.endpoints import memlistener_config, responder_settings
from evaluation.metrics import op_stats
from evaluation.recall_metrics import unit_index
from evaluation.responder import ANSWER_PROMPT_VERSION, Responder
from evaluation.results import git_commit, provenance
from memory.engine.render import render
from memory.models import Message, Subject, Tenant
from memory.recall.units import UnitTurn, pair_units
from memory.selectors import ALL_TIERS, subject_schema, tree_current
from serving.client import build_client

seq_by_key = store.seq_by_key


@dataclass
class RunContext:
    run_id: str
    tenant: Tenant
    client: CountingClient
    responder: Responder
    memlistener_spec: str
    responder_spec: str
    usage_path: str | None = None
    token_budget: int = 1500
    started: dict = field(default_factory=git_commit)  # the code that ran: captured when the run starts
    progress: bool = False
    last_processed: int = 0
    notes: list[str] = field(default_factory=list)


def run_context(
    *,
    run_id: str,
    memlistener: str | None,
    responder: str,
    responder_max_tokens: int = 48,
    record_memlistener: str | None = None,
    record_responder: str | None = None,
    tenant_name: str | None = None,
    usage_path: str | None = None,
) -> RunContext:
    listener_config = memlistener_config(memlistener)
    client = CountingClient(build_client(listener_config), record_path=record_memlistener)
    configure_responder(responder_settings(responder, max_tokens=responder_max_tokens))
    resp = Responder(record_path=record_responder)
    tenant, reused = store.eval_tenant(tenant_name or f"eval-{run_id}", reuse=bool(tenant_name))
    ctx = RunContext(
        run_id=run_id,
        tenant=tenant,
        client=client,
        responder=resp,
        memlistener_spec=memlistener or f"{listener_config.backend} (the configured default)",
        responder_spec=responder,
        usage_path=usage_path,
    )
    client.usage_path = usage_path  # saved after every MemListener call, so a killed run keeps its counts
    if reused:
        ctx.notes.append(f"reused tenant {tenant.name}: chunks applied by an earlier run were not sent again")
        if usage_path:
            client.load_usage(usage_path)
    return ctx


def configure_responder(overrides: dict) -> None:
    """Point this process's recall runtime (answers, expansion, judge) at the run's responder. The tree
    modes' answers come from it too (answer mode ``model``, not the product's extractive default), so
    every QA mode is the same responder over a different context."""
    from django.conf import settings

    from memory.recall import runtime

    settings.PERSONATREE.update({**overrides, "ANSWER_MODE": "model"})
    runtime.reset_runtime()


@dataclass(frozen=True)
class BuiltContext:
    text: str
    token_count: int
    tree_version: int | None
    mode_used: str
    evidence_seqs: tuple[int, ...] = ()
    notices: tuple[str, ...] = ()


def ingest_history(*, ctx: RunContext, history) -> Subject:
    """The backfill service's own import with in-process processing (MemListener client = ours, counting)."""
    from memory.backfill.service import backfill_run

    report = backfill_run(
        tenant=ctx.tenant,
        histories=[history],
        total=1,
        process=True,
        client=ctx.client,
        progress=ctx.progress,
        index=True,
    )
    ctx.last_processed = report.applied + report.failed
    if report.failed:
        ctx.notes.append(f"{history.external_id}: {report.failed} chunk(s) failed after retries")
    subject = (
        Subject.objects.select_related("head", "tenant")
        .filter(tenant=ctx.tenant, external_id=history.external_id)
        .first()
    )
    if subject is None:
        raise ValueError(f"history {history.external_id} has no messages")
    ensure_indexed(subject)
    pending = subject.chunks.exclude(status="applied").count()
    if pending:
        ctx.notes.append(
            f"{history.external_id}: {pending} chunk(s) not applied (MemListener unavailable or failing)"
        )
    return subject


def ensure_indexed(subject: Subject) -> int:
    """Upsert the subject's whole log into the evidence index with the recall package's own indexer.

    The `version_applied` receiver normally did this already (upserts are idempotent); doing it here
    also covers a reused tenant and deployments that switched the receiver off."""
    from memory.recall.indexing import evidence_index_span

    last = subject.messages.order_by("-seq").values_list("seq", flat=True).first()
    return evidence_index_span(subject_id=subject.pk, start_seq=1, end_seq=last) if last else 0


def ingestion_row(*, ctx: RunContext, history, subject: Subject, seconds: float) -> dict:
    """Op statistics of the subject's chunks, and the time this run spent on them. Chunks applied by an
    earlier run on a reused tenant keep their counts (OpRecords + saved usage) but not their time."""
    chunks = chunk_ops_for(ctx=ctx, subject=subject)
    processed = ctx.last_processed
    return {
        "messages": len(history.messages),
        "chunks_processed_this_run": processed,
        "seconds": round(seconds, 2) if processed else None,
        "seconds_per_chunk": round(seconds / processed, 2) if processed else None,
        "ops": op_stats(chunks),
    }


def chunk_ops_for(*, ctx: RunContext, subject: Subject):
    return store.chunk_ops(subject, usage=ctx.client.usage_by_chunk())


def unit_map(subject: Subject, dia_keys: dict[str, str]) -> dict[str, int]:
    """dia_id -> start_seq of the recall pair unit holding that turn (the pairing the index uses).

    `dia_keys` maps each dia_id to the idempotency key the backfill reader derived for it."""
    rows = list(
        Message.objects.filter(subject=subject)
        .order_by("seq")
        .values_list("seq", "role", "session_id", "idempotency_key")
    )
    turns = [
        UnitTurn(turn_id=str(seq), role=role, content="", seq=seq, session=session)
        for seq, role, session, _ in rows
    ]
    unit_of_seq = unit_index(pair_units(turns))
    seq_of_key = {key: seq for seq, _, _, key in rows if key}
    out = {}
    for dia_id, key in dia_keys.items():
        seq = seq_of_key.get(key)
        if seq is not None and str(seq) in unit_of_seq:
            out[dia_id] = unit_of_seq[str(seq)]
    return out


def retrieve(
    *, ctx: RunContext, subject: Subject, query: str, limit: int, as_of_seq: int | None = None
) -> list[int]:
    """LLM-free evidence ranking: the recall package's hybrid search (dense + BM25, RRF), no expansion.
    Returns the ranked units' start seqs (the unit ids of `memory.recall.units`)."""
    from memory.recall import runtime
    from memory.recall.index import Scope
    from memory.recall.search import search_many

    scope = Scope(tenant_id=subject.tenant_id, subject_id=subject.pk, max_seq=as_of_seq)
    (hits,) = search_many(
        runtime.configured_index(),
        runtime.configured_embedder(),
        scope,
        [query],
        limit=limit,
        method="hybrid",
    )
    return [h.start_seq for h in hits]


def _as_of(subject: Subject, as_of_seq: int | None) -> int | None:
    if as_of_seq is None:
        return None
    return store.version_as_of_seq(subject, as_of_seq) if as_of_seq >= 0 else 0


def _query(ctx: RunContext, subject: Subject, query: str, mode: str, as_of_seq: int | None) -> dict:
    """The arguments `context_build` and `answer_build` both take: every tier, at that version."""
    as_of = _as_of(subject, as_of_seq)
    return dict(
        subject=subject, query=query, mode=mode, as_of=as_of, token_budget=ctx.token_budget, tiers=ALL_TIERS
    )


def memory_context(
    *, ctx: RunContext, subject: Subject, query: str, mode: str, as_of_seq: int | None = None
) -> BuiltContext:
    """`context_build` (fast / auto = router / deep = agentic) at the version that existed at `as_of_seq`.

    The text handed to the responder is the service's own context: the rendered tree, then the
    evidence lines in the order `answer_prompt` uses."""
    from memory.services.query import context_build

    built = context_build(**_query(ctx, subject, query, mode, as_of_seq))
    return BuiltContext(
        text=_context_text(built),
        token_count=int(built["tokens"]),
        tree_version=built["version"],
        mode_used=built["mode_used"],
        evidence_seqs=tuple(e["source"]["start_seq"] for e in built["evidence"]),
        notices=tuple(built["notices"]),
    )


def answer(*, ctx: RunContext, subject: Subject, query: str, mode: str, as_of_seq: int | None = None) -> dict:
    """`answer_build` (the product's answer path). A failed responder call comes back as `error`."""
    from memory.services.query import ModelUnavailable, answer_build

    try:
        out = answer_build(**_query(ctx, subject, query, mode, as_of_seq))
    except ModelUnavailable as exc:
        return {
            "answer": None,
            "error": str(exc),
            "tokens": 0,
            "version": None,
            "mode_used": mode,
            "recall": None,
            "evidence": 0,
            "context": None,
        }
    recall = out.get("recall") or {}
    return {
        "answer": out["answer"],
        "error": None,
        "tokens": int(out["tokens"]),
        "version": out["version"],
        "mode_used": out["mode_used"],
        # what deep recall did: "ok" / "withheld" / "unavailable", and the expansion's own status
        "recall": {"status": recall["status"], "expansion": (recall.get("expansion") or {}).get("status")}
        if recall
        else None,
        "evidence": len(out["evidence"]),
        "context": _context_text(out),  # what the responder read (for context answer recall)
    }


def _context_text(built: dict) -> str:
    """The memory part of the answer prompt: the rendered tree, then the evidence lines."""
    text = built["context"]["text"]
    if built["evidence"]:
        lines = [f"[{i}] {e['text']}" for i, e in enumerate(built["evidence"], 1)]
        text = f"{text}\n\nConversation evidence:\n" + "\n".join(lines)
    return text


def final_tree_text(subject: Subject) -> str:
    subject = Subject.objects.select_related("head").get(pk=subject.pk)
    return render(tree_current(subject), subject_schema(subject)).text


def run_provenance(ctx: RunContext) -> dict:
    """Model ids and prompt versions as the audit log holds them (OpRecords of the run's tenant: this run's
    and, on a reused tenant, earlier runs' chunks), plus what this process called."""
    from evaluation.coverage import JUDGE_PROMPT_VERSION
    from memory.engine.schema import default_schema
    from memory.models import OpRecord
    from memory.services.query import ANSWER_PROMPT_VERSION as PRODUCT_ANSWER_PROMPT_VERSION

    audit = OpRecord.objects.filter(subject__tenant=ctx.tenant, actor_kind="model")
    model_ids = set(ctx.client.model_ids) | set(audit.values_list("model_id", flat=True).distinct())
    prompts = set(ctx.client.prompt_versions) | set(audit.values_list("prompt_version", flat=True).distinct())
    schema = default_schema()
    return provenance(
        **{f"{k}_at_start": v for k, v in ctx.started.items()},
        memlistener_endpoint=ctx.memlistener_spec,
        memlistener_model_ids=sorted(m for m in model_ids if m) or None,
        memlistener_prompt_versions=sorted(p for p in prompts if p) or None,
        responder_endpoint=ctx.responder_spec,
        responder_model_id=ctx.responder.model_id,
        answer_prompt_versions={
            "answer_build (LoCoMo QA, all modes)": PRODUCT_ANSWER_PROMPT_VERSION,
            "multiple choice (PersonaMem)": ANSWER_PROMPT_VERSION,
            "coverage judge": JUDGE_PROMPT_VERSION,
        },
        schema=f"{schema.id}@{schema.version}",
        tenant=ctx.tenant.name,
    )
