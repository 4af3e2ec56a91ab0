"""Evidence indexing tasks, and the store signals that schedule them.

- `index_messages(subject_id, start_seq, end_seq)`: embed the span's pair units and
  upsert them (deterministic primary keys: idempotent, safe with acks_late);
  retried with backoff while Milvus is unreachable.
- `erase_subject_vectors(tenant_id, subject_id)`: delete a subject's rows after
  erasure; retried the same way; records the purge on the tombstone.
- `reconcile_erasures()` (Celery beat, `ERASURE_RECONCILE_SECONDS`): retries every
  purge not recorded yet (`memory/services/erasure.py`).
- `reconcile_indexing()` (Celery beat, `INDEX_RECONCILE_SECONDS`): re-queues the spans of
  applied chunks whose indexing is not confirmed (`memory/services/evidence.py`): the task was
  lost with the broker between the commit and the publish, or gave up while Milvus was down.
- `flush_evidence()` (Celery beat, `EVIDENCE_FLUSH_SECONDS`): seal the growing
  segments that small indexing batches leave behind, so searches use the built
  indexes. The writing process already flushes after `EVIDENCE_FLUSH_IDLE_S` of
  quiet (`memory/recall/index.py`); this is the backstop for a worker that exits
  first. Not retried: the next beat tick is the retry.

Receivers: `version_applied` (a chunk's version committed -> index that chunk's
messages) and `subject_erased`. Both are connected at import; `memory.apps`
imports this module in `ready()`. `conf.get().recall.evidence_indexing` (env
PERSONATREE_EVIDENCE_INDEXING) switches the receivers off, e.g. for test runs
that do not exercise the index.
"""

from __future__ import annotations

import logging

from django.dispatch import receiver

from memory import conf
from memory.recall.index import IndexUnavailable
from memory.services import erasure, evidence
from memory.signals import subject_erased, version_applied
from workers.base import TransientError, pt_task, send

logger = logging.getLogger(__name__)


def _enabled() -> bool:
    return conf.get().recall.evidence_indexing


@pt_task(name="workers.index_messages", queue="index", soft_time_limit=300)
def index_messages(self, subject_id: int, start_seq: int, end_seq: int) -> int:
    from memory.recall.indexing import evidence_index_span

    try:
        written = evidence_index_span(
            subject_id=int(subject_id), start_seq=int(start_seq), end_seq=int(end_seq)
        )
    except IndexUnavailable as exc:
        raise TransientError(str(exc)) from exc
    evidence.span_indexed(subject_id=int(subject_id), start_seq=int(start_seq), end_seq=int(end_seq))
    return written


@pt_task(name="workers.erase_subject_vectors", queue="index", soft_time_limit=120)
def erase_subject_vectors(self, tenant_id: int, subject_id: int) -> int:
    from memory.recall.indexing import evidence_erase

    try:
        deleted = evidence_erase(tenant_id=int(tenant_id), subject_id=int(subject_id))
    except IndexUnavailable as exc:
        raise TransientError(str(exc)) from exc
    erasure.vectors_purged(tenant_id=int(tenant_id), subject_id=int(subject_id))
    return deleted


@pt_task(name="workers.reconcile_erasures", queue="index", soft_time_limit=120)
def reconcile_erasures(self, limit: int = 100) -> dict:
    """Beat task: purge the vectors of erased subjects whose purge is not recorded (Milvus was down
    at erase time, the task was lost or gave up), oldest first; stop at the first unreachable index
    (the next tick retries). Idempotent."""
    if not _enabled():
        return {"purged": 0, "pending": 0}
    from memory.recall.indexing import evidence_erase

    pending = erasure.pending_vector_purges(limit=int(limit))
    purged = 0
    for tenant_id, subject_id in pending:
        try:
            evidence_erase(tenant_id=tenant_id, subject_id=subject_id)
        except IndexUnavailable as exc:
            logger.warning("vector purge of %d erased subject(s) postponed: %s", len(pending) - purged, exc)
            break
        purged += erasure.vectors_purged(tenant_id=tenant_id, subject_id=subject_id)
    return {"purged": purged, "pending": len(pending) - purged}


#: An applied chunk's own on-commit indexing task gets this long before the reconcile re-queues it.
INDEX_GRACE_S = 600.0


@pt_task(name="workers.reconcile_indexing", queue="index", soft_time_limit=120)
def reconcile_indexing(self, limit: int = 200, older_than_s: float = INDEX_GRACE_S) -> int:
    """Beat task: queue indexing again for applied chunks not confirmed in the evidence index after
    ``older_than_s``, oldest first. Returns the spans queued. Upserts are idempotent."""
    if not _enabled():
        return 0
    spans = evidence.unindexed_spans(older_than_s=float(older_than_s), limit=int(limit))
    queued = 0
    for span in spans:
        if not send(index_messages, span.subject_id, span.start_seq, span.end_seq, tenant_id=span.tenant_id):
            break  # broker down (logged by send): the next tick retries
        queued += 1
    if queued:
        logger.info("re-queued evidence indexing of %d applied chunk span(s)", queued)
    return queued


@pt_task(name="workers.flush_evidence", queue="index", soft_time_limit=120)
def flush_evidence(self) -> bool:
    if not _enabled():
        return False
    from memory.recall import runtime

    try:
        runtime.configured_index().flush()
    except IndexUnavailable as exc:
        logger.warning("evidence flush skipped: %s", exc)
        return False
    return True


@receiver(version_applied, dispatch_uid="workers.indexing.version_applied")
def _on_version_applied(sender, subject_id: int, version: int, chunk_id: int | None = None, **kwargs) -> None:
    if chunk_id is None or not _enabled():
        return  # admin edits and imports carry no new messages
    from memory.models import Chunk

    span = Chunk.objects.filter(pk=chunk_id).values_list("start_seq", "end_seq", "subject__tenant_id").first()
    if span is None:
        return
    start, end, tenant_id = span
    send(index_messages, subject_id, start, end, tenant_id=tenant_id)


@receiver(subject_erased, dispatch_uid="workers.indexing.subject_erased")
def _on_subject_erased(sender, tenant_id: int, subject_id: int, **kwargs) -> None:
    if not _enabled():
        return
    send(erase_subject_vectors, tenant_id, subject_id, tenant_id=tenant_id)
