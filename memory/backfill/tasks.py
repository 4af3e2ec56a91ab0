"""What Celery's autodiscovery imports of ``memory.backfill`` (``personatree_site/celery.py``): the
task ``workers.import_run`` is defined beside the import it runs, in :mod:`memory.backfill.imports`."""

from memory.backfill.imports import import_run  # noqa: F401  (registers workers.import_run)
