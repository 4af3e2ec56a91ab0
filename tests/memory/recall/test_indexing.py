"""Indexing tasks and the store signals that schedule them (Celery eager in tests)."""

import pytest
from celery.exceptions import Retry

from memory.recall import runtime
from memory.recall.index import Scope
from memory.services.subjects import subject_erase
from memory.signals import version_applied
from tests.factories import SubjectFactory
from tests.memory.recall.conftest import add_messages, put_version, stored_hits
from workers.base import TransientError
from workers.indexing import erase_subject_vectors, index_messages

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _count(subject):
    return runtime.configured_index().count(Scope(subject.tenant_id, subject.pk))


def test_version_applied_indexes_the_chunk_span_once(recall_settings, tenant):
    subject = SubjectFactory(tenant=tenant)
    add_messages(subject, [("I play chess on Sundays", "Nice"), ("my dog is Rex", "Cute")])
    version = put_version(subject, {}, span=(1, 4))
    version_applied.send(
        sender=None, subject_id=subject.pk, version=version.number, chunk_id=version.chunk_id
    )
    assert _count(subject) == 2
    # redelivery / re-run: same deterministic keys, no duplicates
    assert index_messages.apply(args=(subject.pk, 1, 4)).get() == 2
    assert _count(subject) == 2
    hits = stored_hits(runtime.configured_index(), Scope(subject.tenant_id, subject.pk))
    assert [(h.start_seq, h.end_seq) for h in hits] == [(1, 2), (3, 4)]
    assert hits[0].text.startswith("user: I play chess")


def test_versions_without_chunk_index_nothing(recall_settings, tenant):
    subject = SubjectFactory(tenant=tenant)
    add_messages(subject, [("hello", "hi")])
    version_applied.send(sender=None, subject_id=subject.pk, version=1, chunk_id=None)
    assert _count(subject) == 0


def test_erasure_removes_the_subjects_vectors_only(recall_settings, tenant, other_tenant):
    keep = SubjectFactory(tenant=other_tenant)
    gone = SubjectFactory(tenant=tenant)
    for s in (keep, gone):
        add_messages(s, [("I live in Porto", "Nice city")])
        index_messages.apply(args=(s.pk, 1, 2)).get()
    gone_ids = (gone.tenant_id, gone.pk)
    subject_erase(subject=gone)
    assert runtime.configured_index().count(Scope(*gone_ids)) == 0
    assert _count(keep) == 1


def test_index_task_on_erased_subject_is_a_no_op(recall_settings):
    assert index_messages.apply(args=(987654, 1, 4)).get() == 0


def test_milvus_down_is_retried(recall_settings, settings, tenant):
    subject = SubjectFactory(tenant=tenant)
    add_messages(subject, [("hello", "hi")])
    runtime.reset_runtime()
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MILVUS_URI": "http://127.0.0.1:9",
        "MILVUS_TIMEOUT_S": 1.0,
    }
    for task, args in (
        (index_messages, (subject.pk, 1, 2)),
        (erase_subject_vectors, (subject.tenant_id, subject.pk)),
    ):
        with pytest.raises(Retry) as info:  # eager + propagate: the autoretry surfaces as Retry
            task.apply(args=args)
        assert isinstance(info.value.exc, TransientError)
