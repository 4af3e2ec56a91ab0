"""The store under the tree services: :func:`lock_subjects` and :func:`write_applies`, implemented by
:class:`PostgresStore` (every write of a batch one statement of data-modifying CTEs, each table's rows
one ``jsonb_to_recordset`` array) or :class:`OrmStore` (any database, e.g. SQLite) by vendor.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Mapping
from datetime import date, datetime
from functools import cache

from django.db import connection
from django.utils import timezone

from memory.models import Chunk, OpRecord, Subject, Tenant, TreeVersion
from memory.services import NotFoundError


class OrmStore:
    """Any database (SQLite, the embedded default): ORM queries, one subject at a time."""

    def lock(self, chunk_ids: Mapping[int, int | None]) -> dict[int, Subject]:
        """Lock each subject row (id order: two lockers never deadlock) with tenant and head, then
        read the named chunks' statuses in a statement of their own, started after every lock was
        granted: a status read in the locking statement could predate another holder's commit."""
        locked: dict[int, Subject] = {}
        for pk in sorted(chunk_ids):
            qs = Subject.objects.select_for_update(of=("self",)).select_related("tenant", "head")
            with contextlib.suppress(Subject.DoesNotExist):  # get(), not first(): no ORDER BY in the lock
                locked[pk] = qs.get(pk=pk)
        named = [cid for sid, cid in chunk_ids.items() if cid is not None and sid in locked]
        chunks = Chunk.objects.filter(pk__in=named).values_list("pk", "subject_id", "status") if named else ()
        status = {(sid, cid): value for cid, sid, value in chunks}
        for sid, subject in locked.items():
            subject.source_chunk_status = status.get((sid, chunk_ids[sid]))
            subject.next_version_id = None
        return locked

    def write(self, entries) -> set[int]:
        """The writes entry by entry (SQLite serialises writers; the chunk statuses were read under
        the locks, so nothing here finds a chunk applied meanwhile)."""
        now = timezone.now()
        for locked, version, chunk_id, records in entries:
            if version is not None:
                version.save(force_insert=True)
                Subject.objects.filter(pk=locked.pk).update(
                    head=version, head_version=version.number, updated_at=now
                )
                if version.parent_id is not None:  # the old head keeps its delta only (checkpoints: whole)
                    TreeVersion.objects.filter(pk=version.parent_id, delta__isnull=False).update(tree=None)
            OpRecord.objects.bulk_create(records)
            if chunk_id is not None:
                Chunk.objects.filter(pk=chunk_id).update(
                    status=Chunk.Status.APPLIED, produced_version=version, last_error="", updated_at=now
                )
        _move_heads(entries, set())
        return set()


class PostgresStore:
    """PostgreSQL: one locking query for any number of subjects, one write statement for all."""

    def lock(self, chunk_ids: Mapping[int, int | None]) -> dict[int, Subject]:
        """One locking query (:func:`_lock_sql`); ``next_version_id`` is reserved so all writes
        of an apply fit in one statement (an unused id is a harmless gap)."""
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

    def write(self, entries) -> set[int]:
        """Returns the source chunks found already ``applied`` *by this statement*; their entries
        write nothing. The lock query's status read may predate another holder's commit (its
        snapshot starts before the lock wait); this statement's snapshot starts after the lock."""
        versions = [version for _, version, _, _ in entries if version is not None]
        if any(version.pk is None for version in versions):  # locked without a reserved id
            return ORM_STORE.write(entries)
        records = [record for *_, entry_records in entries for record in entry_records]
        record_ids, skipped = _write_statement(entries, versions, records, timezone.now())
        records = [r for r in records if r.chunk_id not in skipped]
        for version in versions:
            if version.chunk_id not in skipped:
                version._state.adding, version._state.db = False, connection.alias
        for record, pk in zip(records, record_ids, strict=True):
            record.pk = pk
            record._state.adding, record._state.db = False, connection.alias
        _move_heads(entries, skipped)
        return skipped


Store = OrmStore | PostgresStore
ORM_STORE = OrmStore()
_STORES: dict[str, Store] = {"postgresql": PostgresStore()}


def store() -> Store:
    """The store for the default database, by its vendor (PostgreSQL's, else the ORM's)."""
    return _STORES.get(connection.vendor, ORM_STORE)


def lock_subjects(chunk_ids: Mapping[int, int | None]) -> dict[int, Subject]:
    """Lock the subjects ``{subject_id: chunk_id or None}`` (missing ones absent), each with tenant, head
    and ``source_chunk_status`` (None: not that subject's chunk, or none named), in a transaction."""
    return store().lock(chunk_ids)


def lock_subject(subject: Subject | int) -> Subject:
    """:func:`lock_subjects` for one subject; :class:`NotFoundError` when it does not exist."""
    pk = subject.pk if isinstance(subject, Subject) else subject
    locked = lock_subjects({pk: None}).get(pk)
    if locked is None:
        raise NotFoundError("Subject not found.")
    return locked


def write_applies(entries) -> set[int]:
    """Write ``(locked, version, chunk_id, records)`` entries; returns the chunks found applied meanwhile."""
    return store().write(entries)


def _move_heads(entries, skipped: set[int]) -> None:
    for locked, version, chunk_id, _ in entries:
        if version is not None and chunk_id not in skipped:
            locked.head, locked.head_id, locked.head_version = version, version.pk, version.number


def _write_statement(entries, versions, records, now) -> tuple[list[int], set[int]]:
    """One statement: ``WITH applied, versions (INSERT), parents (old heads emptied), heads, chunks, ops
    (INSERT) SELECT <op ids in order>, <applied chunk ids>``; an applied chunk's rows are left out."""
    qn = connection.ops.quote_name
    chunk_ids = [chunk_id for _, _, chunk_id, _ in entries if chunk_id is not None]
    ctes: list[tuple[str, str, tuple]] = [
        (
            "applied",
            f"SELECT id FROM {qn(Chunk._meta.db_table)} WHERE id = ANY(%s::bigint[]) AND status = %s",
            (chunk_ids, Chunk.Status.APPLIED.value),  # type: ignore[attr-defined]  # TextChoices (no Django stubs)
        )
    ]
    if versions:
        sql, params = _insert_sql(TreeVersion, versions)
        ctes.append(("versions", sql, params))
        # The old heads keep only their deltas (a checkpoint, delta NULL, keeps its whole tree).
        pk, tree, delta, parent = (
            qn(f.column) for f in (TreeVersion._meta.pk, *map(TreeVersion._meta.get_field, _OLD_HEAD))
        )
        ctes.append(
            (
                "parents",
                f"UPDATE {qn(TreeVersion._meta.db_table)} SET {tree} = NULL "
                f"WHERE {delta} IS NOT NULL AND {pk} IN (SELECT {parent} FROM versions)",
                (),
            )
        )
        heads = [(v.subject_id, v.pk, v.number) for v in versions]
        sql, params = _update_rows_sql(
            Subject,
            ("head", "head_version"),
            heads,
            where="r.head_id IN (SELECT id FROM versions)",
            updated_at=now,
        )
        ctes.append(("heads", sql, params))
    chunks = [(chunk_id, v.pk if v else None) for _, v, chunk_id, _ in entries if chunk_id is not None]
    if chunks:
        sql, params = _update_rows_sql(
            Chunk,
            ("produced_version",),
            chunks,
            where="r.id NOT IN (SELECT id FROM applied)",
            status=Chunk.Status.APPLIED,
            last_error="",
            updated_at=now,
        )
        ctes.append(("chunks", sql, params))
    ops = "NULL::bigint[]"
    if records:
        sql, params = _insert_sql(OpRecord, records)
        ctes.append(("ops", sql, params))
        ops = "(SELECT array_agg(id ORDER BY id) FROM ops)"  # ids come from a sequence: insert order
    statement = (
        "WITH "
        + ", ".join(f"{name} AS ({sql})" for name, sql, _ in ctes)
        + f" SELECT {ops}, (SELECT array_agg(id) FROM applied)"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, tuple(p for _, _, params in ctes for p in params))
        record_ids, applied = cursor.fetchone()
    return record_ids or [], set(applied or ())


def _recordset(fields) -> str:
    """``jsonb_to_recordset(%s::jsonb) AS r(<column> <type>, ...)``: one placeholder per table, not
    one per value (cheaper for psycopg to parse)."""
    qn = connection.ops.quote_name
    columns = ", ".join(f"{qn(f.column)} {f.db_type(connection)}" for f in fields)
    return f"jsonb_to_recordset(%s::jsonb) AS r({columns})"


def _rows_json(fields, rows) -> str:
    """``rows`` (sequences of values in ``fields`` order) as a JSON array of ``{column: value}``."""
    columns = [f.column for f in fields]
    return json.dumps(
        [dict(zip(columns, row, strict=True)) for row in rows], default=_json_value, separators=(",", ":")
    )


def _json_value(value):
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"cannot send {type(value).__name__} in a recordset")


@cache
def _insert_layout(model) -> tuple[list, str]:
    """``INSERT ... SELECT FROM jsonb_to_recordset`` of the rows not of an applied chunk, returning
    their ids; a version keeps its reserved id and also returns its parent (for the old-head update)."""
    meta, qn = model._meta, connection.ops.quote_name
    version = model is TreeVersion
    fields = [f for f in meta.concrete_fields if version or not f.primary_key]
    columns = ", ".join(qn(f.column) for f in fields)
    returned = ", ".join(
        qn(f.column) for f in ([meta.pk, meta.get_field("parent")] if version else [meta.pk])
    )
    sql = (
        f"INSERT INTO {qn(meta.db_table)} ({columns}) SELECT {columns} FROM {_recordset(fields)} "
        f"WHERE (r.chunk_id IS NULL OR r.chunk_id NOT IN (SELECT id FROM applied)) RETURNING {returned}"
    )
    return fields, sql


def _insert_sql(model, objs) -> tuple[str, tuple]:
    """:func:`_insert_layout`'s statement and its parameter: ``objs`` in order, each value as Django's
    insert compiler takes it (``pre_save``: ``auto_now_add`` is set on the object too)."""
    fields, sql = _insert_layout(model)
    return sql, (_rows_json(fields, [[f.pre_save(obj, True) for f in fields] for obj in objs]),)


_OLD_HEAD = ("tree", "delta", "parent")


def _update_rows_sql(model, columns, rows, *, where: str, **constants) -> tuple[str, tuple]:
    """``UPDATE <table> SET <columns> = r.<columns>, <constants> FROM (jsonb_to_recordset(...)) r
    WHERE pk = r.pk AND <where>``; ``rows`` are ``(pk, *values)``."""
    fields, constant_fields, sql = _update_layout(model, tuple(columns), tuple(constants))
    # LIMIT <n>: the planner then knows how many rows come (it assumes 100 for a function) and joins
    # them to the table by primary-key index instead of hashing a scan of the whole table.
    sql = sql.replace("LIMIT ?", f"LIMIT {len(rows)}", 1) + f" AND {where}"
    params = [
        f.get_db_prep_save(v, connection) for f, v in zip(constant_fields, constants.values(), strict=True)
    ]
    return sql, (*params, _rows_json(fields, rows))


@cache
def _update_layout(model, columns: tuple[str, ...], constants: tuple[str, ...]) -> tuple[list, list, str]:
    """The fields and the SQL of :func:`_update_rows_sql` (``LIMIT ?`` stands for the row count),
    built once per shape: a foreign key's column type alone builds a field per call."""
    meta, qn = model._meta, connection.ops.quote_name
    fields = [meta.pk, *(meta.get_field(name) for name in columns)]
    constant_fields = [meta.get_field(name) for name in constants]
    table, pk_col = qn(meta.db_table), qn(meta.pk.column)
    assignments = [f"{qn(f.column)} = r.{qn(f.column)}" for f in fields[1:]]
    assignments += [f"{qn(f.column)} = %s" for f in constant_fields]
    rowset = f"(SELECT * FROM {_recordset(fields)} LIMIT ?) AS r"
    sql = f"UPDATE {table} SET {', '.join(assignments)} FROM {rowset} WHERE {table}.{pk_col} = r.{pk_col}"
    return fields, constant_fields, sql


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
