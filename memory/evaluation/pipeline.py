"""The harness's one boundary with the rest of the project: it calls the real services, never copies them.

backfill history -> `messages_ingest` (+ flush) -> chunks processed in-process by the ingestion
path with the MemListener client (wrapped to count calls/tokens) -> tree versions + OpRecords ->
evidence indexed on `version_applied` -> `context_build` (tree / router / agentic) for answers and
the recall search for LLM-free recall@k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.engine.render import render
from memory.evaluation import store
from memory.evaluation.counting import CountingClient
from memory.evaluation.endpoints import memlistener_config, responder_engine_config
from memory.evaluation.responder import ANSWER_PROMPT_VERSION, Responder
from memory.evaluation.results import provenance
from memory.models import Message, Subject, Tenant
from memory.recall.units import UnitTurn, pair_units, unit_index
from memory.selectors import subject_schema, tree_current
from memory.services.ingest import IncomingMessage, messages_ingest, subject_flush
from serving.client import build_client

INGEST_BATCH = 200
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
    notes: list[str] = field(default_factory=list)


def run_context(
    *,
    run_id: str,
    memlistener: str,
    responder: str,
    responder_max_tokens: int = 48,
    record_memlistener: str | None = None,
    record_responder: str | None = None,
    tenant_name: str | None = None,
    usage_path: str | None = None,
) -> RunContext:
    client = CountingClient(build_client(memlistener_config(memlistener)), record_path=record_memlistener)
    resp = Responder(
        responder_engine_config(responder, max_tokens=responder_max_tokens), record_path=record_responder
    )
    tenant, reused = store.eval_tenant(tenant_name or f"eval-{run_id}", reuse=bool(tenant_name))
    ctx = RunContext(
        run_id=run_id,
        tenant=tenant,
        client=client,
        responder=resp,
        memlistener_spec=memlistener,
        responder_spec=responder,
        usage_path=usage_path,
    )
    if reused:
        ctx.notes.append(f"reused tenant {tenant.name}: chunks applied by an earlier run were not sent again")
        if usage_path:
            client.load_usage(usage_path)
    return ctx


@dataclass(frozen=True)
class BuiltContext:
    text: str
    token_count: int
    tree_version: int | None
    mode_used: str
    evidence_seqs: tuple[int, ...] = ()


def ingest_history(*, ctx: RunContext, history) -> Subject:
    """Append the history's messages, close the last window, and process every chunk in this process."""
    messages = [
        IncomingMessage(
            role=m.role,
            content=m.content,
            idempotency_key=m.idempotency_key,
            ts=m.ts,
            session_id=m.session_id,
        )
        for m in history.messages
    ]
    subject = None
    for start in range(0, len(messages), INGEST_BATCH):
        result = messages_ingest(
            tenant=ctx.tenant,
            external_id=history.external_id,
            messages=messages[start : start + INGEST_BATCH],
            enqueue=False,
        )
        subject = result.subject
    if subject is None:
        raise ValueError(f"history {history.external_id} has no messages")
    subject_flush(subject=subject, enqueue=False)
    process_pending(ctx=ctx, subject=subject)
    if ctx.usage_path:
        ctx.client.save_usage(ctx.usage_path)
    return Subject.objects.select_related("head", "tenant").get(pk=subject.pk)


def process_pending(*, ctx: RunContext, subject: Subject) -> None:
    """The ingestion path's own synchronous drain (rounds of claim -> MemListener -> apply -> index)."""
    from workers.dispatcher import drain

    report = drain(client=ctx.client, tenant_id=ctx.tenant.pk, index=True)
    if report.transient and report.transient == report.claimed:
        ctx.notes.append(f"{subject.external_id}: MemListener unavailable, chunks left pending")


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
    raise NotImplementedError("wired once recall search service lands")


def memory_context(
    *, ctx: RunContext, subject: Subject, query: str, mode: str, as_of_seq: int | None = None
) -> BuiltContext:
    raise NotImplementedError("wired once context_build lands")


def final_tree_text(subject: Subject) -> str:
    subject = Subject.objects.select_related("head").get(pk=subject.pk)
    return render(tree_current(subject), subject_schema(subject)).text


def run_provenance(ctx: RunContext) -> dict:
    from memory.engine.schema import default_schema
    from serving.prompt import PROMPT_VERSION

    schema = default_schema()
    return provenance(
        memlistener_endpoint=ctx.memlistener_spec,
        memlistener_model_ids=sorted(ctx.client.model_ids) or None,
        memlistener_prompt_versions=sorted(ctx.client.prompt_versions) or [PROMPT_VERSION],
        responder_endpoint=ctx.responder_spec,
        responder_model_id=ctx.responder.model_id,
        answer_prompt_version=ANSWER_PROMPT_VERSION,
        schema=f"{schema.id}@{schema.version}",
        tenant=ctx.tenant.name,
    )
