"""Bulk import as an API resource: ``POST /v1/imports`` validates a JSONL body line by line, stores
it, and ``workers.import_run`` runs the backfill (the MemListener itself with eager Celery, else
the workers; progress is read from the subjects' chunks).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import OperationalError, transaction
from django.utils import timezone

from memory.backfill.jsonl import JsonlSource
from memory.backfill.progress import ChunkCounts, backfill_chunk_counts
from memory.backfill.records import BackfillFormatError, nonblank_lines
from memory.backfill.service import backfill_run
from memory.models import Import, Tenant
from memory.services import ServiceError
from workers.base import enqueue_on_commit, pt_task

logger = logging.getLogger(__name__)


class ImportLineError(ServiceError):
    code = "invalid_import_line"
    http_status = 400


class ImportEmpty(ServiceError):
    code = "empty_import"
    http_status = 400


class BytesJsonl(JsonlSource):
    """The JSONL reader over bytes held in memory; locations read ``line 3``."""

    def __init__(self, data: bytes, *, label: str):
        self.data = data
        self.path = Path("line")  # never opened; the reader's locations: "line:3 messages[0].role"
        self.label = label

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        return nonblank_lines(self.data)


def import_validate(data: bytes, *, label: str) -> tuple[int, int]:
    """Read every line; the first bad one is a 400 naming it. Returns (lines, messages)."""
    lines = messages = 0
    try:
        for history in BytesJsonl(data, label=label):
            lines += 1
            messages += len(history.messages)
    except BackfillFormatError as exc:
        # the problem's field: "line:3 messages[0].role" -> "line 3 messages[0].role"
        raise ImportLineError(exc.message, field=exc.location.replace("line:", "line ", 1)) from exc
    if not lines:
        raise ImportEmpty("The import holds no lines: send one JSON object per line.", field="body")
    return lines, messages


def import_create(*, tenant: Tenant, data: bytes, label: str = "", created_by: str = "") -> Import:
    """Validate and store an import; its task is sent once the row is committed."""
    label = label or "import-" + hashlib.sha256(data).hexdigest()[:24]  # a body sent again adds nothing
    lines, messages = import_validate(data, label=label)
    with transaction.atomic():
        row = Import.objects.create(
            tenant=tenant,
            source_label=label,
            body=data,
            body_bytes=len(data),
            lines=lines,
            messages=messages,
            created_by=created_by,
        )
        enqueue_on_commit(import_run, row.pk, tenant_id=tenant.pk)
    return row


def import_execute(import_id: int) -> str:
    """Run one import (the task's body). Safe to run again: the backfill resumes."""
    row = Import.objects.select_related("tenant").filter(pk=import_id).first()
    if row is None or row.status in (Import.Status.DONE, Import.Status.FAILED):
        return "missing" if row is None else row.status
    Import.objects.filter(pk=row.pk).update(
        status=Import.Status.INGESTING, started_at=row.started_at or timezone.now()
    )
    eager = bool(settings.CELERY_TASK_ALWAYS_EAGER)
    try:
        report = backfill_run(
            tenant=row.tenant,
            histories=BytesJsonl(bytes(row.body), label=row.source_label),
            process=eager,
            progress=False,
        )
    except (BackfillFormatError, ServiceError) as exc:  # e.g. a key replayed with other content
        return _fail(row, str(exc))
    except OperationalError:
        raise  # the database went away: the task is retried and the backfill resumes
    except Exception as exc:
        logger.exception("import %s stopped", row.public_id)
        _fail(row, f"The import stopped on an internal error ({type(exc).__name__}); re-send it to resume.")
        raise
    Import.objects.filter(pk=row.pk).update(
        status=Import.Status.PROCESSING,
        new_messages=report.new_messages,
        duplicates=report.duplicates,
        chunks_created=report.chunks,
        subject_ids=report.subject_ids,
        ingested_at=timezone.now(),
    )
    row.refresh_from_db()
    return import_settle(row, import_counts(row)).status


@pt_task(name="workers.import_run", queue="ingest", soft_time_limit=3600, retry_for=(OperationalError,))
def import_run(self, import_id: int) -> str:
    """The task (here, not in ``workers/``: a backfill drives the workers); redelivered, it resumes."""
    return import_execute(int(import_id))


def _fail(row: Import, error: str) -> str:
    Import.objects.filter(pk=row.pk).update(
        status=Import.Status.FAILED, error=error[:2000], finished_at=timezone.now(), body=b""
    )
    return Import.Status.FAILED


def import_counts(row: Import) -> ChunkCounts:
    """The chunks of the import's subjects cut since it started, by status."""
    if not row.subject_ids or row.started_at is None:
        return ChunkCounts()
    return backfill_chunk_counts(tenant_id=row.tenant_id, subject_ids=row.subject_ids, since=row.started_at)


def import_settle(row: Import, counts: ChunkCounts) -> Import:
    """Mark a processing import done once none of its chunks is pending or processing."""
    if row.status == Import.Status.PROCESSING and counts.remaining == 0:
        now = timezone.now()
        if Import.objects.filter(pk=row.pk, status=Import.Status.PROCESSING).update(
            status=Import.Status.DONE, finished_at=now, body=b""
        ):
            row.status, row.finished_at = Import.Status.DONE, now
    return row


@dataclass(frozen=True)
class ImportProgress:
    counts: ChunkCounts
    rate: float | None  # chunks done per second since the import started; None before any
    eta_s: float | None


def import_progress(row: Import) -> ImportProgress:
    counts = import_counts(row)
    import_settle(row, counts)
    end = row.finished_at or timezone.now()
    elapsed = (end - row.started_at).total_seconds() if row.started_at else 0.0
    rate = counts.done / elapsed if counts.done and elapsed > 0 else None
    # A failed chunk holds its subject's later chunks back until it is re-queued: no ETA then.
    blocked = counts.failed > 0 and counts.remaining > 0
    eta = (
        0.0
        if row.status == Import.Status.DONE
        else (counts.remaining / rate if rate and not blocked else None)
    )
    return ImportProgress(counts=counts, rate=rate, eta_s=eta)
