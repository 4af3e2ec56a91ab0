"""Two writers racing on one subject, on real threads and real transactions."""

import threading
import time

import pytest
from django.db import connection

from memory import selectors
from memory.engine.ops import Op
from memory.models import OpRecord, Subject, TreeVersion
from memory.services import VersionConflict
from memory.services.tree import Actor, Source, tree_apply_ops
from tests.factories import ChunkFactory, SubjectFactory

MODEL = Actor.for_model(model_id="race")
# Row locks between threads: SQLite serialises writers by locking the whole file instead.
pytestmark = pytest.mark.postgres


@pytest.mark.django_db(transaction=True)
def test_racing_writers_one_wins_loser_retries_on_top():
    subject = SubjectFactory()
    chunks = [ChunkFactory(subject=subject), ChunkFactory(subject=subject)]
    ops = [
        [Op.add("identity/occupation/current_role", "nurse")],
        [Op.add("identity/location/current_city", "Lyon")],
    ]
    barrier = threading.Barrier(2)
    results: dict[int, list] = {0: [], 1: []}

    def writer(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            base = 0  # both read the same head before writing
            for _attempt in range(5):
                try:
                    out = tree_apply_ops(
                        subject=Subject.objects.get(pk=subject.pk),
                        base_version=base,
                        ops=ops[i],
                        actor=MODEL,
                        source=Source(chunks[i].pk),
                    )
                    results[i].append(("ok", out.version.number))
                    return
                except VersionConflict as exc:
                    results[i].append(("conflict", exc.current_version))
                    base = exc.current_version
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)

    outcomes = sorted(results.values())
    # One writer landed first (v1); the other saw a conflict naming v1, retried and landed on top (v2).
    assert outcomes == [[("conflict", 1), ("ok", 2)], [("ok", 1)]]
    subject.refresh_from_db()
    assert subject.head_version == 2
    assert selectors.tree_current(Subject.objects.select_related("head").get(pk=subject.pk)).to_dict() == {
        "identity/occupation/current_role": "nurse",
        "identity/location/current_city": "Lyon",
    }
    assert TreeVersion.objects.filter(subject=subject).count() == 2
    assert OpRecord.objects.filter(subject=subject, status="applied").count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["single", "batch"])
@pytest.mark.parametrize("ops", [[Op.no_op()], [Op.add("identity/occupation/current_role", "nurse")]])
def test_one_chunk_applied_by_two_holders_at_once_lands_once(path, ops):
    """An expired lease: two holders of one chunk apply at the same time. The second waits for the
    subject lock while the first commits; its lock query's read of the chunk status predates that
    commit, so the write statement checks again and the second gets the stored outcome. (A result
    that changes nothing moves no head, so the version check alone would not catch it.)"""
    from django.db import transaction

    from memory.models import Chunk
    from memory.services.tree import ApplyRequest, tree_apply_ops_batch

    subject = SubjectFactory()
    chunk = ChunkFactory(subject=subject)
    first_locked = threading.Event()
    outcomes = {}

    def first() -> None:
        try:
            with transaction.atomic():
                tree_apply_ops(
                    subject=Subject(pk=subject.pk),
                    base_version=0,
                    ops=ops,
                    actor=MODEL,
                    source=Source(chunk.pk),
                )
                first_locked.set()
                time.sleep(0.5)  # the second holder queues on the subject lock meanwhile
        finally:
            connection.close()

    def second() -> None:
        try:
            first_locked.wait(10)
            if path == "single":
                outcomes["second"] = tree_apply_ops(
                    subject=Subject(pk=subject.pk),
                    base_version=0,
                    ops=ops,
                    actor=MODEL,
                    source=Source(chunk.pk),
                )
            else:
                request = ApplyRequest(subject.pk, 0, ops, MODEL, Source(chunk.pk))
                (outcomes["second"],) = tree_apply_ops_batch([request])
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcomes["second"] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    second_outcome = outcomes["second"]
    if ops[0].type == "NO_OP":
        assert not second_outcome.created and len(second_outcome.records) == 1, second_outcome
    else:  # the head moved: a conflict (the chunk is applied; releasing it is fenced off)
        assert isinstance(second_outcome, VersionConflict), second_outcome
    assert OpRecord.objects.filter(chunk=chunk).count() == len(ops)
    assert TreeVersion.objects.filter(subject=subject).count() == (0 if ops[0].type == "NO_OP" else 1)
    assert Chunk.objects.get(pk=chunk.pk).status == "applied"
