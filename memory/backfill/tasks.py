"""``workers.import_run(import_id)``: run an import the API stored (:mod:`memory.backfill.imports`).

Thin, ids only. Here rather than in ``workers/`` because a backfill drives the workers, not the
other way round (the layers contract); Celery's autodiscovery imports this module
(``personatree_site/celery.py``). A task lost with its worker is redelivered (``acks_late``) and
the backfill resumes: every step is idempotent.
"""

from __future__ import annotations

from django.db import OperationalError

from memory.backfill.imports import import_execute
from workers.base import pt_task


@pt_task(name="workers.import_run", queue="ingest", soft_time_limit=3600, retry_for=(OperationalError,))
def import_run(self, import_id: int) -> str:
    return import_execute(int(import_id))
