"""tree_apply_ops_batch (the dispatcher's batch form of tree_apply_ops) on a real Postgres."""

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from memory import selectors
from memory.engine.ops import Op
from memory.models import Chunk, OpRecord, Subject, TreeVersion
from memory.services import NotFoundError, ServiceError, VersionConflict, webhook_subscriptions
from memory.services import tree_store as writes
from memory.services.tree import (
    Actor,
    ApplyOutcome,
    ApplyRequest,
    tree_apply_ops,
    tree_apply_ops_batch,
)
from memory.signals import ops_pending_review, version_applied
from tests.factories import ChunkFactory, SubjectFactory, chunk_source

pytestmark = pytest.mark.django_db

MODEL = Actor.for_model(model_id="test-model", prompt_version="p1")
ROLE = "identity/occupation/current_role"
CITY = "identity/location/current_city"
HEALTH = "body/health/conditions"  # special tier: held for review


def request(subject, ops, *, chunk=None, base=None, parse_errors=()):
    chunk = chunk if chunk is not None else ChunkFactory(subject=subject)
    return ApplyRequest(
        subject_id=subject.pk,
        base_version=subject.head_version if base is None else base,
        ops=ops,
        actor=MODEL,
        source=chunk_source(chunk),
        parse_errors=parse_errors,
    )


def stored(subject):
    """What the store holds for ``subject``, without ids and timestamps."""
    subject = Subject.objects.select_related("head").get(pk=subject.pk)
    return {
        "head": (subject.head_version, subject.head.snapshot if subject.head else None),
        "versions": list(
            TreeVersion.objects.filter(subject=subject)
            .order_by("number")
            .values_list("number", "created_by", "parent__number")
        ),
        "records": list(
            OpRecord.objects.filter(subject=subject)
            .order_by("chunk__start_seq", "position")
            .values_list(
                "position",
                "op_type",
                "path",
                "old_value",
                "new_value",
                "status",
                "reason_code",
                "version__number",
            )
        ),
        "chunks": list(
            Chunk.objects.filter(subject=subject)
            .order_by("start_seq")
            .values_list("status", "produced_version__number", "last_error")
        ),
    }


def test_batch_writes_what_one_call_per_subject_writes(tenant):
    """Same rows as tree_apply_ops, subject by subject: versions, records (applied, rejected, held,
    parse errors), heads, chunks."""
    batch = [SubjectFactory(tenant=tenant) for _ in range(3)]
    alone = [SubjectFactory(tenant=tenant) for _ in range(3)]

    def scenario(subject):
        return [
            [Op.add(ROLE, "nurse"), Op.add(CITY, "Lyon")],
            [Op.update(ROLE, "doctor"), Op.add(ROLE, "twice"), Op.add(HEALTH, "asthma")],
            [Op.no_op()],
        ]

    parse_errors = [{"line_no": 3, "line": "ADD(", "message": "unclosed"}]
    for step in range(3):
        requests = []
        for subject in batch:
            subject.refresh_from_db()
            requests.append(request(subject, scenario(subject)[step], parse_errors=parse_errors))
        outcomes = tree_apply_ops_batch(requests)
        assert all(isinstance(out, ApplyOutcome) and out.created for out in outcomes)
        for subject in alone:
            subject.refresh_from_db()
            tree_apply_ops(**_kwargs(request(subject, scenario(subject)[step], parse_errors=parse_errors)))
    for b, a in zip(batch, alone, strict=True):
        assert stored(b) == stored(a)
    assert stored(batch[0])["head"] == (2, {ROLE: "doctor", CITY: "Lyon"})
    assert [r[5] for r in stored(batch[0])["records"]].count("pending_review") == 1


def _kwargs(req: ApplyRequest) -> dict:
    return {
        "subject": Subject(pk=req.subject_id),
        "base_version": req.base_version,
        "ops": req.ops,
        "actor": req.actor,
        "source": req.source,
        "parse_errors": req.parse_errors,
    }


def test_returned_versions_and_records_are_the_stored_rows(tenant):
    subjects = [SubjectFactory(tenant=tenant) for _ in range(2)]
    outcomes = tree_apply_ops_batch(
        [request(s, [Op.add(ROLE, f"r{i}"), Op.update(CITY, "x")]) for i, s in enumerate(subjects)]
    )
    for subject, out in zip(subjects, outcomes, strict=True):
        subject.refresh_from_db()
        assert subject.head_id == out.version.pk and out.head_version == 1 and not out.version._state.adding
        assert {r.pk for r in out.records} == set(
            OpRecord.objects.filter(subject=subject).values_list("pk", flat=True)
        )
        assert [r.reason_code for r in out.rejected] == ["UPDATE_ON_EMPTY"]


def test_stale_base_is_a_conflict_for_that_subject_only(tenant):
    moved, fine = SubjectFactory(tenant=tenant), SubjectFactory(tenant=tenant)
    tree_apply_ops(**_kwargs(request(moved, [Op.add(ROLE, "nurse")])))  # the head moves to v1
    stale = request(moved, [Op.add(CITY, "Lyon")], base=0)
    out_moved, out_fine = tree_apply_ops_batch([stale, request(fine, [Op.add(CITY, "Paris")])])
    assert isinstance(out_moved, VersionConflict) and out_moved.current_version == 1
    assert out_fine.version.number == 1
    assert Chunk.objects.get(pk=stale.source.chunk_id).status == Chunk.Status.PENDING
    assert not OpRecord.objects.filter(chunk_id=stale.source.chunk_id).exists()


def test_applying_the_same_chunk_twice_replays_it(tenant):
    subjects = [SubjectFactory(tenant=tenant) for _ in range(2)]
    requests = [request(s, [Op.add(ROLE, "nurse")]) for s in subjects]
    first = tree_apply_ops_batch(requests)
    again = tree_apply_ops_batch(requests)
    for one, two in zip(first, again, strict=True):
        assert one.created and not two.created
        assert two.version.pk == one.version.pk and [r.pk for r in two.records] == [r.pk for r in one.records]
    assert TreeVersion.objects.count() == 2 and OpRecord.objects.count() == 2
    # the single path agrees: already applied by the batch
    assert not tree_apply_ops(**_kwargs(requests[0])).created


def test_one_subject_named_twice_is_applied_in_request_order(tenant):
    subject, other = SubjectFactory(tenant=tenant), SubjectFactory(tenant=tenant)
    c1, c2 = ChunkFactory(subject=subject), ChunkFactory(subject=subject)
    outcomes = tree_apply_ops_batch(
        [
            request(subject, [Op.add(ROLE, "nurse")], chunk=c1, base=0),
            request(other, [Op.add(ROLE, "pilot")]),
            request(subject, [Op.update(ROLE, "doctor")], chunk=c2, base=1),
        ]
    )
    assert [o.version.number for o in outcomes] == [1, 1, 2]
    assert outcomes[2].version.parent_id == outcomes[0].version.pk
    assert stored(subject)["head"] == (2, {ROLE: "doctor"})
    assert [r[3:5] for r in stored(subject)["records"]] == [(None, "nurse"), ("nurse", "doctor")]


def test_later_request_on_a_stale_base_in_the_same_batch_conflicts(tenant):
    subject = SubjectFactory(tenant=tenant)
    first, second = tree_apply_ops_batch(
        [request(subject, [Op.add(ROLE, "nurse")], base=0), request(subject, [Op.add(CITY, "Lyon")], base=0)]
    )
    assert first.version.number == 1 and isinstance(second, VersionConflict)


def test_refusals_are_per_request(tenant, other_tenant):
    ok, foreign_chunk, bad_ops = (SubjectFactory(tenant=tenant) for _ in range(3))
    elsewhere = ChunkFactory(subject=SubjectFactory(tenant=other_tenant))
    missing = ApplyRequest(subject_id=10**9, base_version=0, ops=[Op.add(ROLE, "x")], actor=MODEL)
    outcomes = tree_apply_ops_batch(
        [
            request(foreign_chunk, [Op.add(ROLE, "x")], chunk=elsewhere),
            missing,
            request(bad_ops, [{"op": "ADD", "path": ROLE, "value": "x"}]),
            request(ok, [Op.add(ROLE, "nurse")]),
        ]
    )
    assert isinstance(outcomes[0], ServiceError) and outcomes[0].field == "source"
    assert isinstance(outcomes[1], NotFoundError)
    assert isinstance(outcomes[2], ServiceError) and outcomes[2].field == "ops"
    assert outcomes[3].version.number == 1
    assert Chunk.objects.get(pk=elsewhere.pk).status == Chunk.Status.PENDING
    assert TreeVersion.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_database_error_fails_only_its_subject_and_the_others_land(tenant, caplog):
    """A value PostgreSQL refuses (NUL) makes the one-statement write fail: the batch rolls back and
    is applied again request by request; the bad request returns its error, nothing else is lost."""
    subjects = [SubjectFactory(tenant=tenant) for _ in range(3)]
    requests = [request(s, [Op.add(ROLE, f"nurse {i}")]) for i, s in enumerate(subjects)]
    requests[1] = request(subjects[1], [Op.add(ROLE, "bad \x00 value")])
    with CaptureQueriesContext(connection) as captured:
        outcomes = tree_apply_ops_batch(requests)
    assert isinstance(outcomes[1], DatabaseError)
    assert outcomes[0].version.number == 1 and outcomes[2].version.number == 1
    assert stored(subjects[1])["versions"] == [] and stored(subjects[1])["records"] == []
    assert Chunk.objects.get(pk=requests[1].source.chunk_id).status == Chunk.Status.PENDING
    for subject in (subjects[0], subjects[2]):
        assert stored(subject)["chunks"] == [("applied", 1, "")]
    assert "applying a batch's 3 requests one by one" in caplog.text
    assert any(q["sql"] == "ROLLBACK" for q in captured.captured_queries)


def test_a_python_error_in_one_request_does_not_sink_the_batch(tenant, monkeypatch):
    import memory.services.tree as tree_module

    subjects = [SubjectFactory(tenant=tenant) for _ in range(3)]
    real = tree_module.gate

    def gate(schema, tree, ops, policy, evidence=None):
        if any(op.value == "boom" for op in ops):
            raise RuntimeError("gate bug (test)")
        return real(schema, tree, ops, policy)

    monkeypatch.setattr(tree_module, "gate", gate)
    outcomes = tree_apply_ops_batch(
        [request(s, [Op.add(ROLE, "boom" if i == 0 else "nurse")]) for i, s in enumerate(subjects)]
    )
    assert isinstance(outcomes[0], RuntimeError)
    assert [o.version.number for o in outcomes[1:]] == [1, 1]


def test_signals_are_sent_after_commit_per_subject(tenant, django_capture_on_commit_callbacks):
    subjects = [SubjectFactory(tenant=tenant) for _ in range(2)]
    seen = []

    def on_version(sender, subject_id, version, chunk_id, **kw):
        seen.append(("version", subject_id, version))

    def on_review(sender, subject_id, op_ids, **kw):
        seen.append(("review", subject_id, len(op_ids)))

    version_applied.connect(on_version)
    ops_pending_review.connect(on_review)
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            tree_apply_ops_batch(
                [
                    request(subjects[0], [Op.add(ROLE, "nurse")]),
                    request(subjects[1], [Op.add(HEALTH, "asthma")]),
                ]
            )
        assert seen == [] and len(callbacks) == 2
        for callback in callbacks:
            callback()
    finally:
        version_applied.disconnect(on_version)
        ops_pending_review.disconnect(on_review)
    assert seen == [("version", subjects[0].pk, 1), ("review", subjects[1].pk, 1)]


@pytest.mark.postgres
@pytest.mark.parametrize("size", [1, 8])
def test_a_batch_is_four_statements_whatever_its_size(tenant, size, django_assert_num_queries):
    """SAVEPOINT (BEGIN on its own), one SELECT ... FOR UPDATE of every subject, one write, RELEASE (COMMIT)."""
    subjects = [SubjectFactory(tenant=tenant) for _ in range(size)]
    requests = [request(s, [Op.add(ROLE, "nurse"), Op.add(CITY, "Lyon")]) for s in subjects]
    with django_assert_num_queries(4) as captured:
        outcomes = tree_apply_ops_batch(requests)
    assert all(o.version.number == 1 for o in outcomes)
    [lock] = [q["sql"] for q in captured.captured_queries if "FOR UPDATE" in q["sql"]]
    assert "ORDER BY" in lock  # subjects are locked in id order: two batches never deadlock


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_batch_on_its_own_is_begin_lock_write_commit(tenant):
    requests = [request(SubjectFactory(tenant=tenant), [Op.add(ROLE, "nurse")]) for _ in range(4)]
    webhook_subscriptions.invalidate()  # read now: the endpoint snapshot is current, no tenant subscribed
    assert webhook_subscriptions.subscribers("version.applied") == {}
    with CaptureQueriesContext(connection) as captured:
        tree_apply_ops_batch(requests)
    sql = [q["sql"] for q in captured.captured_queries]
    # After the commit the webhooks receiver (workers/webhooks.py) answers from the snapshot: no query.
    assert len(sql) == 4 and not any("memory_webhookendpoint" in q for q in sql), sql
    assert Subject.objects.filter(head_version=1).count() == 4


def test_orm_path_writes_the_same_rows(tenant, monkeypatch):
    """Other databases (SQLite in development) apply request by request; the rows are the same."""
    fast = [SubjectFactory(tenant=tenant) for _ in range(2)]
    slow = [SubjectFactory(tenant=tenant) for _ in range(2)]
    tree_apply_ops_batch([request(s, [Op.add(ROLE, "nurse"), Op.add(HEALTH, "x")]) for s in fast])
    monkeypatch.setattr(writes, "store", lambda: writes.ORM_STORE)
    tree_apply_ops_batch([request(s, [Op.add(ROLE, "nurse"), Op.add(HEALTH, "x")]) for s in slow])
    for f, s in zip(fast, slow, strict=True):
        assert stored(f) == stored(s)


def test_tree_at_head_is_what_the_batch_wrote(tenant):
    subject = SubjectFactory(tenant=tenant)
    tree_apply_ops_batch([request(subject, [Op.add(ROLE, "nurse")])])
    subject = Subject.objects.select_related("head").get(pk=subject.pk)
    assert selectors.tree_current(subject).to_dict() == {ROLE: "nurse"}
