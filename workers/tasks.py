"""``workers.sweep`` (beat): close idle subjects' windows and re-dispatch ready chunks (their task lost
with the broker, or their lease expired with a dead worker). Celery's autodiscovery imports this
module: the other tasks are imported here to be registered.
"""

from __future__ import annotations

from django.db import OperationalError

from memory.services.ingest import subjects_flush_idle
from workers.base import pt_task, send
from workers.dispatcher import dispatch
from workers.ordering import ready_chunks
from workers.schema_migrations import schema_migrate  # noqa: F401  (registers workers.schema_migrate)


@pt_task(name="workers.sweep", queue="ingest", soft_time_limit=120, retry_for=(OperationalError,))
def sweep(self) -> dict:
    flushed = subjects_flush_idle()
    ready = ready_chunks().exists()
    if ready:
        send(dispatch)
    return {"flushed": flushed, "dispatched": ready}
