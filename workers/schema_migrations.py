"""Schema migration tasks (the work is in :mod:`memory.services.schema_migrations`). A run migrates at
most ``SLICE`` subjects, then sends itself again for the rest, so no task reaches its time limit;
a task lost with its worker is redelivered and resumes (subjects on the target are skipped).
"""

from __future__ import annotations

from django.db import OperationalError

from memory.models import SchemaMigration
from memory.services.schema_dry_runs import dry_run_execute
from memory.services.schema_migrations import schema_migration_run
from workers.base import pt_task, send

#: Subjects per task.
SLICE = 5000


@pt_task(name="workers.schema_migrate", queue="index", soft_time_limit=600, retry_for=(OperationalError,))
def schema_migrate(self, migration_id: int, after_id: int = 0) -> dict:
    row = SchemaMigration.objects.select_related("tenant").filter(pk=int(migration_id)).first()
    if row is None:  # the tenant (and its migrations) was deleted meanwhile
        return {"migration_id": migration_id, "missing": True}
    out = schema_migration_run(migration=row, max_subjects=SLICE, after_id=int(after_id))
    if out["examined"] == SLICE:
        send(schema_migrate, row.pk, out["last_id"], tenant_id=row.tenant_id)
    return out


@pt_task(name="workers.schema_migration_dry_run", queue="index", soft_time_limit=600)
def schema_migration_dry_run(self, tenant_id: int, run_id: str) -> str:
    return dry_run_execute(tenant_id=int(tenant_id), run_id=str(run_id))
