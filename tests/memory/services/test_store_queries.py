"""Round trips of the write path: tree_apply_ops stays at its query budget, and the one-statement
PostgreSQL write leaves the same rows as the plain ORM path."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory import selectors
from memory.engine.ops import Op
from memory.models import Chunk, OpRecord, Subject, TreeVersion
from memory.services import VersionConflict, webhook_subscriptions
from memory.services import tree_store as writes
from memory.services.tree import Actor, leaf_edit
from tests.factories import ChunkFactory, model_apply

pytestmark = pytest.mark.django_db

MODEL = Actor.for_model(model_id="test-model", prompt_version="p1")


def five_ops(subject):
    leaves = [leaf for leaf in selectors.subject_schema(subject).leaves if leaf.tier == "normal"][:5]
    return [Op.add(leaf.path, f"value {i}") for i, leaf in enumerate(leaves)]


def apply(subject, ops, chunk):
    return model_apply(subject, ops, actor=MODEL, chunk=chunk)


def rows(subject):
    """What the store holds for ``subject``, without ids and timestamps."""
    subject = Subject.objects.select_related("head").get(pk=subject.pk)
    records = (
        OpRecord.objects.filter(subject=subject).select_related("version").order_by("created_at", "position")
    )
    return {
        "head": (subject.head_version, subject.head.snapshot if subject.head else None),
        "versions": list(
            TreeVersion.objects.filter(subject=subject).values_list("number", "created_by", "note")
        ),
        "records": [
            (
                r.position,
                r.op_type,
                r.path,
                r.old_value,
                r.new_value,
                r.status,
                r.reason_code,
                r.version and r.version.number,
            )
            for r in records
        ],
        "chunks": list(
            Chunk.objects.filter(subject=subject).values_list("status", "produced_version__number")
        ),
    }


@pytest.mark.postgres
def test_five_op_chunk_inside_a_callers_transaction_is_two_queries(subject, django_assert_max_num_queries):
    """The worker calls tree_apply_ops inside its own atomic block: lock + one write, no savepoint."""
    chunk = ChunkFactory(subject=subject)
    with django_assert_max_num_queries(2) as captured:
        out = apply(subject, five_ops(subject), chunk)
    assert len(out.applied) == 5 and out.version.number == 1
    assert not any("SAVEPOINT" in q["sql"].upper() for q in captured.captured_queries)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_five_op_chunk_on_its_own_is_begin_lock_write_commit(subject):
    chunk = ChunkFactory(subject=subject)
    # The webhooks receiver (workers/webhooks.py) runs after the commit; with the endpoint snapshot
    # current (memory/services/webhook_subscriptions.py) and no tenant subscribed it sends nothing.
    webhook_subscriptions.invalidate()
    assert webhook_subscriptions.subscribers("version.applied") == {}
    with CaptureQueriesContext(connection) as captured:
        out = apply(subject, five_ops(subject), chunk)
    sql = [q["sql"] for q in captured.captured_queries]
    # BEGIN, SELECT ... FOR UPDATE, WITH ... INSERT, COMMIT.
    assert len(sql) == 4 and "FOR UPDATE" in sql[1] and sql[2].startswith("WITH "), sql
    assert not any("memory_webhookendpoint" in q for q in sql)
    assert out.version.number == 1
    assert rows(subject)["chunks"] == [("applied", 1)]


def test_returned_records_and_version_are_the_stored_rows(subject):
    chunk = ChunkFactory(subject=subject)
    ops = [*five_ops(subject)[:4], Op.update("identity/occupation/current_role", "x")]  # last one rejected
    out = apply(subject, ops, chunk)
    stored = {r.pk: r for r in OpRecord.objects.filter(subject=subject)}
    assert sorted(stored) == sorted(r.pk for r in out.records)
    for record in out.records:
        assert stored[record.pk].position == record.position and stored[record.pk].status == record.status
        assert stored[record.pk].created_at == record.created_at
    assert [r.reason_code for r in out.rejected] == ["UPDATE_ON_EMPTY"]
    assert TreeVersion.objects.get(pk=out.version.pk).created_at == out.version.created_at
    assert subject.head_id == out.version.pk and not out.version._state.adding


def test_orm_fallback_writes_the_same_rows(tenant, monkeypatch):
    """The non-PostgreSQL path (development SQLite) and the one-statement path store the same thing."""
    from tests.factories import SubjectFactory

    def scenario(subject):
        first = apply(subject, five_ops(subject), ChunkFactory(subject=subject, start_seq=0, end_seq=5))
        apply(subject, [Op.no_op()], ChunkFactory(subject=subject, start_seq=6, end_seq=11))  # no version
        apply(
            subject, five_ops(subject)[:1], ChunkFactory(subject=subject, start_seq=12, end_seq=17)
        )  # rejected
        leaf_edit(subject=subject, path=five_ops(subject)[0].path, value="edited", actor=Actor.system("t"))
        return first

    fast, slow = SubjectFactory(tenant=tenant), SubjectFactory(tenant=tenant)
    scenario(fast)
    monkeypatch.setattr(writes, "store", lambda: writes.ORM_STORE)
    with CaptureQueriesContext(connection) as captured:
        first = scenario(slow)
    assert not any("nextval" in q["sql"] for q in captured.captured_queries)
    assert first.version.pk is not None and all(r.pk for r in first.records)
    assert rows(fast) == rows(slow)


def test_refusal_inside_a_callers_transaction_leaves_it_usable(subject):
    """No savepoint, yet a VersionConflict (raised before any write) does not doom the caller's block."""
    chunk = ChunkFactory(subject=subject)
    with transaction.atomic():
        with pytest.raises(VersionConflict):
            model_apply(subject, five_ops(subject), actor=MODEL, chunk=chunk, base=7)
        assert not transaction.get_rollback()
        out = apply(subject, five_ops(subject), chunk)  # the same transaction goes on
    assert out.version.number == 1


def test_chunk_with_no_ops_marks_it_applied_without_version(subject):
    chunk = ChunkFactory(subject=subject)
    out = apply(subject, [], chunk)
    assert out.version is None and out.records == ()
    assert rows(subject)["chunks"] == [("applied", None)]
