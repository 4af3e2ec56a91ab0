"""Tenant schemas and schema migrations (re-exported by :mod:`memory.models`; docs/SCHEMAS.md).
Rows are immutable: a change is a new version, and trees move to it through a :class:`SchemaMigration`.
"""

from __future__ import annotations

from django.db import models

from memory.engine.schema import document_digest

__all__ = ["SchemaMigration", "TenantSchema", "document_digest"]


class TenantSchema(models.Model):
    """One version of a tenant's schema. Never updated in place: subjects pin ``(schema_id, version)``."""

    tenant = models.ForeignKey("memory.Tenant", on_delete=models.CASCADE, related_name="schemas")
    schema_id = models.CharField(max_length=100)
    version = models.PositiveIntegerField()
    document = models.JSONField(help_text="The engine schema document (memory/engine/schema.py).")
    digest = models.CharField(max_length=64, editable=False)
    leaf_count = models.PositiveIntegerField(default=0)
    created_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "schema_id", "version"], name="tenant_schema_unique_version"
            ),
        ]
        ordering = ["tenant", "schema_id", "version"]
        verbose_name = "tenant schema"

    def __str__(self) -> str:
        return f"{self.schema_id} v{self.version} ({self.tenant})"


class SchemaMigration(models.Model):
    """A declared mapping from one schema version to the next, and the progress of applying it (one
    audited version per subject; a subject already on the target is skipped, so runs resume)."""

    class Status(models.TextChoices):
        CREATED = "created"
        RUNNING = "running"
        DONE = "done"

    tenant = models.ForeignKey("memory.Tenant", on_delete=models.CASCADE, related_name="schema_migrations")
    mapping_id = models.CharField(max_length=200)
    source_id = models.CharField(max_length=100)
    source_version = models.PositiveIntegerField()
    target_id = models.CharField(max_length=100)
    target_version = models.PositiveIntegerField()
    document = models.JSONField(help_text="The mapping (docs/SCHEMAS.md).")
    digest = models.CharField(max_length=64, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATED)
    counts = models.JSONField(
        default=dict,
        blank=True,
        help_text="Progress of the runs: migrated, unchanged, held, held_ops, failed, failures, remaining.",
    )
    created_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "mapping_id"], name="schema_migration_unique_id"),
        ]
        ordering = ["tenant", "-created_at"]
        verbose_name = "schema migration"

    def __str__(self) -> str:
        return (
            f"{self.mapping_id}: {self.source_id} v{self.source_version} -> "
            f"{self.target_id} v{self.target_version} ({self.tenant})"
        )
