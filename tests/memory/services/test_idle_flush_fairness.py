"""The idle flush serves the longest-idle subjects first (issue 15): with more idle subjects than
one sweep's limit, a subject that sorts late (by tenant name, external id or pk) is not starved by
busier subjects that go idle again before every sweep."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Chunk, Message
from memory.services.ingest import IncomingMessage, messages_ingest, subjects_flush_idle
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

LIMIT = 3


def say(tenant, external_id: str, n: int, *, minutes_ago: float):
    result = messages_ingest(
        tenant=tenant,
        external_id=external_id,
        messages=[IncomingMessage("user", f"message {n} of {external_id}", f"{external_id}-{n}")],
        enqueue=False,
    )
    Message.objects.filter(subject=result.subject, seq__gte=n + 1).update(
        created_at=timezone.now() - timedelta(minutes=minutes_ago)
    )
    return result.subject


def test_a_late_sorting_subject_is_flushed_before_busier_ones_that_went_idle_later():
    early = TenantFactory(name="aaa-busy")
    late = TenantFactory(name="zzz-quiet")
    quiet = say(late, "zz-quiet", 0, minutes_ago=120)  # idle the longest, sorts last
    busy = [say(early, f"aa-{i}", 0, minutes_ago=60) for i in range(LIMIT + 1)]
    assert Chunk.objects.count() == 0
    for sweep in range(1, 4):
        subjects_flush_idle(limit=LIMIT)
        if Chunk.objects.filter(subject=quiet).exists():
            break
        for subject in busy:  # the busy subjects talk again and go idle before the next sweep
            say(early, subject.external_id, sweep, minutes_ago=30 - sweep)
    assert Chunk.objects.filter(subject=quiet).exists(), "the quiet subject was starved"
    assert sweep == 1  # the longest-idle subject is flushed by the first sweep


def test_every_idle_subject_is_flushed_within_ceil_n_over_limit_sweeps():
    tenants = [TenantFactory(name=f"t{i}") for i in range(3)]
    subjects = [say(tenants[i % 3], f"s{i:02d}", 0, minutes_ago=200 - i) for i in range(3 * LIMIT + 1)]
    sweeps = 0
    while Chunk.objects.values("subject").distinct().count() < len(subjects):
        sweeps += 1
        assert sweeps <= 4
        assert subjects_flush_idle(limit=LIMIT) >= 1
    assert sweeps == 4
