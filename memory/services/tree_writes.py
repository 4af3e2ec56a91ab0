"""The writes of one apply (:func:`memory.services.tree.tree_apply_ops`), or of a batch of applies to
many subjects (:func:`memory.services.tree.tree_apply_ops_batch`), in as few round trips as possible.

On PostgreSQL the lock query reserves the new versions' ids, so the version INSERT, the subject head
UPDATE, the chunk UPDATE and the op-record INSERT go to the server as one statement (the first
three as data-modifying CTEs), for one subject or sixteen. The INSERTs are compiled by Django's own
insert compiler from the model instances, so defaults, ``auto_now_add`` and column types follow the
models; the UPDATEs join a ``VALUES`` list whose values are prepared and cast by the model fields.
Other databases (SQLite in development) get the plain ORM calls. Only call this with the subject
rows locked.
"""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.utils import timezone

from memory.models import Chunk, OpRecord, Subject, TreeVersion


def single_statement_writes() -> bool:
    return connection.vendor == "postgresql"


def write_apply(locked: Subject, version: TreeVersion | None, chunk_id: int | None, records) -> None:
    """Write the version, move the head, mark the chunk applied and insert the op records.

    The one-subject form of :func:`write_applies`.
    """
    write_applies([(locked, version, chunk_id, records)])


def write_applies(entries) -> None:
    """The writes of one or many applies: ``entries`` are ``(locked, version, chunk_id, records)``.

    Each entry's subject must be locked and appear once. On PostgreSQL (version ids reserved by the
    lock) this is one statement however many subjects there are: the version INSERT, the head and
    chunk UPDATEs (``UPDATE ... FROM (VALUES ...)``, one per table) as data-modifying CTEs in front
    of the op-record INSERT. Elsewhere it is the plain ORM calls, entry by entry.
    """
    now = timezone.now()
    versions = [version for _, version, _, _ in entries if version is not None]
    records = [record for *_, entry_records in entries for record in entry_records]
    if not single_statement_writes() or any(version.pk is None for version in versions):
        for locked, version, chunk_id, entry_records in entries:
            if version is not None:
                version.save(force_insert=True)
                Subject.objects.filter(pk=locked.pk).update(
                    head=version, head_version=version.number, updated_at=now
                )
            OpRecord.objects.bulk_create(entry_records)
            if chunk_id is not None:
                Chunk.objects.filter(pk=chunk_id).update(
                    status=Chunk.Status.APPLIED, produced_version=version, last_error="", updated_at=now
                )
    else:
        parts = []
        if versions:
            parts.append(_insert_sql(TreeVersion, versions, with_pk=True))
            heads = [(v.subject_id, v.pk, v.number) for v in versions]
            parts.append(_update_rows_sql(Subject, ("head", "head_version"), heads, updated_at=now))
        chunks = [(chunk_id, v.pk if v else None) for _, v, chunk_id, _ in entries if chunk_id is not None]
        if chunks:
            parts.append(
                _update_rows_sql(
                    Chunk,
                    ("produced_version",),
                    chunks,
                    status=Chunk.Status.APPLIED,
                    last_error="",
                    updated_at=now,
                )
            )
        if records:
            parts.append(_insert_sql(OpRecord, records, returning=True))
        ids = _execute_with_ctes(parts, returning=bool(records)) if parts else []
        for version in versions:
            version._state.adding, version._state.db = False, connection.alias
        for record, pk in zip(records, ids, strict=True):
            record.pk = pk
            record._state.adding, record._state.db = False, connection.alias
    for locked, version, _, _ in entries:
        if version is not None:
            locked.head, locked.head_id, locked.head_version = version, version.pk, version.number


def _execute_with_ctes(parts: list[tuple[str, tuple]], *, returning: bool) -> list:
    """Run ``parts`` as one statement: all but the last as CTEs (``WITH w0 AS (...), ...``)."""
    *ctes, (last_sql, last_params) = parts
    prefix = (
        ("WITH " + ", ".join(f"w{i} AS ({sql})" for i, (sql, _) in enumerate(ctes)) + " ") if ctes else ""
    )
    params = [p for _, cte_params in ctes for p in cte_params]
    with connection.cursor() as cursor:
        cursor.execute(prefix + last_sql, (*params, *last_params))
        return [row[0] for row in cursor.fetchall()] if returning else []


@cache
def _insert_layout(model, with_pk: bool) -> tuple[list, str, str]:
    qn = connection.ops.quote_name
    fields = [f for f in model._meta.concrete_fields if with_pk or not f.primary_key]
    head = f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) VALUES "
    return fields, head, "(" + ", ".join(["%s"] * len(fields)) + ")"


def _insert_sql(model, objs, *, with_pk: bool = False, returning: bool = False) -> tuple[str, tuple]:
    """``INSERT ... VALUES`` of ``objs``, each value as Django's insert compiler makes it
    (``field.pre_save(obj, add=True)`` -- ``auto_now_add`` -- then ``get_db_prep_save``), without
    compiling a query per call (that was a third of an apply's CPU)."""
    fields, head, row = _insert_layout(model, with_pk)
    params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in objs for f in fields]
    sql = head + ", ".join([row] * len(objs))
    if returning:
        sql += f" RETURNING {connection.ops.quote_name(model._meta.pk.column)}"
    return sql, tuple(params)


def _update_rows_sql(model, columns, rows, **constants) -> tuple[str, tuple]:
    """``UPDATE <table> SET <columns> = v.<columns>, <constants> FROM (VALUES <rows>) v WHERE pk = v.pk``.

    ``rows`` are ``(pk, *values)``; every value is prepared by its model field and cast to the field's
    column type (so a column of NULLs keeps its type).
    """
    meta, qn = model._meta, connection.ops.quote_name
    fields = [meta.pk, *(meta.get_field(name) for name in columns)]
    table, pk_col = qn(meta.db_table), qn(meta.pk.column)
    row_sql = "(" + ", ".join(f"%s::{field.db_type(connection)}" for field in fields) + ")"
    constant_fields = [meta.get_field(name) for name in constants]
    assignments = [f"{qn(f.column)} = v.{qn(f.column)}" for f in fields[1:]]
    assignments += [f"{qn(f.column)} = %s" for f in constant_fields]
    sql = (
        f"UPDATE {table} SET {', '.join(assignments)} FROM (VALUES {', '.join([row_sql] * len(rows))}) "
        f"AS v({', '.join(qn(f.column) for f in fields)}) WHERE {table}.{pk_col} = v.{pk_col}"
    )
    params = [
        f.get_db_prep_save(value, connection)
        for f, value in zip(constant_fields, constants.values(), strict=True)
    ]
    for row in rows:
        params.extend(f.get_db_prep_save(value, connection) for f, value in zip(fields, row, strict=True))
    return sql, tuple(params)
