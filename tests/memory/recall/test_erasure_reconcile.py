"""The evidence purge after an erasure is reconciled (issue 15): a purge that could not run
(Milvus down at erase time) stays pending on the tombstone and ``workers.reconcile_erasures``
retries it until the index confirms it, idempotently; the other subjects' rows stay."""

import pytest

from memory.models import Tombstone
from memory.recall import runtime
from memory.recall.index import Scope
from memory.services.subjects import subject_erase
from tests.factories import SubjectFactory
from tests.memory.recall.conftest import add_messages
from workers.indexing import index_messages, reconcile_erasures

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _count(tenant_id, subject_id):
    return runtime.configured_index().count(Scope(tenant_id, subject_id))


def _indexed(tenant, text):
    subject = SubjectFactory(tenant=tenant)
    add_messages(subject, [(text, "Noted")])
    index_messages.apply(args=(subject.pk, 1, 2)).get()
    assert _count(subject.tenant_id, subject.pk) == 1
    return subject, (subject.tenant_id, subject.pk)


def _milvus(settings, uri):
    runtime.reset_runtime()
    settings.PERSONATREE = {**settings.PERSONATREE, "MILVUS_URI": uri, "MILVUS_TIMEOUT_S": 1.0}


def test_erasure_with_milvus_up_records_the_purge(recall_settings, tenant):
    subject, ids = _indexed(tenant, "I live in Porto")
    tombstone = subject_erase(subject=subject)
    tombstone.refresh_from_db()
    assert _count(*ids) == 0
    assert tombstone.subject_pk == ids[1] and tombstone.vectors_purged_at is not None
    assert reconcile_erasures.apply().get() == {"purged": 0, "pending": 0}


def test_purge_missed_while_milvus_was_down_is_retried_until_done(recall_settings, tenant, other_tenant):
    settings = recall_settings
    lite_uri = settings.PERSONATREE["MILVUS_URI"]
    keeper, keeper_ids = _indexed(other_tenant, "I sail on weekends")
    gone, gone_ids = _indexed(tenant, "my cat is called Zqxcanary")

    _milvus(settings, "http://127.0.0.1:9")  # Milvus unreachable at erase time
    tombstone = subject_erase(subject=gone)  # the queued purge fails (eager: retry swallowed by send)
    tombstone.refresh_from_db()
    assert tombstone.subject_pk == gone_ids[1] and tombstone.vectors_purged_at is None
    # Still down at the first reconcile tick: nothing recorded, still pending.
    assert reconcile_erasures.apply().get() == {"purged": 0, "pending": 1}
    tombstone.refresh_from_db()
    assert tombstone.vectors_purged_at is None

    _milvus(settings, lite_uri)  # Milvus is back
    assert _count(*gone_ids) == 1  # the erased subject's row outlived the erasure...
    assert reconcile_erasures.apply().get() == {"purged": 1, "pending": 0}
    assert _count(*gone_ids) == 0  # ...until the reconcile purged it
    tombstone.refresh_from_db()
    assert tombstone.vectors_purged_at is not None
    assert _count(*keeper_ids) == 1  # another tenant's subject keeps its rows
    assert reconcile_erasures.apply().get() == {"purged": 0, "pending": 0}  # idempotent: nothing left
    assert Tombstone.objects.filter(vectors_purged_at__isnull=True).count() == 0
