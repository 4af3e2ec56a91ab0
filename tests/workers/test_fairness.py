"""Per-tenant fairness of the claim: one tenant's backlog does not delay another tenant's chunk.

Both claim paths: PostgreSQL's one statement (``FOR UPDATE SKIP LOCKED``) and the compare-and-set
path SQLite uses (forced here on Postgres by hiding SKIP LOCKED). Stand-in engine, not a model.
"""

from __future__ import annotations

import pytest
from django.db import connection

from memory.models import Chunk, TreeVersion
from tests.workers.helpers import WatchingClient, drain, ingest_pairs, standin_client
from workers.dispatcher import dispatch_round
from workers.ordering import chunks_claim

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["skip_locked", "cas"])
def claim_path(request, monkeypatch):
    if request.param == "cas":
        monkeypatch.setattr(connection.features, "has_select_for_update_skip_locked", False)
    return request.param


def _tenant_of(claim) -> int:
    return Chunk.objects.select_related("subject").get(pk=claim.chunk_id).subject.tenant_id


def test_a_small_tenant_is_applied_in_the_first_round_despite_a_200_chunk_backlog(
    tenant, other_tenant, claim_path
):
    for i in range(20):  # 20 subjects x 10 chunks, all older than the small tenant's chunk
        ingest_pairs(tenant, f"big{i}", 30)
    small = ingest_pairs(other_tenant, "small", 3).subject
    assert Chunk.objects.filter(subject__tenant=tenant, status="pending").count() == 200
    [small_chunk] = Chunk.objects.filter(subject=small)
    rounds = 0
    while Chunk.objects.get(pk=small_chunk.pk).status != "applied":
        report = dispatch_round(client=standin_client(), max_jobs=16, max_wait_ms=0, index=False)
        rounds += 1
        assert report.claimed and rounds < 100
    assert rounds <= 1
    assert TreeVersion.objects.filter(subject=small).count() == 1


def test_every_tenant_gets_a_claim_before_any_tenant_gets_a_second(tenant, other_tenant, claim_path):
    from tests.factories import TenantFactory

    third = TenantFactory()
    for i in range(6):
        ingest_pairs(tenant, f"a{i}", 3)
        ingest_pairs(other_tenant, f"b{i}", 3)
    ingest_pairs(third, "c0", 3)
    claims = chunks_claim(limit=3)
    assert sorted(_tenant_of(c) for c in claims) == sorted([tenant.pk, other_tenant.pk, third.pk])
    # within a tenant the oldest ready chunk goes first
    mine = [c for c in claims if _tenant_of(c) == tenant.pk]
    assert mine[0].chunk_id == Chunk.objects.filter(subject__tenant=tenant).order_by("id").first().pk
    more = chunks_claim(limit=4, exclude_subjects={c.subject_id for c in claims})
    assert sorted(_tenant_of(c) for c in more) == sorted(
        [tenant.pk, tenant.pk, other_tenant.pk, other_tenant.pk]
    )


def test_fair_claiming_keeps_per_subject_order(tenant, other_tenant, claim_path):
    subjects = [ingest_pairs(tenant, f"o{i}", 12).subject for i in range(4)]
    subjects.append(ingest_pairs(other_tenant, "o-small", 6).subject)
    client = WatchingClient()
    report = drain(client=client, max_jobs=3, max_wait_ms=0, index=False)
    assert report.applied == 18 and client.violations == []
    for subject in subjects:
        starts = list(
            TreeVersion.objects.filter(subject=subject, chunk__isnull=False)
            .order_by("number")
            .values_list("chunk__start_seq", flat=True)
        )
        assert starts == sorted(starts) and len(starts) == Chunk.objects.filter(subject=subject).count()
