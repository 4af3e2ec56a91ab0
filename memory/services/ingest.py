"""Ingestion: a subject's message log and the chunks cut from it (docs/INGEST.md). Input is checked
here only (:func:`ingest_body_parse`, :func:`messages_validate`), for the API and the backfill alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, F, Max, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory import conf
from memory.engine.chunker import Turn, chunk_turns
from memory.messages import IncomingMessage
from memory.models import Chunk, Message, Subject, Tenant, TreeVersion
from memory.services import ServiceError
from memory.services.results import IngestStatus
from memory.services.subjects import subject_get_or_create
from memory.services.tree_store import lock_subject
from memory.signals import chunks_ready

ROLES = ("user", "assistant", "system")
# C0 controls other than tab, newline and carriage return, and DEL.
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_KEY_CHARS = 255
#: The members of an ingest body and of each of its messages; any other is refused by name.
BODY_FIELDS = ("messages", "recreate_erased")
MESSAGE_FIELDS = ("content", "idempotency_key", "role", "session_id", "ts")
TS_FORMAT = "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]"


class PayloadTooLarge(ServiceError):
    code = "payload_too_large"
    http_status = 413


class IdempotencyConflict(ServiceError):
    code = "idempotency_conflict"
    http_status = 409


@dataclass(frozen=True)
class IngestResult:
    subject: Subject
    subject_created: bool
    accepted: tuple[tuple[str, int], ...]  # (idempotency_key, seq)
    duplicates: tuple[tuple[str, int], ...]
    cursor: int  # highest seq in the subject's log
    chunks_created: int


def _text_problem(value: str) -> str | None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"is not valid Unicode text (unpaired surrogate at character {exc.start})"
    if bad := CONTROL_CHARS.search(value):
        return f"contains the control character U+{ord(bad.group()):04X} at character {bad.start()}"
    return None


def external_id_validate(external_id: str) -> None:
    """A subject id from a URL or a file: 1-255 characters of text without control characters."""
    if not isinstance(external_id, str) or not external_id.strip() or len(external_id) > 255:
        raise ServiceError("external_id must be 1-255 characters.", field="external_id")
    if problem := _text_problem(external_id):
        raise ServiceError(f"external_id {problem}.", field="external_id", code="invalid_text")


def _unknown(item: dict, allowed: Sequence[str], where: str) -> None:
    if unknown := sorted(set(item) - set(allowed)):
        raise ServiceError(
            f"Unknown field(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}.", field=where + unknown[0]
        )


def _text(item: dict, name: str, where: str, *, default: str | None = None) -> str:
    """A string member (a number is taken as its text); ``default`` when absent (None: required)."""
    field = where + name
    if name not in item:
        if default is None:
            raise ServiceError("This field is required.", field=field, code="required")
        return default
    value = item[name]
    if value is None:
        raise ServiceError("This field may not be null.", field=field, code="null")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ServiceError("Not a valid string.", field=field, code="invalid")
    return str(value)


def _timestamp(value, field: str) -> datetime | None:
    """ISO 8601; a naive time is taken in the current time zone (UTC), an aware one moved to it."""
    if value is None:
        return None
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
    except ValueError:  # well-formed but not a date: 2024-13-01, 25:00
        parsed = None
    if parsed is None:
        raise ServiceError(
            f"Datetime has wrong format. Use one of these formats instead: {TS_FORMAT}.", field=field
        )
    if timezone.is_naive(parsed):
        return timezone.make_aware(parsed)
    try:
        return parsed.astimezone(timezone.get_current_timezone())
    except OverflowError:
        raise ServiceError("Datetime value out of range.", field=field, code="overflow") from None


def ingest_body_parse(data) -> tuple[list[IncomingMessage], bool]:
    """The messages and ``recreate_erased`` of an ingest body, or a :class:`ServiceError` naming the first
    member of the wrong shape (what the messages say is :func:`messages_validate`'s)."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ServiceError('The body must be a JSON object {"messages": [...]}.', field="messages")
    _unknown(data, BODY_FIELDS, "")
    recreate_erased = data.get("recreate_erased", False)
    if not isinstance(recreate_erased, bool):
        raise ServiceError("recreate_erased must be true or false.", field="recreate_erased")
    for i, item in enumerate(data["messages"]):
        if not isinstance(item, dict):
            raise ServiceError("Each message must be a JSON object.", field=f"messages[{i}]")
        _unknown(item, MESSAGE_FIELDS, f"messages[{i}].")
    messages = []
    for i, item in enumerate(data["messages"]):
        where = f"messages[{i}]."
        texts = {name: _text(item, name, where) for name in ("role", "content", "idempotency_key")}
        ts = _timestamp(item.get("ts"), where + "ts")
        session_id = _text(item, "session_id", where, default="").strip()
        messages.append(IncomingMessage(**texts, ts=ts, session_id=session_id))
    return messages, recreate_erased


def messages_validate(messages: Sequence[IncomingMessage], *, max_messages: int | None = None) -> None:
    """Raise :class:`ServiceError` (400) or :class:`PayloadTooLarge` (413) naming the first bad field."""
    limits = conf.get().ingest
    max_messages = limits.max_messages_per_call if max_messages is None else max_messages
    max_chars = limits.max_message_chars
    if not messages:
        raise ServiceError("messages must be a non-empty list.", field="messages", code="empty")
    if max_messages and len(messages) > max_messages:
        raise PayloadTooLarge(
            f"{len(messages)} messages in one call; at most {max_messages} are allowed.", field="messages"
        )
    seen: dict[str, int] = {}
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if msg.role not in ROLES:
            raise ServiceError(
                f"Unknown role {msg.role!r}; use one of {', '.join(ROLES)}.",
                field=f"{where}.role",
                code="invalid_role",
            )
        if not isinstance(msg.content, str) or not msg.content.strip():
            raise ServiceError("content must be a non-empty string.", field=f"{where}.content", code="empty")
        if len(msg.content) > max_chars:
            raise PayloadTooLarge(
                f"content has {len(msg.content)} characters; at most {max_chars} are allowed.",
                field=f"{where}.content",
            )
        key = msg.idempotency_key
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY_CHARS:
            raise ServiceError(
                f"idempotency_key must be 1-{MAX_KEY_CHARS} characters.", field=f"{where}.idempotency_key"
            )
        if len(msg.session_id or "") > 255:
            raise ServiceError("session_id must be at most 255 characters.", field=f"{where}.session_id")
        for name in ("content", "idempotency_key", "session_id"):
            if problem := _text_problem(getattr(msg, name) or ""):
                raise ServiceError(f"{name} {problem}.", field=f"{where}.{name}", code="invalid_text")
        if key in seen:
            raise ServiceError(
                f"idempotency_key repeats messages[{seen[key]}] of this call.",
                field=f"{where}.idempotency_key",
                code="duplicate_key",
            )
        seen[key] = i


def messages_ingest(
    *,
    tenant: Tenant,
    external_id: str,
    messages: Sequence[IncomingMessage],
    max_messages: int | None = None,
    enqueue: bool = True,
    idle_flush: bool = True,
    now: datetime | None = None,
    recreate_erased: bool = False,
) -> IngestResult:
    """Append ``messages`` (idempotency key unique per subject) to the subject's log and cut complete
    windows into pending chunks, all or nothing. ``max_messages=0`` lifts the per-call limit and
    ``idle_flush=False`` keeps an idle partial window open (backfill: windows must not depend on when
    a run resumed). An erased subject's id is :class:`~memory.services.subjects.SubjectErased`."""
    external_id_validate(external_id)
    messages_validate(messages, max_messages=max_messages)
    now = now or timezone.now()
    subject, created = subject_get_or_create(
        tenant=tenant, external_id=external_id, recreate_erased=recreate_erased
    )
    with transaction.atomic():
        locked = lock_subject(subject)
        keys = [m.idempotency_key for m in messages]
        existing = {
            row["idempotency_key"]: row
            for row in Message.objects.filter(subject=locked, idempotency_key__in=keys).values(
                "idempotency_key", "seq", "role", "content"
            )
        }
        for i, msg in enumerate(messages):
            old = existing.get(msg.idempotency_key)
            if old is not None and (old["role"], old["content"]) != (msg.role, msg.content):
                raise IdempotencyConflict(
                    f"idempotency_key was already used (seq {old['seq']}) for a different message.",
                    field=f"messages[{i}].idempotency_key",
                )
        fresh = [m for m in messages if m.idempotency_key not in existing]
        last = Message.objects.filter(subject=locked).order_by("-seq").values("seq", "created_at").first()
        cursor = last["seq"] if last else 0
        built = 0
        if (
            idle_flush
            and fresh
            and last
            and now - last["created_at"] >= timedelta(seconds=conf.get().ingest.idle_flush_seconds)
        ):
            built += len(_build_locked(locked, include_partial=True))  # the old window went idle
        # an IncomingMessage's fields are the Message row's (role, content, idempotency_key, ts, session_id)
        rows = [
            Message(subject=locked, seq=cursor + n, **{**vars(m), "session_id": m.session_id or ""})
            for n, m in enumerate(fresh, start=1)
        ]
        Message.objects.bulk_create(rows)
        accepted_seq = {r.idempotency_key: r.seq for r in rows}
        cursor += len(rows)
        if rows:
            built += len(_build_locked(locked, include_partial=False))
        if built and enqueue:
            schedule_dispatch(tenant_id=tenant.pk)
    return IngestResult(
        subject=locked,
        subject_created=created,
        accepted=tuple((k, accepted_seq[k]) for k in keys if k in accepted_seq),
        duplicates=tuple((k, existing[k]["seq"]) for k in keys if k in existing),
        cursor=cursor,
        chunks_created=built,
    )


def _tail_turns(subject: Subject) -> list[Turn]:
    last_end = Chunk.objects.filter(subject=subject).aggregate(m=Max("end_seq"))["m"] or 0
    tail = list(
        Message.objects.filter(subject=subject, seq__gt=last_end)
        .order_by("seq")
        .values_list("role", "content", "seq", "ts", "session_id")
    )
    if not tail:
        return []
    if not any(row[0] == "system" for row in tail):
        system = (
            Message.objects.filter(subject=subject, role="system", seq__lte=last_end)
            .order_by("-seq")
            .values_list("role", "content", "seq", "ts", "session_id")
            .first()
        )
        if system:
            tail.insert(0, system)
    return [
        Turn(role, content, seq, ts.isoformat() if ts else None, session or None)
        for role, content, seq, ts, session in tail
    ]


def _build_locked(subject: Subject, *, include_partial: bool) -> list[Chunk]:
    turns = _tail_turns(subject)
    if not turns:
        return []
    cut = chunk_turns(
        turns,
        pairs=subject.tenant.chunk_pairs,
        namespace=f"{subject.tenant_id}:{subject.pk}",
        include_partial=include_partial,
    )
    return Chunk.objects.bulk_create(
        [Chunk(subject=subject, chunk_key=c.chunk_key, start_seq=c.start_seq, end_seq=c.end_seq) for c in cut]
    )


def subject_flush(*, subject: Subject, enqueue: bool = True) -> list[Chunk]:
    """Close the subject's partial window now (a no-op when the log is fully chunked)."""
    with transaction.atomic():
        locked = lock_subject(subject)
        built = _build_locked(locked, include_partial=True)
        if built and enqueue:
            schedule_dispatch(tenant_id=locked.tenant_id)
    return built


def subjects_flush_idle(*, now: datetime | None = None, limit: int = 500) -> int:
    """Flush subjects with an unchunked tail idle for IDLE_FLUSH_SECONDS, the longest-idle first."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=conf.get().ingest.idle_flush_seconds)
    last_msg = Message.objects.filter(subject=OuterRef("pk")).order_by("-seq")
    last_chunk = Chunk.objects.filter(subject=OuterRef("pk")).order_by("-end_seq").values("end_seq")[:1]
    idle = (
        Subject.objects.annotate(
            last_seq=Subquery(last_msg.values("seq")[:1]),
            last_at=Subquery(last_msg.values("created_at")[:1]),
            chunked=Coalesce(Subquery(last_chunk), 0),
        )
        .filter(last_at__lt=cutoff, last_seq__gt=F("chunked"))
        .order_by("last_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    flushed = 0
    for pk in list(idle):
        flushed += len(subject_flush(subject=Subject(pk=pk)))
    return flushed


def chunks_requeue(*, chunk_ids: Sequence[int], enqueue: bool = True) -> int:
    """Failed chunks back to ``pending`` with a fresh attempt budget; returns how many were re-queued."""
    with transaction.atomic():
        qs = Chunk.objects.filter(pk__in=list(chunk_ids), status=Chunk.Status.FAILED)
        count = qs.update(status=Chunk.Status.PENDING, attempts=0, updated_at=timezone.now())
        if count and enqueue:
            schedule_dispatch()
    return count


def schedule_dispatch(*, tenant_id: int | None = None) -> None:
    """``chunks_ready`` after commit: it asks for the dispatcher (at most one queued: ``workers.dispatcher.ask_dispatch``)."""
    transaction.on_commit(lambda: chunks_ready.send(sender=schedule_dispatch, tenant_id=tenant_id))


def ingest_status(*, subject: Subject) -> IngestStatus:
    """What the pipeline knows about a subject: log cursor, chunk counts, versions, failures."""
    subject = Subject.objects.get(pk=subject.pk)
    counts = dict(Chunk.objects.filter(subject=subject).values_list("status").annotate(n=Count("id")))
    msg = Message.objects.filter(subject=subject).aggregate(last=Max("seq"))
    chunks = Chunk.objects.filter(subject=subject).aggregate(
        chunked=Max("end_seq"), applied=Max("end_seq", filter=Q(status=Chunk.Status.APPLIED))
    )
    last_chunk_version = (
        TreeVersion.objects.filter(subject=subject, created_by=TreeVersion.CreatedBy.CHUNK)
        .order_by("-number")
        .values("number", "created_at")
        .first()
    )
    troubled = Chunk.objects.filter(subject=subject).filter(
        Q(status=Chunk.Status.FAILED) | ~Q(last_error="") & ~Q(status=Chunk.Status.APPLIED)
    )
    shown = {"chunk_id": F("pk"), "error": F("last_error")}
    failures = list(
        troubled.order_by("start_seq").values("status", "start_seq", "end_seq", "attempts", **shown)[:50]
    )
    chunked = chunks["chunked"] or 0
    return IngestStatus(
        cursor=msg["last"] or 0,
        chunked_through_seq=chunked,
        applied_through_seq=chunks["applied"] or 0,
        unchunked_messages=Message.objects.filter(subject=subject, seq__gt=chunked).count(),
        chunks={s: counts.get(s, 0) for s in Chunk.Status.values},
        pending_chunks=counts.get(Chunk.Status.PENDING, 0) + counts.get(Chunk.Status.PROCESSING, 0),
        head_version=subject.head_version,
        last_applied_version=last_chunk_version["number"] if last_chunk_version else None,
        last_applied_at=last_chunk_version["created_at"] if last_chunk_version else None,
        blocked=counts.get(Chunk.Status.FAILED, 0) > 0,
        failures=failures,
    )
