"""Per-subject order: a subject's chunks are applied one at a time, oldest first (docs/INGEST.md).
A chunk row is its own lease, its ``attempts`` after a claim the fencing token: only a subject's
oldest open chunk is claimable, fair across tenants, again after ``CHUNK_LEASE_SECONDS``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from memory import conf
from memory.models import Chunk, Message, Subject, TreeVersion
from memory.services.chunk_errors import safe_chunk_error
from memory.signals import chunk_failed
from memory.versions import json_column

OPEN = (Chunk.Status.PENDING, Chunk.Status.PROCESSING, Chunk.Status.FAILED)


@dataclass(frozen=True)
class Claim:
    chunk_id: int
    subject_id: int
    token: int  # the chunk's ``attempts`` after this claim
    start_seq: int
    end_seq: int


def lease_seconds() -> int:
    return conf.get().dispatch.chunk_lease_seconds


def _older_open():
    return Chunk.objects.filter(
        subject_id=OuterRef("subject_id"), status__in=OPEN, start_seq__lt=OuterRef("start_seq")
    )


def ready_chunks(
    *, now: datetime | None = None, exclude_subjects: Collection[int] = (), tenant_id: int | None = None
):
    """Head-of-line chunks that may be claimed now: pending, or processing with an expired lease."""
    now = now or timezone.now()
    expired = now - timedelta(seconds=lease_seconds())
    qs = Chunk.objects.filter(
        Q(status=Chunk.Status.PENDING) | Q(status=Chunk.Status.PROCESSING, updated_at__lt=expired)
    ).filter(~Exists(_older_open()))
    if exclude_subjects:
        qs = qs.exclude(subject_id__in=list(exclude_subjects))
    if tenant_id is not None:
        qs = qs.filter(subject__tenant_id=tenant_id)
    return qs.order_by("id")


def fair_order(chunks):
    """Fair across tenants: by the chunk's rank among its tenant's ready chunks, then by id, so a claim
    of ``n`` rows serves ``n`` tenants however large one tenant's backlog is."""
    turn = Window(RowNumber(), partition_by=[F("subject__tenant_id")], order_by=F("id").asc())
    return chunks.annotate(turn=turn).order_by("turn", "id")


def chunks_claim(
    *,
    limit: int,
    exclude_subjects: Collection[int] = (),
    tenant_id: int | None = None,
    now: datetime | None = None,
) -> list[Claim]:
    """Claim up to ``limit`` chunks, at most one per subject, in :func:`fair_order`."""
    claim = _claim_skip_locked if connection.features.has_select_for_update_skip_locked else _claim_cas
    return claim(
        limit=limit, exclude_subjects=exclude_subjects, tenant_id=tenant_id, now=now or timezone.now()
    )


COLUMNS = ("id", "subject_id", "status", "attempts", "start_seq", "end_seq")


def _claim_skip_locked(*, limit, exclude_subjects, tenant_id, now) -> list[Claim]:
    """PostgreSQL: one statement claims the ready head-of-line rows it can lock (re-checked when locked)."""
    params = {
        "now": now,
        "expired": now - timedelta(seconds=lease_seconds()),
        "exclude": list(exclude_subjects),
        "tenant": tenant_id,
        "limit": limit,
    }
    with connection.cursor() as cursor:  # one statement: its own transaction outside a caller's
        cursor.execute(_claim_sql(), params)
        rows = sorted(cursor.fetchall())
    claims: list[Claim] = []
    seen = set(exclude_subjects)
    for chunk_id, subject_id, _status, token, start_seq, end_seq in rows:
        claim = Claim(chunk_id, subject_id, token, start_seq, end_seq)
        if subject_id in seen or len(claims) >= limit:  # a second of its subject, or one too many
            chunk_release(claim, count_attempt=False)
        else:
            seen.add(subject_id)
            claims.append(claim)
    return claims


@cache
def _claim_sql() -> str:
    """:func:`ready_chunks` in :func:`fair_order` as SQL, written once per process: each subject's open
    chunks numbered by ``start_seq`` (head of line: ``pos = 1``), the ready heads numbered per tenant
    (``turn``); no window function may sit next to ``FOR UPDATE``, so the outer select joins by id."""
    qn = connection.ops.quote_name
    chunk, subject = qn(Chunk._meta.db_table), qn(Subject._meta.db_table)
    open_statuses = ", ".join(f"'{status}'" for status in OPEN)
    ready = "({c}.status = '{pending}' OR ({c}.status = '{processing}' AND {c}.updated_at < %(expired)s))"
    ready_c = ready.format(c="c", pending=Chunk.Status.PENDING, processing=Chunk.Status.PROCESSING)
    ready_h = ready.format(c="h", pending=Chunk.Status.PENDING, processing=Chunk.Status.PROCESSING)
    return (
        f"UPDATE {chunk} SET status = '{Chunk.Status.PROCESSING}', attempts = attempts + 1, "
        "updated_at = %(now)s WHERE id IN ("
        f"SELECT c.id FROM {chunk} c JOIN ("
        "SELECT h.id, row_number() OVER (PARTITION BY s.tenant_id ORDER BY h.id) AS turn FROM ("
        "SELECT o.id, o.subject_id, o.status, o.updated_at, "
        "row_number() OVER (PARTITION BY o.subject_id ORDER BY o.start_seq) AS pos "
        f"FROM {chunk} o WHERE o.status IN ({open_statuses}) "
        "AND NOT (o.subject_id = ANY(%(exclude)s::bigint[])) "  # whole subjects: safe before pos
        f"AND (%(tenant)s::bigint IS NULL OR o.subject_id IN (SELECT id FROM {subject} WHERE tenant_id = %(tenant)s))"
        f") h JOIN {subject} s ON s.id = h.subject_id "
        f"WHERE h.pos = 1 AND {ready_h}"
        f") fair ON fair.id = c.id WHERE {ready_c} "
        "ORDER BY fair.turn, c.id LIMIT %(limit)s FOR UPDATE OF c SKIP LOCKED"
        f") RETURNING {', '.join(COLUMNS)}"
    )


def _claim_cas(*, limit, exclude_subjects, tenant_id, now) -> list[Claim]:
    """Portable path (SQLite has no row locks): one compare-and-set UPDATE per candidate."""
    ready = fair_order(ready_chunks(now=now, exclude_subjects=exclude_subjects, tenant_id=tenant_id))
    rows = list(ready.values_list(*COLUMNS)[: max(limit * 2, limit + 4)])
    expired = now - timedelta(seconds=lease_seconds())
    claims: list[Claim] = []
    seen: set[int] = set(exclude_subjects)
    for chunk_id, subject_id, status, attempts, start_seq, end_seq in rows:
        if len(claims) >= limit:
            break
        if subject_id in seen:
            continue
        cas = Chunk.objects.filter(~Exists(_older_open()), pk=chunk_id, status=status, attempts=attempts)
        if status == Chunk.Status.PROCESSING:
            cas = cas.filter(updated_at__lt=expired)
        if cas.update(status=Chunk.Status.PROCESSING, attempts=F("attempts") + 1, updated_at=now):
            seen.add(subject_id)
            claims.append(Claim(chunk_id, subject_id, attempts + 1, start_seq, end_seq))
    return claims


def chunk_release(
    claim: Claim, *, error: str = "", retryable: bool = True, count_attempt: bool = True, refund: bool = False
) -> str:
    """Give the chunk back after a failure: ``pending`` again, or ``failed`` when out of attempts.
    ``count_attempt=False`` (the head moved) always re-queues; ``refund=True`` (an outage) also gives
    the claim's attempt back: any later claim still takes a token above every stale holder's.
    Returns the new status, or ``""`` when the lease had already been lost."""
    max_attempts = conf.get().dispatch.chunk_max_attempts
    give_up = count_attempt and not refund and (not retryable or claim.token >= max_attempts)
    status = Chunk.Status.FAILED if give_up else Chunk.Status.PENDING
    fields = {"status": status, "updated_at": timezone.now()}
    if refund:
        fields["attempts"] = max(0, claim.token - 1)
    if error:  # the kind and a short reason: the cause may quote the subject's or the model's text
        fields["last_error"] = safe_chunk_error(error)
    updated = Chunk.objects.filter(
        pk=claim.chunk_id, status=Chunk.Status.PROCESSING, attempts=claim.token
    ).update(**fields)
    if updated and give_up:  # for good: tell the receivers (the ingest.failed webhook) after commit
        transaction.on_commit(lambda: chunk_failed.send(sender=Chunk, chunk_id=claim.chunk_id))
    return status if updated else ""


def chunks_reclaim(*, tenant_id: int, before: datetime, subject_ids: Sequence[int] | None = None) -> int:
    """Chunks left ``processing`` since before ``before`` back to ``pending`` (a restarted backfill, for
    its own subjects: another live run's stay in flight). A live holder is fenced off by the next
    claim's token. ``subject_ids=None``: the whole tenant's. Returns the count."""
    chunks = Chunk.objects.filter(
        subject__tenant_id=tenant_id, status=Chunk.Status.PROCESSING, updated_at__lt=before
    )
    if subject_ids is not None:
        chunks = chunks.filter(subject_id__in=list(subject_ids))
    return chunks.update(status=Chunk.Status.PENDING)


@dataclass(frozen=True)
class JobInputs:
    """A claimed subject's head, pinned schema and messages ``(seq, role, content, when)`` of the chunk's
    span plus every system message before its end; ``when`` is ``ts``, else ``created_at``."""

    tenant_id: int
    head_version: int
    schema_id: str
    schema_version: int
    tree: dict | None
    messages: list[tuple]


def job_inputs(claims: Sequence[Claim]) -> dict[int, JobInputs]:
    """Each claimed subject's :class:`JobInputs` (an erased one is missing): one query on PostgreSQL."""
    if connection.vendor == "postgresql":
        qn = connection.ops.quote_name
        subject, version, message = (qn(m._meta.db_table) for m in (Subject, TreeVersion, Message))
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT s.id, s.tenant_id, s.head_version, s.schema_id, s.schema_version, v.tree, "
                "(SELECT json_agg(json_build_array(m.seq, m.role, m.content, COALESCE(m.ts, m.created_at)) "
                "ORDER BY m.seq) "
                f"FROM {message} m WHERE m.subject_id = c.sid AND m.seq <= c.hi "
                "AND (m.seq >= c.lo OR m.role = %s)) "
                "FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS c(sid, lo, hi) "
                f"JOIN {subject} s ON s.id = c.sid LEFT JOIN {version} v ON v.id = s.head_id",
                (
                    Message.Role.SYSTEM.value,  # type: ignore[attr-defined]  # TextChoices (no Django stubs)
                    [c.subject_id for c in claims],
                    [c.start_seq for c in claims],
                    [c.end_seq for c in claims],
                ),
            )
            return {
                sid: JobInputs(tenant, head, schema_id, schema_v, json_column(tree), _messages(rows))
                for sid, tenant, head, schema_id, schema_v, tree, rows in cursor.fetchall()
            }
    spans = Q()
    for c in claims:
        spans |= Q(subject_id=c.subject_id, seq__gte=c.start_seq, seq__lte=c.end_seq) | Q(
            subject_id=c.subject_id, role="system", seq__lte=c.end_seq
        )
    messages: dict[int, list[tuple]] = defaultdict(list)
    for row in (
        Message.objects.filter(spans)
        .order_by("subject_id", "seq")
        .values_list("subject_id", "seq", "role", "content", "ts", "created_at")
    ):
        sid, seq, role, content, ts, created_at = row
        messages[sid].append((seq, role, content, ts or created_at))
    return {
        sid: JobInputs(tenant, head, schema_id, schema_v, tree, messages[sid])
        for sid, tenant, head, schema_id, schema_v, tree in Subject.objects.filter(
            pk__in=[c.subject_id for c in claims]
        ).values_list("pk", "tenant_id", "head_version", "schema_id", "schema_version", "head__tree")
    }


def _messages(rows) -> list[tuple]:
    """json_agg's ``[[seq, role, content, when], ...]`` (``when`` ISO-8601 text) as tuples."""
    return [
        (seq, role, content, datetime.fromisoformat(when) if isinstance(when, str) else when)
        for seq, role, content, when in json_column(rows) or ()
    ]
