"""Evidence indexing is reconciled, not fire-and-forget (issue 15): an applied chunk whose index
task never ran (lost with the broker between the commit and the publish) or gave up (Milvus down)
stays unconfirmed (``Chunk.indexed_at`` empty) and ``workers.reconcile_indexing`` queues it again
until the index confirms it; a confirmed chunk is never queued again."""

import pytest
from celery.exceptions import Retry

from memory.models import Chunk
from memory.recall import runtime
from memory.recall.index import Scope
from tests.factories import ChunkFactory, SubjectFactory
from tests.memory.recall.conftest import add_messages
from workers.indexing import index_messages, reconcile_indexing

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _count(subject):
    return runtime.configured_index().count(Scope(subject.tenant_id, subject.pk))


def _applied_chunk(tenant, text):
    """An applied chunk over two pairs whose index task never ran (the publish was lost)."""
    subject = SubjectFactory(tenant=tenant)
    end = add_messages(subject, [(text, "Noted"), ("and I cycle to work", "Nice")])
    chunk = ChunkFactory(subject=subject, start_seq=1, end_seq=end, status=Chunk.Status.APPLIED)
    return subject, chunk


def test_a_lost_index_task_is_requeued_and_then_confirmed(recall_settings, tenant):
    subject, chunk = _applied_chunk(tenant, "I live in Porto")
    assert _count(subject) == 0 and chunk.indexed_at is None

    assert reconcile_indexing.apply().get() == 0  # within the grace period its own task may still run
    assert reconcile_indexing.apply(kwargs={"older_than_s": 0}).get() == 1
    chunk.refresh_from_db()
    assert _count(subject) == 2 and chunk.indexed_at is not None
    assert reconcile_indexing.apply(kwargs={"older_than_s": 0}).get() == 0  # confirmed: not again


def test_index_task_that_failed_while_milvus_was_down_is_retried_later(recall_settings, tenant, other_tenant):
    settings = recall_settings
    lite_uri = settings.PERSONATREE["MILVUS_URI"]
    subject, chunk = _applied_chunk(tenant, "my dog is called Zqxindexcanary")
    other, other_chunk = _applied_chunk(other_tenant, "I sail on weekends")
    index_messages.apply(args=(other.pk, other_chunk.start_seq, other_chunk.end_seq)).get()
    other_chunk.refresh_from_db()
    assert other_chunk.indexed_at is not None  # a successful task confirms its own chunk

    runtime.reset_runtime()
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MILVUS_URI": "http://127.0.0.1:9",
        "MILVUS_TIMEOUT_S": 1.0,
    }
    with pytest.raises(Retry):  # eager + propagate: Milvus unreachable, the task asks to be retried
        index_messages.apply(args=(subject.pk, chunk.start_seq, chunk.end_seq))
    chunk.refresh_from_db()
    assert chunk.indexed_at is None

    runtime.reset_runtime()
    settings.PERSONATREE = {**settings.PERSONATREE, "MILVUS_URI": lite_uri}
    assert reconcile_indexing.apply(kwargs={"older_than_s": 0}).get() == 1  # only the unconfirmed one
    chunk.refresh_from_db()
    assert chunk.indexed_at is not None and _count(subject) == 2


def test_pending_and_failed_chunks_are_not_indexed_by_the_reconcile(recall_settings, tenant):
    subject = SubjectFactory(tenant=tenant)
    add_messages(subject, [("I live in Lyon", "Noted")])
    ChunkFactory(subject=subject, start_seq=1, end_seq=2, status=Chunk.Status.PENDING)
    ChunkFactory(subject=subject, start_seq=3, end_seq=4, status=Chunk.Status.FAILED)
    assert reconcile_indexing.apply(kwargs={"older_than_s": 0}).get() == 0
    assert _count(subject) == 0
