"""Cross-subject batching: a round (:func:`dispatch_round`) gathers the head-of-line chunk of up to
``BATCH_MAX_JOBS`` subjects, calls the MemListener once and applies every result in one
``tree_apply_ops_batch``. Every result a retryable error: the batch is split to find a poison chunk
(:mod:`workers.poison`), else it is an outage and the chunks go back with their attempt refunded.
``chunks_ready`` asks for the task (:func:`ask_dispatch`): at most one is queued.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from django.core.cache import caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.db import OperationalError, transaction

from memory import conf
from memory.engine.dates import chunk_evidence
from memory.selectors import schema_document
from memory.services import ServiceError, VersionConflict
from memory.services.tree import Actor, ApplyOutcome, ApplyRequest, Source, tree_apply_ops_batch
from memory.signals import chunks_ready
from personatree_site.celery import app
from serving.protocol import ListenerJob, ListenerResult, ListenerTurn
from workers import metrics
from workers.base import TransientError, pt_task, publish_options, publishing, when_read
from workers.caps import bound_turns, record_notices
from workers.indexing import index_span_soon
from workers.ordering import Claim, chunk_release, chunks_claim, job_inputs
from workers.poison import is_outage, settle_lone_job, split_batch

logger = logging.getLogger("personatree.dispatcher")

POLL_S = 0.02
DISPATCH_BUDGET_S = 60.0
QUEUED_KEY = "personatree:workers.dispatch:queued"  # a dispatch is queued and has not started
QUEUED_TTL_S = 60


@dataclass
class RoundReport:
    claimed: int = 0
    applied: int = 0
    versions: int = 0
    retried: int = 0
    failed: int = 0
    conflicts: int = 0
    replayed: int = 0  # already applied by another holder
    transient: int = 0  # results with a retryable model/transport error
    outage: bool = False  # every result was a retryable error: released uncounted, caller backs off
    model_s: float = 0.0
    backend_s: float = 0.0
    chunk_ids: list[int] = field(default_factory=list)

    def released(self, status: str) -> None:
        """Count a chunk given back by :func:`chunk_release` (``""``: its lease was lost)."""
        self.failed += int(status == "failed")
        self.retried += int(status == "pending")


def gather(
    *, max_jobs: int, max_wait_ms: float, tenant_id: int | None = None, sleep=time.sleep
) -> list[Claim]:
    claims = chunks_claim(limit=max_jobs, tenant_id=tenant_id)
    if not claims:
        return claims
    deadline = time.monotonic() + max_wait_ms / 1000
    while len(claims) < max_jobs and time.monotonic() < deadline:
        sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        claims += chunks_claim(
            limit=max_jobs - len(claims), exclude_subjects={c.subject_id for c in claims}, tenant_id=tenant_id
        )
    return claims


def build_jobs(claims: list[Claim], *, record: bool = True) -> list[ListenerJob]:
    """One job per claim (none for a subject erased since): head tree and version, the tenant schema's
    document (None for a shipped one), the chunk's dated turns after the last system message at or
    before it, cut to the caps (:func:`workers.caps.bound_turns`). ``record=False``: the cuts are not
    noted on the chunks (jobs built ahead of their claim)."""
    inputs = job_inputs(claims)
    jobs, notices = [], {}
    for c in claims:
        if c.subject_id not in inputs:  # erased since the claim: its chunk went with it, no job
            continue
        head = inputs[c.subject_id]
        rows = head.messages
        system = [r for r in rows if r[1] == "system" and r[0] <= c.end_seq]
        turns = [
            ListenerTurn(role=r[1], content=r[2], ts=r[3])
            for r in rows
            if c.start_seq <= r[0] <= c.end_seq and r[1] != "system"
        ]
        if system:
            turns.insert(0, ListenerTurn(role="system", content=system[-1][2], ts=system[-1][3]))
        turns, notice = bound_turns(turns)
        if notice:
            notices[c.chunk_id] = notice
        jobs.append(
            ListenerJob(
                job_id=f"{c.chunk_id}:{c.token}",
                subject_id=str(c.subject_id),
                base_version=head.head_version,
                schema_id=head.schema_id,
                schema_version=head.schema_version,
                tree=dict(head.tree or {}),
                schema_document=schema_document(head.tenant_id, head.schema_id, head.schema_version),
                turns=turns,
            )
        )
    if record:
        record_notices(notices)
    return jobs


def release_outage(claims: list[Claim], results: list[ListenerResult], report: RoundReport) -> None:
    """An outage: every chunk back to ``pending`` with its attempt refunded and the error noted."""
    for claim, result in zip(claims, results, strict=True):
        report.released(chunk_release(claim, error=result.error or "memlistener unavailable", refund=True))
    report.transient, report.outage = len(claims), True
    metrics.incr("dispatch_outages")
    logger.warning(
        "memlistener unavailable for all %d jobs of the batch (%s); released without counting an attempt",
        len(claims),
        results[0].error if results else "",
    )


def _apply_request(claim: Claim, job: ListenerJob, result: ListenerResult) -> ApplyRequest:
    evidence = tuple(chunk_evidence(t.model_dump() for t in job.turns))
    return ApplyRequest(
        subject_id=claim.subject_id,
        base_version=job.base_version,  # the head the job saw: a moved head is a VersionConflict
        schema=(job.schema_id, job.schema_version),  # and so is a schema migrated meanwhile
        ops=tuple(o.to_op() for o in result.ops),  # every op read; the store's gate is the one recorded
        actor=Actor.for_model(
            model_id=result.model_id or "memlistener",
            model_version=result.model_version,
            prompt_version=result.prompt_version,
        ),
        source=Source(claim.chunk_id, claim.start_seq, claim.end_seq, evidence, result.note),
        parse_errors=tuple(result.parse_errors),
    )


def _record_outcome(
    claim: Claim, outcome: ApplyOutcome | Exception, report: RoundReport, *, index: bool
) -> None:
    """Count one apply's outcome, or release its chunk after a refusal or an error."""
    if isinstance(outcome, VersionConflict):  # the head moved (e.g. an admin edit): re-run on the new head
        report.conflicts += 1
        chunk_release(claim, count_attempt=False)
        return
    if isinstance(outcome, Exception):  # refused for good; a database error (or a bug) is retried
        retryable = not isinstance(outcome, ServiceError)
        report.released(chunk_release(claim, error=f"apply failed: {outcome}", retryable=retryable))
        return
    if not outcome.created:  # another holder (our lease had expired) applied it first: nothing written
        report.replayed += 1
        logger.info("chunk %s was already applied (token %s); nothing written", claim.chunk_id, claim.token)
        return
    report.applied += 1
    report.versions += int(outcome.version is not None)
    if index and outcome.version is None and conf.get().recall.evidence_indexing:
        # no version, so no version_applied: its messages reach the evidence index from here
        transaction.on_commit(lambda: index_span_soon(claim.subject_id, claim.start_seq, claim.end_seq))
    report.chunk_ids.append(claim.chunk_id)


def apply_batch(claims, jobs, results, *, index: bool, report: RoundReport | None = None) -> RoundReport:
    """Apply a batch's results in one ``tree_apply_ops_batch``; a refused or failed chunk is released."""
    report = RoundReport() if report is None else report
    todo = []
    for claim, job, result in zip(claims, jobs, results, strict=True):
        if result.ok:
            todo.append((claim, _apply_request(claim, job, result)))
        else:
            report.transient += int(result.retryable)
            report.released(
                chunk_release(claim, error=result.error or "memlistener error", retryable=result.retryable)
            )
    if todo:
        outcomes = tree_apply_ops_batch([request for _, request in todo])
        for (claim, _), outcome in zip(todo, outcomes, strict=True):
            _record_outcome(claim, outcome, report, index=index)
    return report


def call_listener(client, jobs: list[ListenerJob]) -> list[ListenerResult]:
    """``client.run(jobs)``; a transport or client failure is a retryable error of every job."""
    try:
        results = client.run(jobs)
        if [r.job_id for r in results] != [j.job_id for j in jobs]:
            raise RuntimeError("memlistener results do not match the jobs sent")
    except Exception as exc:
        logger.warning("memlistener call failed: %s", exc)
        results = ListenerResult.failed(jobs, f"memlistener call failed: {exc}", retryable=True)
    return results


def _settle_outage_like(client, claims, jobs, results, *, index: bool) -> RoundReport:
    """Every result a retryable error: an outage (released, refunded) unless the engine answers part
    of the batch or a probe, in which case the poison jobs count an attempt (:mod:`workers.poison`)."""
    report = RoundReport()
    batch = list(zip(claims, jobs, strict=True))

    def settle(part, answers):
        apply_batch([c for c, _ in part], [j for _, j in part], answers, index=index, report=report)

    call = partial(call_listener, client)
    if len(batch) > 1:
        answered = split_batch(call, batch, settle)
    else:
        answered = settle_lone_job(call, batch, results, settle)
    if not answered:
        release_outage(claims, results, report)
    return report


def dispatch_round(
    *,
    client,
    max_jobs: int | None = None,
    max_wait_ms: float | None = None,
    tenant_id: int | None = None,
    index: bool = True,
    sleep: Callable[[float], None] = time.sleep,
) -> RoundReport:
    """Gather, call the MemListener once, apply every result; see the module docstring."""
    report = RoundReport()
    started = time.monotonic()
    limits = conf.get().dispatch
    max_jobs = limits.batch_max_jobs if max_jobs is None else max_jobs
    max_wait_ms = limits.batch_max_wait_ms if max_wait_ms is None else max_wait_ms
    claims = gather(max_jobs=max_jobs, max_wait_ms=max_wait_ms, tenant_id=tenant_id, sleep=sleep)
    report.claimed = len(claims)
    if not claims:
        return report
    jobs = build_jobs(claims)
    if len(jobs) < len(claims):  # a subject was erased after its claim: go on with the others
        sent = {j.job_id for j in jobs}
        claims = [c for c in claims if f"{c.chunk_id}:{c.token}" in sent]
        if not claims:
            return report
    model_started = time.monotonic()
    results = call_listener(client, jobs)
    model_s = time.monotonic() - model_started
    if is_outage(results):
        report = _settle_outage_like(client, claims, jobs, results, index=index)
    else:
        report = apply_batch(claims, jobs, results, index=index)
    report.claimed, report.model_s = len(claims), model_s
    report.backend_s = time.monotonic() - started - report.model_s
    metrics.observe("dispatch_batch_size", report.claimed)
    metrics.observe("dispatch_model_seconds", report.model_s)
    metrics.observe("dispatch_backend_seconds", report.backend_s)
    metrics.incr("chunks_applied", report.applied)
    if report.failed:
        metrics.incr("chunks_failed", report.failed)
    return report


def _soft_time_limit() -> float:
    """The model's timeout, the round budget and a minute of slack."""
    return conf.get().listener.timeout_s + DISPATCH_BUDGET_S + 60


@pt_task(
    name="workers.dispatch",
    queue="ingest",
    soft_time_limit=when_read(_soft_time_limit),
    time_limit=when_read(lambda: _soft_time_limit() + 30),
    retry_for=(TransientError, OperationalError),
)
def dispatch(self) -> dict:
    """Rounds until nothing is ready or ``DISPATCH_BUDGET_S`` is spent, then asks for itself again;
    an outage raises ``TransientError`` (retried with backoff)."""
    from serving.client import ClientConfig, get_listener_client

    _clear_queued_mark()  # before any work: requests from now on get a task of their own
    client = get_listener_client(conf.listener_client_config(ClientConfig))
    started = time.monotonic()
    totals = {"rounds": 0, "applied": 0, "failed": 0}
    while True:
        report = dispatch_round(client=client)
        if not report.claimed:
            return totals
        totals["rounds"] += 1
        totals["applied"] += report.applied
        totals["failed"] += report.failed
        if report.outage:
            raise TransientError(f"memlistener unavailable for all {report.claimed} jobs of the batch")
        if time.monotonic() - started > DISPATCH_BUDGET_S:
            ask_dispatch()  # continue in a fresh task; this one returns
            return totals


def _dedup_cache():
    """The shared cache for the ``queued`` mark, or None when requests are not deduplicated: eager
    mode runs the task inline, and a per-process cache is not shared with the workers."""
    cache = caches["default"]
    if app.conf.task_always_eager or isinstance(cache, LocMemCache | DummyCache):
        return None
    return cache


def ask_dispatch(sender=None, tenant_id: int | None = None, **_kwargs) -> None:
    """Queue a dispatch unless one is queued and not started (its mark, cleared when it starts,
    expires after ``QUEUED_TTL_S``). The receiver of ``chunks_ready``."""
    cache = _dedup_cache()
    if cache is not None:
        try:
            if not cache.add(QUEUED_KEY, time.time(), QUEUED_TTL_S):
                metrics.incr("dispatch_deduplicated")
                return
        except Exception:  # the cache is down: send (a duplicate task is harmless)
            logger.warning("dispatch dedup cache unavailable; sending", exc_info=True)
            cache = None
    with publishing(dispatch) as published:
        dispatch.apply_async(**publish_options(tenant_id))
    if not published.sent and cache is not None:
        _clear_queued_mark()  # nothing was queued: do not hold the next request back


def _clear_queued_mark() -> None:
    if (cache := _dedup_cache()) is not None:
        try:
            cache.delete(QUEUED_KEY)
        except Exception:  # the mark expires on its own
            logger.warning("could not clear the queued dispatch mark", exc_info=True)


chunks_ready.connect(ask_dispatch, weak=False, dispatch_uid="workers.dispatch:asked")
