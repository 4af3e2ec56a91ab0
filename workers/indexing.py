"""Evidence indexing tasks and the receivers that schedule them (``version_applied`` indexes a chunk's
messages, ``subject_erased`` purges the subject's rows). Rows have deterministic keys, so every task
is idempotent; while Milvus is unreachable they retry with backoff.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

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

    span = {"subject_id": int(subject_id), "start_seq": int(start_seq), "end_seq": int(end_seq)}
    try:
        written = evidence_index_span(**span)
    except IndexUnavailable as exc:
        raise TransientError(str(exc)) from exc
    evidence.span_indexed(**span)
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
    """Beat task: purge the vectors of erased subjects, oldest first, until the index is unreachable."""
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
    """Beat task: queue indexing again for applied chunks not confirmed in the index after
    ``older_than_s`` (their task lost or given up), oldest first. Returns the spans queued."""
    if not _enabled():
        return 0
    spans = evidence.unindexed_spans(older_than_s=float(older_than_s), limit=int(limit))
    queued = 0
    for tenant_id, subject_id, start_seq, end_seq in spans:
        if not send(index_messages, subject_id, start_seq, end_seq, tenant_id=tenant_id):
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


#: Spans embedded together inside :func:`batched_indexing` (a few units each: one embedding call of
#: some tens of texts, while the next spans are collected).
BATCH_SPANS = 16
_batch = threading.local()


class _SpanBatch:
    """This thread's spans, embedded ``size`` at a time in a background thread (one torch thread: this
    one goes on with the listener) and written here at a later add or at the end."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.spans: list[tuple[int, int, int, int | None]] = []  # subject, start, end, tenant
        self.pending: deque[tuple[list, list[Future]]] = deque()
        self.ahead: dict[str, Future] = {}  # text -> the embedding started for it by expect()
        self.expected: set[tuple[int, int, int]] = set()
        self.indexed = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evidence-embed")
        if _enabled():  # meanwhile the caller stores messages, runs the listener
            # its own thread: starting Milvus Lite takes seconds, the embedding need not wait for it
            threading.Thread(target=_open_index, name="evidence-open", daemon=True).start()

    def add(self, subject_id: int, start_seq: int, end_seq: int, tenant_id: int | None) -> None:
        self.spans.append((subject_id, start_seq, end_seq, tenant_id))
        if len(self.spans) >= self.size:
            self._submit()
        self._write(wait=False)

    def expect(self, spans: list[tuple[int, int, int]]) -> None:
        """Start embedding spans about to be applied, while the listener works on them; nothing is
        written until a span is added (a span whose messages changed is embedded again then)."""
        if not _enabled():
            return
        from memory.recall.bulk import span_texts

        spans = [span for span in dict.fromkeys(spans) if span not in self.expected]
        for start in range(0, len(spans), self.size):
            group = spans[start : start + self.size]
            self.expected.update(group)
            try:
                texts = [t for t in span_texts(group) if t not in self.ahead]
            except Exception:  # noqa: BLE001 - embedded when the span is added instead
                logger.info("evidence of %d span(s) not embedded ahead", len(group), exc_info=True)
                continue
            if texts:
                future = self._pool.submit(_embed_in_one_thread, texts)
                self.ahead.update(dict.fromkeys(texts, future))

    def close(self) -> None:
        try:
            self._submit()
            self._write(wait=True)
        finally:
            self._pool.shutdown(cancel_futures=True)  # spans expected but never applied

    def _submit(self) -> None:
        spans, self.spans = self.spans, []
        if not spans:
            return
        from memory.recall.bulk import span_texts

        try:
            texts = span_texts([(s, a, b) for s, a, b, _t in spans])
        except Exception as exc:  # noqa: BLE001 - see _fallback
            self._fallback(spans, exc)
            return
        ahead = [self.ahead.pop(text, None) for text in texts]
        futures: list[Future] = list(dict.fromkeys(f for f in ahead if f is not None))
        new = [t for t, f in zip(texts, ahead, strict=True) if f is None]  # not expected, or changed since
        if new:
            futures.append(self._pool.submit(_embed_in_one_thread, new))
        self.pending.append((spans, futures))

    def _write(self, *, wait: bool) -> None:
        from memory.recall.bulk import evidence_write_spans

        while self.pending and (wait or all(f.done() for f in self.pending[0][1])):
            spans, futures = self.pending.popleft()
            try:
                vectors = {}
                for future in futures:
                    vectors.update(future.result())
                written = evidence_write_spans([(s, a, b) for s, a, b, _t in spans], vectors)
            except Exception as exc:  # noqa: BLE001 - see _fallback
                self._fallback(spans, exc)
                continue
            for subject_id, start, end in written:
                evidence.span_indexed(subject_id=subject_id, start_seq=start, end_seq=end)
            self.indexed += len(written)

    @staticmethod
    def _fallback(spans: list, exc: Exception) -> None:
        """Never fail the commit that applied the chunks: their tasks retry with backoff (and the
        reconcile is the backstop)."""
        logger.warning("bulk indexing of %d span(s) failed (%s); queued span by span", len(spans), exc)
        for s, a, b, t in spans:
            send(index_messages, s, a, b, tenant_id=t)


def _open_index() -> None:
    """Connect to the index and load the embedder ahead of the first batch (which reports a failure)."""
    from memory.recall import runtime

    try:
        runtime.configured_index().shards  # noqa: B018 - connects
        runtime.configured_embedder().dim  # noqa: B018 - loads the model
    except Exception:  # noqa: BLE001
        logger.info("evidence index not ready ahead of the first batch", exc_info=True)


def _embed_in_one_thread(texts: list[str]):
    from memory.recall.bulk import embed_texts
    from serving.embedder import one_intraop_thread

    with one_intraop_thread():
        return embed_texts(texts)


@contextmanager
def batched_indexing(size: int = BATCH_SPANS) -> Iterator[_SpanBatch]:
    """Within (the backfill's model phase): this thread's applied chunks are embedded ``size`` spans at a
    time in a background thread, all written before it ends; a failed batch goes to ``index_messages``."""
    if getattr(_batch, "current", None) is not None:  # nested: the outer batch collects
        yield _batch.current
        return
    batch = _SpanBatch(size)
    _batch.current = batch
    try:
        yield batch
    finally:
        _batch.current = None
        batch.close()


def index_spans_expected(spans: list[tuple[int, int, int]]) -> None:
    """Within :func:`batched_indexing`: embed these spans' units ahead; elsewhere nothing."""
    if (batch := getattr(_batch, "current", None)) is not None:
        batch.expect(spans)


def index_span_soon(subject_id: int, start_seq: int, end_seq: int, tenant_id: int | None = None) -> None:
    """Index an applied chunk's messages: into this thread's batch, else as an ``index_messages`` task."""
    if not _enabled():
        return
    if (batch := getattr(_batch, "current", None)) is not None:
        batch.add(subject_id, start_seq, end_seq, tenant_id)
    else:
        send(index_messages, subject_id, start_seq, end_seq, tenant_id=tenant_id)


@receiver(version_applied, dispatch_uid="workers.indexing.version_applied")
def _on_version_applied(sender, subject_id: int, version: int, chunk_id: int | None = None, **kwargs) -> None:
    if chunk_id is None or not _enabled():
        return  # admin edits and imports carry no new messages
    from memory.models import Chunk

    span = Chunk.objects.filter(pk=chunk_id).values_list("start_seq", "end_seq", "subject__tenant_id").first()
    if span is not None:  # (start_seq, end_seq, tenant_id)
        index_span_soon(subject_id, *span)


@receiver(subject_erased, dispatch_uid="workers.indexing.subject_erased")
def _on_subject_erased(sender, tenant_id: int, subject_id: int, **kwargs) -> None:
    if not _enabled():
        return
    send(erase_subject_vectors, tenant_id, subject_id, tenant_id=tenant_id)
