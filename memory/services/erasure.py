"""Erasure outside the database. The vectors: ``workers.erase_subject_vectors`` (and the periodic
``workers.reconcile_erasures``) record the purge on the subject's tombstone once the index confirmed it.
The llama.cpp disk prompt cache (``MEMLISTENER_PROMPT_CACHE_DIR``, off by default) holds turns no
one can attribute to a subject, so an erasure empties this machine's whole cache; a MemListener on
another machine with its own disk cache is out of reach: keep it off there.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.utils import timezone

from memory import conf
from memory.models import Tombstone
from memory.signals import subject_erased

logger = logging.getLogger(__name__)


def pending_vector_purges(*, limit: int = 100) -> list[tuple[int, int]]:
    """``(tenant_id, subject_pk)`` of erased subjects whose vectors' purge is not recorded, oldest first."""
    rows = (
        Tombstone.objects.filter(vectors_purged_at__isnull=True, subject_pk__isnull=False)
        .order_by("erased_at", "pk")
        .values_list("tenant_id", "subject_pk")[:limit]
    )
    return [(int(t), int(s)) for t, s in rows]


def vectors_purged(*, tenant_id: int, subject_id: int) -> int:
    """Record that the index holds no vector of the erased subject any more; returns tombstones updated."""
    return Tombstone.objects.filter(
        tenant_id=tenant_id, subject_pk=subject_id, vectors_purged_at__isnull=True
    ).update(vectors_purged_at=timezone.now())


def purge_prompt_cache(root: str) -> int:
    """Empty every llama.cpp disk prompt cache under ``root`` through diskcache (a process that has it
    open refills it; the WAL is checkpointed), else by deleting it; returns the entries removed."""
    base = Path(root) if root else None
    if base is None or not base.is_dir():
        return 0
    try:
        import diskcache
    except ImportError:  # the local-llm extra is not installed in this process
        diskcache = None
    removed = 0
    for db in sorted(base.rglob("cache.db")):
        if diskcache is None:
            shutil.rmtree(db.parent, ignore_errors=True)
            continue
        with diskcache.Cache(str(db.parent)) as cache:
            removed += cache.clear()
            cache._sql("PRAGMA wal_checkpoint(TRUNCATE)")  # no public API for it
    return removed


def _on_subject_erased(sender, **_kwargs) -> None:
    root = conf.get().listener.prompt_cache_dir
    try:
        removed = purge_prompt_cache(root)
    except Exception:  # the erasure is committed; a cache we cannot empty is logged, not raised
        logger.exception("could not empty the llama.cpp prompt cache after an erasure")
        return
    if removed:
        logger.info("llama.cpp prompt cache emptied after an erasure (%d entries)", removed)


subject_erased.connect(_on_subject_erased, dispatch_uid="memory.services.erasure.prompt_cache")
