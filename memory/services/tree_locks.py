"""Row locks of the tree service: the subject row (``SELECT ... FOR UPDATE``) with what an apply
needs read in the same query (tenant, head, the source chunk's status, a reserved version id).

:func:`lock_subject` is the ORM form (one subject, every database); :func:`lock_subjects` the raw-SQL
form for PostgreSQL batches, kept here beside its twin so the service modules read as policy.
"""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.db.models import OuterRef, Subquery
from django.db.models.expressions import RawSQL

from memory.models import Chunk, Subject, Tenant, TreeVersion
from memory.services import NotFoundError, tree_writes


def lock_subject(subject: Subject | int, *, chunk_id: int | None = None, reserve_version_id: bool = False):
    """Re-read the subject with ``FOR UPDATE`` (only its own row) and its head and tenant loaded.

    With ``chunk_id`` the chunk's status (None if it is not this subject's) comes back in the same
    query as ``locked.source_chunk_status``. Chunks are only marked applied under this lock, so the
    status read here cannot change before the transaction ends. With ``reserve_version_id`` (on
    PostgreSQL) the same query also draws the next TreeVersion id as ``locked.next_version_id``, so
    all writes of an apply fit in one statement; an unused id is a harmless gap in the sequence.
    """
    pk = subject.pk if isinstance(subject, Subject) else subject
    qs = Subject.objects.select_for_update(of=("self",)).select_related("tenant", "head").filter(pk=pk)
    if chunk_id is not None:
        status = Chunk.objects.filter(pk=chunk_id, subject_id=OuterRef("pk")).values("status")[:1]
        qs = qs.annotate(source_chunk_status=Subquery(status))
    if reserve_version_id and tree_writes.single_statement_writes():  # looked up per call (tests patch it)
        seq = "nextval(pg_get_serial_sequence(%s, %s))"
        qs = qs.annotate(
            next_version_id=RawSQL(seq, (TreeVersion._meta.db_table, TreeVersion._meta.pk.column))
        )
    try:  # get(), not first(): no ORDER BY in the locking query
        locked = qs.get()
    except Subject.DoesNotExist as exc:
        raise NotFoundError("Subject not found.") from exc
    return locked


def lock_subjects(chunk_ids: dict[int, int | None]) -> dict[int, Subject]:
    """:func:`lock_subject` for many subjects in one query (PostgreSQL): ``{subject_id: chunk_id or None}``.

    Rows are locked in id order, so two batches over overlapping subjects never deadlock. Each
    subject comes with its tenant and head loaded, ``next_version_id`` reserved and
    ``source_chunk_status`` (the status of *its* chunk; None when the chunk is not that subject's
    or no chunk was named). Missing subjects are absent. The SQL is written once per process
    (:func:`_lock_sql`) and the rows are turned into model instances here: compiling the equivalent
    queryset cost more CPU than the rest of an apply.
    """
    sql, layout = _lock_sql()
    named = {sid: cid for sid, cid in chunk_ids.items() if cid is not None}
    with connection.cursor() as cursor:
        cursor.execute(sql, (list(named), list(named.values()), list(chunk_ids)))
        rows = cursor.fetchall()
    locked_by_id = {}
    for row in rows:
        subject, tenant, head = (
            _from_row(model, row, start, stop, conv) for model, start, stop, conv in layout
        )
        Subject.tenant.field.set_cached_value(subject, tenant)
        Subject.head.field.set_cached_value(subject, head if subject.head_id is not None else None)
        subject.source_chunk_status, subject.next_version_id = row[-2], row[-1]
        locked_by_id[subject.pk] = subject
    return locked_by_id


def _from_row(model, row, start: int, stop: int, converters):
    values = list(row[start:stop])
    for index, convert in converters:
        values[index] = convert(values[index], None, connection)
    return model.from_db(connection.alias, None, values)


@cache
def _lock_sql() -> tuple[str, list]:
    """The locking query of :func:`lock_subjects` and how to read its rows: ``(model, start, stop,
    [(index, from_db_value)])`` for the subject, its tenant and its head version, in that order."""
    qn = connection.ops.quote_name
    parts = ((Subject, "s"), (Tenant, "t"), (TreeVersion, "v"))
    columns: list[str] = []
    layout: list[tuple] = []
    for model, alias in parts:
        fields = model._meta.concrete_fields
        converters = [(i, f.from_db_value) for i, f in enumerate(fields) if hasattr(f, "from_db_value")]
        layout.append((model, len(columns), len(columns) + len(fields), converters))
        columns += [f"{alias}.{qn(f.column)}" for f in fields]
    subject, tenant, version, chunk = (qn(m._meta.db_table) for m in (Subject, Tenant, TreeVersion, Chunk))
    sql = (
        f"SELECT {', '.join(columns)}, "
        f"(SELECT c.status FROM {chunk} c JOIN unnest(%s::bigint[], %s::bigint[]) AS m(sid, cid) "
        f"ON c.id = m.cid AND c.subject_id = m.sid WHERE m.sid = s.id), "
        f"nextval(pg_get_serial_sequence('{TreeVersion._meta.db_table}', '{TreeVersion._meta.pk.column}')) "
        f"FROM {subject} s JOIN {tenant} t ON t.id = s.tenant_id LEFT JOIN {version} v ON v.id = s.head_id "
        f"WHERE s.id = ANY(%s::bigint[]) ORDER BY s.id FOR UPDATE OF s"
    )
    return sql, layout
