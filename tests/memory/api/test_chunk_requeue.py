"""POST /v1/subjects/<id>/chunks/<chunk_id>/requeue: a failed chunk runs again with a fresh budget."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory.models import Chunk
from tests.factories import ChunkFactory, SubjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def failed(subject):
    return ChunkFactory(
        subject=subject, status=Chunk.Status.FAILED, attempts=5, last_error="listener timeout"
    )


def _requeue(client, external_id, chunk_id):
    return client.post(reverse("subject-chunk-requeue", args=[external_id, chunk_id]))


def test_a_failed_chunk_goes_back_to_pending_with_a_fresh_budget(
    failed, make_api_client, django_capture_on_commit_callbacks
):
    client, _ = make_api_client(failed.subject.tenant, scopes=["ingest"])
    with django_capture_on_commit_callbacks() as after_commit:  # not run: the chunk has no messages
        r = _requeue(client, failed.subject.external_id, failed.pk)
    assert r.status_code == 202, r.content
    assert r.json()["status"] == "pending" and r.json()["attempts"] == 0 and r.json()["chunk_id"] == failed.pk
    failed.refresh_from_db()
    assert (failed.status, failed.attempts) == (Chunk.Status.PENDING, 0)
    assert len(after_commit) == 1, "the dispatcher is asked for after commit (chunks_ready)"


def test_admin_requeue_resets_the_attempts_too(failed, admin_client):
    changelist = reverse("admin:memory_chunk_changelist")
    r = admin_client.post(changelist, {"action": "requeue_failed", "_selected_action": [failed.pk]})
    assert r.status_code == 302
    failed.refresh_from_db()
    assert (failed.status, failed.attempts) == (Chunk.Status.PENDING, 0)


@pytest.mark.parametrize("status", [Chunk.Status.PENDING, Chunk.Status.APPLIED])
def test_a_chunk_that_has_not_failed_is_a_409(subject, make_api_client, status):
    chunk = ChunkFactory(subject=subject, status=status, attempts=1)
    client, _ = make_api_client(subject.tenant, scopes=["ingest"])
    r = _requeue(client, subject.external_id, chunk.pk)
    assert r.status_code == 409 and r.json()["code"] == "chunk_not_failed"
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == (status, 1)


def test_another_subjects_or_tenants_chunk_is_a_404(failed, other_tenant, make_api_client):
    tenant = failed.subject.tenant
    sibling = SubjectFactory(tenant=tenant)
    client, _ = make_api_client(tenant, scopes=["ingest"])
    assert _requeue(client, sibling.external_id, failed.pk).status_code == 404
    assert _requeue(client, failed.subject.external_id, 2**63).status_code == 404
    SubjectFactory(tenant=other_tenant, external_id=failed.subject.external_id)
    foreign, _ = make_api_client(other_tenant, scopes=["ingest"])
    assert _requeue(foreign, failed.subject.external_id, failed.pk).status_code == 404
    failed.refresh_from_db()
    assert failed.status == Chunk.Status.FAILED


def test_the_ingest_scope_is_needed(failed, make_api_client):
    client, _ = make_api_client(failed.subject.tenant, scopes=["read", "write"])
    r = _requeue(client, failed.subject.external_id, failed.pk)
    assert r.status_code == 403 and "ingest" in r.json()["detail"]
