"""Tree versions, stored compactly (docs/ARCHITECTURE.md, "Storage"): ``delta`` against the previous
version, the whole ``tree`` on checkpoints and the head; any other version is one range read replayed
from its nearest whole tree. Assigning ``TreeVersion.snapshot`` stores the row as a checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache

from django.db import connection, connections, models

from memory.engine.history import rebuild


@cache
def _range_sql() -> str:
    """One subject's rows from the nearest whole tree at or below a low number up to a high one."""
    meta, qn = TreeVersion._meta, connection.ops.quote_name
    table = qn(meta.db_table)
    subject, number, tree, delta = (
        qn(meta.get_field(f).column) for f in ("subject", "number", "tree", "delta")
    )
    return (
        f"SELECT {number}, {tree}, {delta} FROM {table} WHERE {subject} = %s AND {number} <= %s "
        f"AND {number} >= COALESCE((SELECT max({number}) FROM {table} WHERE {subject} = %s "
        f"AND {number} <= %s AND {tree} IS NOT NULL), 0) ORDER BY {number}"
    )


def json_column(value):
    """A jsonb column read by a raw cursor: text (Django's jsonb loader) or already decoded."""
    return json.loads(value) if isinstance(value, str) else value


class TreeVersionQuerySet(models.QuerySet):
    def trees(self, subject_id: int, numbers: Iterable[int]) -> dict[int, dict[str, str]]:
        """Whole trees of the subject's versions ``numbers`` (0 = the empty tree; a missing one is
        absent), replayed once from one query's rows."""
        wanted = set(numbers)
        found: dict[int, dict[str, str]] = {0: {}} if 0 in wanted else {}
        positive = sorted(n for n in wanted if n > 0)
        if not positive:
            return found
        with connections[self.db].cursor() as cursor:
            cursor.execute(_range_sql(), (subject_id, positive[-1], subject_id, positive[0]))
            rows = [
                (number, json_column(tree), json_column(delta)) for number, tree, delta in cursor.fetchall()
            ]
        for number, tree in rebuild(rows):
            if number in wanted:
                found[number] = tree.to_dict()
        return found

    def load_snapshots(self, versions: Iterable[TreeVersion]) -> list[TreeVersion]:
        """Fill ``snapshot`` of one subject's ``versions`` (e.g. a page of them) with one query."""
        versions = list(versions)
        todo = [v for v in versions if v.tree is None and "_snapshot" not in v.__dict__]
        if todo:
            trees = self.trees(todo[0].subject_id, [v.number for v in todo])
            for version in todo:
                version._snapshot = trees[version.number]
        return versions


class TreeVersion(models.Model):
    """A version of a subject's tree, stored compactly (module docstring). History is never rewritten."""

    class CreatedBy(models.TextChoices):
        CHUNK = "chunk"
        ADMIN = "admin"
        REVERT = "revert"
        IMPORT = "import"
        REVIEW = "review"
        MIGRATION = "migration"

    subject = models.ForeignKey("memory.Subject", on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    tree = models.JSONField(
        null=True, blank=True, help_text="The whole tree: on checkpoints and on the subject's head."
    )
    delta = models.JSONField(
        null=True,
        blank=True,
        help_text="Leaves changed against the previous version ({path: value or null}); null on checkpoints.",
    )
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.CharField(max_length=16, choices=CreatedBy.choices)
    chunk = models.ForeignKey(
        "memory.Chunk", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TreeVersionQuerySet.as_manager()

    class Meta:
        app_label = "memory"
        constraints = [
            models.UniqueConstraint(fields=["subject", "number"], name="version_number_unique"),
        ]
        ordering = ["subject", "-number"]

    def __str__(self) -> str:
        return f"v{self.number} of {self.subject_id}"

    @property
    def is_checkpoint(self) -> bool:
        return self.delta is None

    @property
    def snapshot(self) -> dict[str, str]:
        """The whole tree of this version: the stored one, or a replay (one query, then cached)."""
        if self.tree is not None:
            return self.tree
        if "_snapshot" not in self.__dict__:
            self._snapshot = TreeVersion.objects.trees(self.subject_id, [self.number])[self.number]
        return self._snapshot

    @snapshot.setter
    def snapshot(self, value) -> None:
        self.tree, self.delta = dict(value or {}), None
        self.__dict__.pop("_snapshot", None)
