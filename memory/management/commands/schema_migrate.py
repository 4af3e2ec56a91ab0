"""``manage.py schema_migrate --tenant NAME --mapping FILE.json [...]``: prints JSON, the dry run's
report (nothing stored) or the run's status and counts; run again, it resumes (docs/SCHEMAS.md)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.models import Tenant
from memory.services import ServiceError
from memory.services.schema_migrations import (
    DEFAULT_BATCH_SIZE,
    schema_migration_create,
    schema_migration_dry_run,
    schema_migration_prepare,
    schema_migration_run,
)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _error(message: str, field: str | None) -> CommandError:
    """Bad input: exit 1 with ``{"error", "field"}`` (the field names the bad step: ``document.steps[2]``)."""
    return CommandError(json.dumps({"error": message, "field": field}))


class Command(BaseCommand):
    help = "Migrate a tenant's subjects from one schema version to the next with a declared mapping."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="The tenant's name.")
        parser.add_argument("--mapping", required=True, help="The mapping file (JSON, docs/SCHEMAS.md).")
        parser.add_argument("--dry-run", action="store_true", help="Report what would change; write nothing.")
        parser.add_argument(
            "--batch-size", type=_positive, default=DEFAULT_BATCH_SIZE, help="Subjects per transaction."
        )
        parser.add_argument(
            "--max-subjects", type=_positive, default=None, help="Stop after this many subjects."
        )

    def handle(self, *args, tenant, mapping, dry_run, batch_size, max_subjects, **options):
        found = Tenant.objects.filter(name=tenant).first()
        if found is None:
            raise _error(f"No tenant named {tenant!r}.", "tenant")
        try:
            document = json.loads(Path(mapping).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _error(f"Cannot read {mapping}: {exc}", "mapping") from exc
        try:
            if dry_run:
                row = schema_migration_prepare(tenant=found, document=document)
                out = schema_migration_dry_run(migration=row, limit=max_subjects)
            else:
                row, created = schema_migration_create(
                    tenant=found, document=document, created_by="manage.py schema_migrate"
                )
                ran = schema_migration_run(migration=row, batch_size=batch_size, max_subjects=max_subjects)
                out = {"created": created, **{k: v for k, v in ran.items() if k != "last_id"}}
        except ServiceError as exc:
            raise _error(exc.message, exc.field) from exc
        self.stdout.write(json.dumps(out, indent=2, ensure_ascii=False))
