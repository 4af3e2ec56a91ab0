"""Reads of the memory store; every tenant-facing read takes the tenant explicitly. The hot path,
``subject_get`` + ``tree_current``, is one indexed query (the subject joined with its head).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import cache, lru_cache

from django.db.models import Q, QuerySet

from memory.engine.schema import Schema, SchemaError, get_schema, load_schema, shipped_schemas
from memory.engine.tree import Tree
from memory.models import OpRecord, SchemaMigration, Subject, Tenant, TenantSchema, TreeVersion


def subject_get(*, tenant: Tenant, external_id: str) -> Subject | None:
    """The tenant's subject with its head version loaded, or None (missing and foreign look the same)."""
    try:  # get(), not first(): no ORDER BY (Subject's default ordering joins the tenant)
        subject = Subject.objects.select_related("head").get(tenant=tenant, external_id=external_id)
    except Subject.DoesNotExist:
        return None
    subject.tenant = tenant  # the row matched this tenant: no join needed to load it again
    return subject


@cache
def shipped_schema_ids() -> frozenset[str]:
    """Ids of the schemas shipped with the engine: reserved, a tenant cannot upload under them."""
    return frozenset(schema_id for schema_id, _ in shipped_schemas())


@lru_cache(maxsize=2048)
def _tenant_schema(tenant_id: int, schema_id: str, version: int) -> tuple[Schema, dict]:
    document = (
        TenantSchema.objects.filter(tenant_id=tenant_id, schema_id=schema_id, version=version)
        .values_list("document", flat=True)
        .first()
    )
    if document is None:
        raise SchemaError(f"unknown schema {schema_id!r} v{version}")
    return load_schema(document, limits=False), document  # checked in full when uploaded


def schema_get(tenant_id: int, schema_id: str, version: int) -> Schema:
    """The schema ``(schema_id, version)`` as the tenant sees it: a shipped one (no query) or one the
    tenant uploaded (one query, then cached: rows are immutable). Raises ``SchemaError`` if unknown."""
    if schema_id in shipped_schema_ids():
        return get_schema(schema_id, version)
    return _tenant_schema(tenant_id, schema_id, version)[0]


def schema_document(tenant_id: int, schema_id: str, version: int) -> dict | None:
    """The uploaded document of a tenant schema (what the MemListener is sent), None for a shipped one."""
    if schema_id in shipped_schema_ids():
        return None
    return _tenant_schema(tenant_id, schema_id, version)[1]


def schema_cache_clear() -> None:
    """Forget cached tenant schemas (a tenant or schema row was deleted)."""
    _tenant_schema.cache_clear()


def subject_schema(subject: Subject) -> Schema:
    return schema_get(subject.tenant_id, subject.schema_id, subject.schema_version)


def tree_current(subject: Subject) -> Tree:
    """The subject's current tree. With ``head`` select_related this makes no query."""
    if subject.head_id is None:
        return Tree.empty()
    return Tree.from_dict(subject.head.snapshot)


def tree_at(subject: Subject, as_of: int | datetime | None = None) -> tuple[int, Tree]:
    """``(version_number, tree)`` of the subject at a version number (0: the empty tree; above the
    head: ``LookupError``) or at a point in time (the last version created at or before it)."""
    if as_of is None:
        return subject.head_version, tree_current(subject)
    if isinstance(as_of, datetime):
        found = (
            TreeVersion.objects.filter(subject=subject, created_at__lte=as_of)
            .order_by("-number")
            .values_list("number", flat=True)
            .first()
        )
        number = int(found or 0)
    else:
        number = as_of
    if number == subject.head_version:
        return number, tree_current(subject)
    stored = TreeVersion.objects.trees(subject.pk, [number]).get(number)
    if stored is None:
        raise LookupError(f"Subject has no version {as_of} (head is {subject.head_version}).")
    return number, Tree.from_dict(stored)


def versions_list(*, subject: Subject) -> QuerySet[TreeVersion]:
    return TreeVersion.objects.filter(subject=subject).order_by("-number")


def leaf_last_changes(*, subject: Subject) -> dict[str, OpRecord]:
    """Per path, the applied/approved op record that last changed it (for the admin tree view)."""
    records = (
        OpRecord.objects.filter(
            subject=subject,
            status__in=(OpRecord.Status.APPLIED, OpRecord.Status.APPROVED),
            version__isnull=False,
        )
        .exclude(path="")
        .select_related("version")
        .order_by("-version__number", "-id")
    )
    last: dict[str, OpRecord] = {}
    for record in records:
        last.setdefault(record.path, record)
    return last


ALL_TIERS = ("normal", "personal", "special")
PUBLIC_TIERS = ("normal", "personal")


def tree_visible(tree: Tree, schema: Schema, *, tiers=PUBLIC_TIERS, hidden: Iterable[str] = ()) -> Tree:
    """The part of ``tree`` whose leaves are in ``tiers`` (paths unknown to the schema, and
    ``hidden`` ones, are hidden)."""
    allowed, hidden = set(tiers), frozenset(hidden)
    leaves = ((path, value, schema.leaf(path)) for path, value in tree.items() if path not in hidden)
    return Tree({path: value for path, value, leaf in leaves if leaf is not None and leaf.tier in allowed})


#: Most schema migrations followed back from a subject's pin (:func:`schema_lineage`).
MAX_LINEAGE = 64


def schema_lineage(subject: Subject) -> list[Schema]:
    """The subject's schema and every schema its tenant's schema migrations (run or running) led
    from onto it, transitively: the schemas the values of its older versions may have been written
    under. A schema that cannot be read any more is left out."""
    found: dict[tuple[str, int], Schema] = {}
    todo = [(subject.schema_id, subject.schema_version)]
    while todo and len(found) < MAX_LINEAGE:
        key = todo.pop()
        if key in found:
            continue
        try:
            found[key] = schema_get(subject.tenant_id, *key)
        except SchemaError:
            continue
        todo.extend(
            SchemaMigration.objects.filter(
                tenant_id=subject.tenant_id, target_id=key[0], target_version=key[1]
            )
            .exclude(status=SchemaMigration.Status.CREATED)
            .values_list("source_id", "source_version")
        )
    return list(found.values())


def special_in_history(subject: Subject, tiers) -> frozenset[str]:
    """Paths a key with ``tiers`` must not see in the subject's older versions and op log: those
    special under any schema of :func:`schema_lineage` (a value written while its leaf was special
    stays special, whatever tier the leaf has now). Empty for a key that sees the special tier."""
    if "special" in set(tiers):
        return frozenset()
    return frozenset(
        leaf.path for s in schema_lineage(subject) for leaf in s.leaves if leaf.tier == "special"
    )


def ops_visible(ops: QuerySet[OpRecord], paths: Iterable[str], *, tiers=PUBLIC_TIERS) -> QuerySet[OpRecord]:
    """The op records of ``ops`` a key with ``tiers`` may see: on no leaf (parse errors) or on one
    of ``paths``; for a key that does not see the special tier, none a schema migration held or
    declined (it holds only values crossing the special tier's border)."""
    visible = ops.filter(Q(path="") | Q(path__in=list(paths)))
    if "special" in set(tiers):
        return visible
    held = (OpRecord.Status.PENDING_REVIEW, OpRecord.Status.DECLINED)
    return visible.exclude(schema_migration__isnull=False, status__in=held)


def tree_at_visible(subject: Subject, as_of, *, tiers=PUBLIC_TIERS) -> tuple[int, Tree]:
    """:func:`tree_at` as a key with ``tiers`` may see it: leaves of its tiers in the subject's
    schema; in a version older than the head, also none that was special when written
    (:func:`special_in_history`). ``LookupError`` for a version the subject does not have."""
    number, tree = tree_at(subject, as_of)
    hidden = special_in_history(subject, tiers) if number != subject.head_version else ()
    return number, tree_visible(tree, subject_schema(subject), tiers=tiers, hidden=hidden)
