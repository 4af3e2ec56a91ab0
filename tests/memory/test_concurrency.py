"""Two writers racing on one subject, on real threads and real transactions."""

import threading

import pytest
from django.db import connection

from memory import selectors
from memory.engine.ops import Op
from memory.models import OpRecord, Subject, TreeVersion
from memory.services import VersionConflict
from memory.services.tree import Actor, Source, tree_apply_ops
from tests.factories import ChunkFactory, SubjectFactory

MODEL = Actor.for_model(model_id="race")


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
