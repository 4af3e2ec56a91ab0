"""Resumable bulk import: histories -> messages -> chunks (-> versions with ``process=True``).

Every step is idempotent (docs/BACKFILL.md, "Resume"). ``process=False`` leaves the chunks
``pending`` for the workers; ``process=True`` runs the MemListener here in cross-subject batches
and indexes the applied chunks' evidence in bulk (``workers.indexing.batched_indexing``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone
from tqdm import tqdm

from memory import conf
from memory.backfill.progress import ChunkCounts, ModelPhaseBar, backfill_chunk_counts, backfill_wait
from memory.backfill.records import BackfillFormatError, SubjectHistory
from memory.engine.chunker import chunk_turns
from memory.models import Tenant
from memory.services import ServiceError
from memory.services.ingest import messages_ingest, messages_validate, schedule_dispatch, subject_flush

SLICE = 1000  # messages per transaction

logger = logging.getLogger(__name__)


@dataclass
class BackfillReport:
    subjects: int = 0
    messages: int = 0
    new_messages: int = 0
    duplicates: int = 0
    chunks: int = 0  # created by this run (dry run: that would exist for these histories)
    applied: int = 0
    failed: int = 0
    versions: int = 0
    reclaimed: int = 0  # chunks a killed earlier run had left in flight
    elapsed_s: float = 0.0
    dry_run: bool = False
    subject_ids: list[int] = field(default_factory=list)
    # The model phase: the run's chunks by status when it ended (None: not observed), and why the
    # run did not wait for the workers when it was asked to.
    model: ChunkCounts | None = None
    wait_timed_out: bool = False
    wait_skipped: str = ""

    @property
    def chunks_per_s(self) -> float:
        done = self.applied if self.applied else self.chunks
        return done / self.elapsed_s if self.elapsed_s else 0.0


class Pacer:
    """Keeps a cumulative rate at or below ``rate`` units per second (None = unlimited)."""

    def __init__(self, rate: float | None, *, clock=time.monotonic, sleep=time.sleep):
        self.rate = rate if rate and rate > 0 else None
        self.clock, self.sleep = clock, sleep
        self.start = clock()
        self.done = 0.0

    def wait(self, units: float) -> None:
        self.done += units
        if self.rate is None:
            return
        ahead = self.done / self.rate - (self.clock() - self.start)
        if ahead > 0:
            self.sleep(ahead)


def _located(exc: ServiceError, history: SubjectHistory, offset: int = 0) -> BackfillFormatError:
    field = re.sub(r"messages\[(\d+)\]", lambda m: f"messages[{int(m.group(1)) + offset}]", exc.field or "")
    where = f"{history.location} (subject {history.external_id!r})"
    return BackfillFormatError(where, f"{field}: {exc.message}" if field else exc.message)


def history_ingest(*, tenant: Tenant, history: SubjectHistory, report: BackfillReport, enqueue: bool) -> None:
    """Write one history in slices and close its last window (bad input: :class:`BackfillFormatError`)."""
    incoming = list(history.messages)
    subject = None
    for offset in range(0, len(incoming), SLICE):
        try:
            result = messages_ingest(
                tenant=tenant,
                external_id=history.external_id,
                messages=incoming[offset : offset + SLICE],
                max_messages=0,
                enqueue=enqueue,
                idle_flush=False,
            )
        except ServiceError as exc:
            raise _located(exc, history, offset) from exc
        subject = result.subject
        report.new_messages += len(result.accepted)
        report.duplicates += len(result.duplicates)
        report.chunks += result.chunks_created
    if subject is not None:
        report.chunks += len(subject_flush(subject=subject, enqueue=enqueue))
        report.subject_ids.append(subject.pk)


def backfill_run(
    *,
    tenant: Tenant,
    histories: Iterable[SubjectHistory],
    total: int | None = None,
    dry_run: bool = False,
    process: bool = False,
    client=None,
    limit: int | None = None,
    max_chunks_per_s: float | None = None,
    progress: bool = True,
    index: bool = True,
    reclaim: bool = True,
    wait: bool = False,
    wait_timeout_s: float | None = None,
    poll_s: float = 2.0,
) -> BackfillReport:
    """Import ``histories`` for ``tenant``. ``client``: the settings' listener client by default.
    ``reclaim`` (with ``process``): chunks a killed run left ``processing`` are taken back at once
    for this run's subjects, not after their lease (claims are fenced)."""
    from memory.backfill.lookahead import Lookahead
    from workers.dispatcher import dispatch_round
    from workers.indexing import batched_indexing
    from workers.ordering import chunks_reclaim

    report = BackfillReport(dry_run=dry_run)
    started = time.monotonic()
    run_started_at = timezone.now()  # chunks this run claims are newer: never taken back by it
    pacer = Pacer(max_chunks_per_s)
    batch = conf.get().dispatch.batch_max_jobs
    if max_chunks_per_s:
        batch = max(1, min(batch, int(max_chunks_per_s)))
    if process and client is None and not dry_run:
        from serving.client import ClientConfig, get_listener_client

        client = get_listener_client(conf.listener_client_config(ClientConfig))
    warming = _warm_up(client, tenant) if process and not dry_run else None
    total = min(total, limit) if (total is not None and limit) else (limit or total)
    bar = tqdm(total=total, unit="subject", disable=not progress, dynamic_ncols=True, desc="backfill")

    ahead = Lookahead(client, index=index) if process and not dry_run else None

    def process_ready(model_bar: ModelPhaseBar | None = None) -> None:
        while True:
            r = dispatch_round(client=ahead, max_jobs=batch, max_wait_ms=0, tenant_id=tenant.pk, index=index)
            if not r.claimed:
                return
            report.applied += r.applied
            report.failed += r.failed
            report.versions += r.versions
            pacer.wait(r.claimed)
            _postfix()
            if model_bar is not None:
                report.model = backfill_chunk_counts(tenant_id=tenant.pk, subject_ids=report.subject_ids)
                model_bar.show(report.model)
            if r.transient == r.claimed:
                return  # model unavailable: leave the chunks pending for the workers / a re-run

    def _postfix() -> None:
        report.elapsed_s = time.monotonic() - started
        bar.set_postfix(
            chunks=report.chunks, applied=report.applied, chunks_per_s=f"{report.chunks_per_s:.1f}"
        )

    indexing = contextlib.ExitStack()
    if process and index and not dry_run:
        indexing.enter_context(batched_indexing())  # the applied chunks' evidence, embedded in bulk
    try:
        pending_subjects = 0
        for history in histories:
            if limit and report.subjects >= limit:
                break
            report.subjects += 1
            report.messages += len(history.messages)
            if dry_run:
                try:
                    messages_validate(history.messages, max_messages=0)
                except ServiceError as exc:
                    raise _located(exc, history) from exc
                turns = [
                    {"role": m.role, "content": m.content, "seq": i}
                    for i, m in enumerate(history.messages, 1)
                ]
                report.chunks += len(chunk_turns(turns, pairs=tenant.chunk_pairs, include_partial=True))
            else:
                before, known = report.chunks, len(report.subject_ids)
                history_ingest(tenant=tenant, history=history, report=report, enqueue=False)
                if process and reclaim and len(report.subject_ids) > known:
                    # Only this run's subjects: another live run on the tenant keeps its chunks.
                    report.reclaimed += chunks_reclaim(
                        tenant_id=tenant.pk, before=run_started_at, subject_ids=report.subject_ids[known:]
                    )
                if not process:
                    pacer.wait(report.chunks - before)
                pending_subjects += 1
                if process and pending_subjects >= batch:
                    process_ready()
                    pending_subjects = 0
            bar.update(1)
            _postfix()
        bar.close()
        if process and not dry_run:
            model_bar = ModelPhaseBar(enabled=progress)
            try:
                model_bar.show(backfill_chunk_counts(tenant_id=tenant.pk, subject_ids=report.subject_ids))
                process_ready(model_bar)
                report.model = backfill_chunk_counts(tenant_id=tenant.pk, subject_ids=report.subject_ids)
                model_bar.show(report.model)
            finally:
                model_bar.close()
        elif not dry_run:
            _hand_to_workers(
                tenant, report, wait=wait, timeout_s=wait_timeout_s, poll_s=poll_s, progress=progress
            )
    finally:
        indexing.close()  # what is left of the batch is indexed before the run ends
        if warming is not None:
            warming.join()
        report.elapsed_s = time.monotonic() - started
        bar.close()
    return report


def _warm_up(client, tenant: Tenant) -> threading.Thread | None:
    """Load the listener's models in a thread while the messages are stored (in-process clients only)."""
    warm = getattr(client, "warm", None)
    if warm is None:
        return None

    def run() -> None:
        try:
            warm(tenant.default_schema_id, tenant.default_schema_version)
        except Exception:  # noqa: BLE001 - the first real batch loads (and reports) it again
            logger.warning("listener warm-up failed", exc_info=True)

    thread = threading.Thread(target=run, name="listener-warm-up", daemon=True)
    thread.start()
    return thread


def _hand_to_workers(tenant: Tenant, report: BackfillReport, *, wait, timeout_s, poll_s, progress) -> None:
    """Enqueue one dispatcher for the import; with ``wait``, follow the workers until its chunks are done."""
    eager = settings.CELERY_TASK_ALWAYS_EAGER
    if (report.chunks or wait) and not eager:
        schedule_dispatch()  # also on a re-run that only waits: pending chunks of a killed run
    if not wait:
        return
    if eager:
        report.wait_skipped = "Celery runs eagerly here (no workers): chunks stay pending; use --process"
        return
    result = backfill_wait(
        tenant_id=tenant.pk,
        subject_ids=report.subject_ids,
        poll_s=poll_s,
        timeout_s=timeout_s,
        progress=progress,
    )
    report.model, report.wait_timed_out = result.counts, result.timed_out
