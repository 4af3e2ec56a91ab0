"""The writes of one apply (:func:`memory.services.tree.tree_apply_ops`) in as few round trips as possible.

On PostgreSQL the lock query reserves the new version's id, so the version INSERT, the subject head
UPDATE, the chunk UPDATE and the op-record INSERT go to the server as one statement (the first
three as data-modifying CTEs). The SQL is compiled by Django's own insert/update compilers from the
model instances, so defaults, ``auto_now_add`` and column types follow the models. Other databases
(SQLite in development) get the plain ORM calls. Only call this with the subject row locked.
"""

from __future__ import annotations

from django.db import connection
from django.db.models.sql import InsertQuery, UpdateQuery
from django.utils import timezone

from memory.models import Chunk, OpRecord, Subject, TreeVersion


def single_statement_writes() -> bool:
    return connection.vendor == "postgresql"


def write_apply(locked: Subject, version: TreeVersion | None, chunk_id: int | None, records) -> None:
    """Write the version, move the head, mark the chunk applied and insert the op records.

    On PostgreSQL (version id reserved by the lock) this is one statement: the version INSERT and
    the two UPDATEs as data-modifying CTEs in front of the op-record INSERT, each compiled by
    Django's own SQL compilers. Elsewhere it is the plain ORM calls.
    """
    now = timezone.now()
    chunk_values = {"status": Chunk.Status.APPLIED, "produced_version": version, "last_error": ""}
    if not single_statement_writes() or (version is not None and version.pk is None):
        if version is not None:
            version.save(force_insert=True)
            Subject.objects.filter(pk=locked.pk).update(
                head=version, head_version=version.number, updated_at=now
            )
        OpRecord.objects.bulk_create(records)
        if chunk_id is not None:
            Chunk.objects.filter(pk=chunk_id).update(**chunk_values, updated_at=now)
    else:
        parts = []
        if version is not None:
            parts.append(_insert_sql(TreeVersion, [version], with_pk=True))
            parts.append(
                _update_sql(Subject, locked.pk, head=version, head_version=version.number, updated_at=now)
            )
        if chunk_id is not None:
            parts.append(_update_sql(Chunk, chunk_id, **chunk_values, updated_at=now))
        if records:
            parts.append(_insert_sql(OpRecord, records, returning=True))
        ids = _execute_with_ctes(parts, returning=bool(records)) if parts else []
        if version is not None:
            version._state.adding, version._state.db = False, connection.alias
        for record, pk in zip(records, ids, strict=True):
            record.pk = pk
            record._state.adding, record._state.db = False, connection.alias
    if version is not None:
        locked.head, locked.head_version = version, version.number


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


def _insert_sql(model, objs, *, with_pk: bool = False, returning: bool = False) -> tuple[str, tuple]:
    fields = [f for f in model._meta.concrete_fields if with_pk or not f.primary_key]
    query = InsertQuery(model)
    query.insert_values(fields, objs)
    compiler = query.get_compiler(connection=connection)
    compiler.returning_fields = [model._meta.pk] if returning else None
    ((sql, params),) = compiler.as_sql()
    return sql, tuple(params)


def _update_sql(model, pk, **values) -> tuple[str, tuple]:
    query = UpdateQuery(model)
    query.add_update_values(values)
    query.add_filter("pk", pk)
    sql, params = query.get_compiler(connection=connection).as_sql()
    return sql, tuple(params)
