"""Django admin's delete of a Subject or a Tenant erases (issue 15): every path (the delete page,
the "delete selected" action) goes through ``subject_erase``, so a tombstone is written, the
``subject_erased`` signal (the vectors' purge) is sent after commit, and no row of the subject is
left, instead of Django's plain cascade."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from memory.models import ApiKey, Chunk, Message, OpRecord, Subject, Tenant, Tombstone, TreeVersion
from memory.signals import subject_erased
from tests.factories import (
    ApiKeyFactory,
    ChunkFactory,
    MessageFactory,
    SubjectFactory,
    TenantFactory,
    TreeVersionFactory,
)
from tests.memory.services.test_erasure import scan

pytestmark = pytest.mark.django_db

CANARY = "kumquat-canary-4417"
ROLE = "identity/occupation/current_role"


@pytest.fixture
def moderator(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def erased_signals():
    """Every ``subject_erased`` sent during the test, as (tenant_id, subject_id)."""
    seen: list[tuple[int, int]] = []

    def receiver(sender, tenant_id, subject_id, **kwargs):
        seen.append((tenant_id, subject_id))

    subject_erased.connect(receiver, dispatch_uid="test_admin_delete_erases")
    yield seen
    subject_erased.disconnect(dispatch_uid="test_admin_delete_erases")


def populated_subject(tenant, external_id: str) -> Subject:
    """A subject with messages, a chunk, a head version and op records, all holding the canary
    (rows made directly: this is about the delete paths, not the write path)."""
    subject = SubjectFactory(tenant=tenant, external_id=external_id)
    MessageFactory(subject=subject, seq=1, content=f"my code word is {CANARY}", idempotency_key="k1")
    chunk = ChunkFactory(subject=subject, start_seq=1, end_seq=1, status=Chunk.Status.APPLIED)
    version = TreeVersionFactory(
        subject=subject, number=1, snapshot={ROLE: f"keeper of {CANARY}"}, chunk=chunk
    )
    Subject.objects.filter(pk=subject.pk).update(head=version, head_version=1)
    OpRecord.objects.create(
        subject=subject,
        version=version,
        base_version=0,
        batch=uuid.uuid4(),
        op_type="ADD",
        path=ROLE,
        new_value=f"keeper of {CANARY}",
        status=OpRecord.Status.APPLIED,
        actor_kind=OpRecord.ActorKind.MODEL,
        chunk=chunk,
        source_text=f"my code word is {CANARY}",
    )
    subject.refresh_from_db()
    return subject


def assert_erased(subject: Subject) -> None:
    assert not Subject.objects.filter(pk=subject.pk).exists()
    for model in (Message, Chunk, TreeVersion, OpRecord):
        assert not model.objects.filter(subject_id=subject.pk).exists(), model.__name__


def test_delete_page_of_a_subject_erases_it(
    moderator, tenant, erased_signals, django_capture_on_commit_callbacks
):
    subject = populated_subject(tenant, "alice")
    url = reverse("admin:memory_subject_delete", args=[subject.pk])
    confirm = moderator.get(url)
    assert confirm.status_code == 200
    assert b"Erase" in confirm.content or b"erased" in confirm.content
    assert b"permission to delete" not in confirm.content  # versions/chunks need no admin delete right
    with django_capture_on_commit_callbacks(execute=True):
        response = moderator.post(url, {"post": "yes"})
    assert response.status_code == 302, response.content[:500]
    assert_erased(subject)
    tombstone = Tombstone.objects.get(tenant=tenant)
    assert tombstone.external_id_hash == Tombstone.hash_external_id(tenant.pk, "alice")
    assert tombstone.erased_by == "admin:moderator" and tombstone.counts["messages"] == 1
    assert erased_signals == [(tenant.pk, subject.pk)]
    assert scan(CANARY) == []  # not even in the admin's deletion log


def test_a_subject_with_only_messages_is_erased_not_cascaded(
    moderator, tenant, erased_signals, django_capture_on_commit_callbacks
):
    """Before any chunk exists Django's own delete went through (nothing it may not delete):
    the rows went by cascade, with no tombstone and no ``subject_erased`` (the vectors stayed)."""
    subject = SubjectFactory(tenant=tenant, external_id="fresh")
    MessageFactory(subject=subject, seq=1, content=f"first words {CANARY}", idempotency_key="k1")
    with django_capture_on_commit_callbacks(execute=True):
        response = moderator.post(reverse("admin:memory_subject_delete", args=[subject.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert_erased(subject)
    assert Tombstone.objects.filter(tenant=tenant).count() == 1
    assert erased_signals == [(tenant.pk, subject.pk)]


def test_delete_selected_action_erases_each_subject(
    moderator, tenant, erased_signals, django_capture_on_commit_callbacks
):
    subjects = [populated_subject(tenant, f"s{i}") for i in range(2)]
    keep = populated_subject(tenant, "keep")
    data = {"action": "delete_selected", ACTION_CHECKBOX_NAME: [s.pk for s in subjects]}
    changelist = reverse("admin:memory_subject_changelist")
    confirm = moderator.post(changelist, data)
    assert confirm.status_code == 200 and b"permission to delete" not in confirm.content
    with django_capture_on_commit_callbacks(execute=True):
        response = moderator.post(changelist, {**data, "post": "yes"})
    assert response.status_code == 302
    for subject in subjects:
        assert_erased(subject)
    assert Tombstone.objects.filter(tenant=tenant).count() == 2
    assert sorted(erased_signals) == sorted((tenant.pk, s.pk) for s in subjects)
    assert Subject.objects.filter(pk=keep.pk).exists()


def test_deleting_a_tenant_erases_each_of_its_subjects_first(
    moderator, erased_signals, django_capture_on_commit_callbacks
):
    doomed, other = TenantFactory(name="doomed"), TenantFactory(name="other")
    subjects = [populated_subject(doomed, f"d{i}") for i in range(2)]
    ApiKeyFactory(tenant=doomed)
    survivor = populated_subject(other, "o1")
    url = reverse("admin:memory_tenant_delete", args=[doomed.pk])
    confirm = moderator.get(url)
    assert confirm.status_code == 200 and b"permission to delete" not in confirm.content
    with django_capture_on_commit_callbacks(execute=True):
        response = moderator.post(url, {"post": "yes"})
    assert response.status_code == 302, response.content[:500]
    assert not Tenant.objects.filter(pk=doomed.pk).exists()
    assert not ApiKey.objects.filter(tenant_id=doomed.pk).exists()
    for subject in subjects:
        assert_erased(subject)
    assert sorted(erased_signals) == sorted((doomed.pk, s.pk) for s in subjects)
    assert Subject.objects.filter(pk=survivor.pk).exists()
    assert scan(CANARY) != []  # the other tenant's subject still holds its own copy


def test_delete_tenant_action_erases_its_subjects(
    moderator, erased_signals, django_capture_on_commit_callbacks
):
    doomed = TenantFactory(name="doomed-bulk")
    subject = populated_subject(doomed, "b1")
    data = {"action": "delete_selected", ACTION_CHECKBOX_NAME: [doomed.pk], "post": "yes"}
    with django_capture_on_commit_callbacks(execute=True):
        response = moderator.post(reverse("admin:memory_tenant_changelist"), data)
    assert response.status_code == 302
    assert not Tenant.objects.filter(pk=doomed.pk).exists()
    assert_erased(subject)
    assert erased_signals == [(doomed.pk, subject.pk)]


def test_admin_erasure_is_refused_while_the_vector_purge_cannot_be_queued(
    moderator, tenant, settings, erased_signals
):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"
    settings.PERSONATREE = {**settings.PERSONATREE, "EVIDENCE_INDEXING": True, "READYZ_TIMEOUT_S": 0.5}
    subject = populated_subject(tenant, "held")
    response = moderator.post(
        reverse("admin:memory_subject_delete", args=[subject.pk]), {"post": "yes"}, follow=True
    )
    assert b"Nothing was erased" in response.content
    data = {"action": "delete_selected", ACTION_CHECKBOX_NAME: [subject.pk], "post": "yes"}
    response = moderator.post(reverse("admin:memory_subject_changelist"), data, follow=True)
    assert b"Nothing was erased" in response.content
    assert Subject.objects.filter(pk=subject.pk).exists() and not Tombstone.objects.exists()
    assert erased_signals == []
