"""Dry runs of a schema migration as background work: started by the API (the mapping validated at
once), run by ``workers.schema_migration_dry_run``, polled; kept in the shared cache for
:data:`DRY_RUN_TTL_S`. Another tenant's id, or an expired one, is a 404.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.core.cache import cache
from django.utils import timezone

from memory.models import Tenant
from memory.services import ServiceError
from memory.services.schema_migrations import schema_migration_dry_run, schema_migration_prepare

logger = logging.getLogger(__name__)

#: Seconds a dry run's document and report are kept.
DRY_RUN_TTL_S = 3600
STATUSES = ("queued", "running", "done", "failed")


def _key(tenant_id: int, run_id: str) -> str:
    return f"personatree:schema-dry-run:{int(tenant_id)}:{run_id}"


def dry_run_start(*, tenant: Tenant, document: Any) -> str:
    """Validate the mapping (as :func:`schema_migration_prepare`), keep it for the task; the run's id."""
    schema_migration_prepare(tenant=tenant, document=document)
    run_id = uuid.uuid4().hex
    entry = {"status": "queued", "document": dict(document), "created_at": timezone.now().isoformat()}
    cache.set(_key(tenant.pk, run_id), entry, DRY_RUN_TTL_S)
    return run_id


def dry_run_execute(*, tenant_id: int, run_id: str) -> str:
    """Run the tenant's dry run ``run_id``, store its report; its status (``missing``: expired or unknown)."""
    key = _key(tenant_id, run_id)
    entry = cache.get(key)
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if entry is None or tenant is None:
        return "missing"
    cache.set(key, {**entry, "status": "running"}, DRY_RUN_TTL_S)
    result: dict[str, Any]
    try:
        row = schema_migration_prepare(tenant=tenant, document=entry["document"])
        result = {"status": "done", "report": schema_migration_dry_run(migration=row)}
    except ServiceError as exc:  # the schemas changed meanwhile, another document took the id
        result = {"status": "failed", "error": exc.message}
    except Exception:  # a bug: logged; the poll says failed instead of running for ever
        logger.exception("schema migration dry run %s failed", run_id)
        result = {"status": "failed", "error": "internal error"}
    cache.set(key, {**entry, **result, "finished_at": timezone.now().isoformat()}, DRY_RUN_TTL_S)
    return result["status"]


def dry_run_get(*, tenant: Tenant, run_id: str) -> dict[str, Any] | None:
    """The dry run as the poll shows it (no document), or None (unknown, expired, another tenant's)."""
    entry = cache.get(_key(tenant.pk, run_id)) if run_id.isalnum() and len(run_id) == 32 else None
    if entry is None:
        return None
    return {"id": run_id, **{k: v for k, v in entry.items() if k != "document"}}
