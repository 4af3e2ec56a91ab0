"""End-to-end moderation flow through the admin views (Django test client, real Postgres)."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from memory import selectors
from memory.engine.ops import Op
from memory.models import Chunk, OpRecord, Subject
from memory.services.tree import Actor
from tests.factories import ChunkFactory, SubjectFactory, model_apply

pytestmark = pytest.mark.django_db

ROLE = "identity/occupation/current_role"
CITY = "identity/location/current_city"
HEALTH = "body/health/conditions"
ALLERGY = "body/health/allergies"
MODEL = Actor.for_model(model_id="gemma-270m", prompt_version="p3")


def model_chunk(subject, ops):
    chunk = ChunkFactory(subject=subject)
    subject.refresh_from_db()
    return model_apply(subject, ops, actor=MODEL, chunk=chunk)


def head(subject):
    return Subject.objects.select_related("head").get(pk=subject.pk)


@pytest.fixture
def moderator(client, admin_user):
    response = client.post(
        reverse("admin:login"), {"username": "moderator", "password": "pw-moderator", "next": "/admin/"}
    )
    assert response.status_code == 302
    return client


def test_moderation_flow(moderator):
    subject = SubjectFactory(external_id="alice")
    model_chunk(subject, [Op.add(ROLE, "nurse"), Op.add(CITY, "Lyon")])  # v1
    held = model_chunk(subject, [Op.add(HEALTH, "asthma"), Op.add(ALLERGY, "cats")]).pending_review
    assert len(held) == 2

    # Find the subject by external id and view its tree.
    changelist = moderator.get(reverse("admin:memory_subject_changelist"), {"q": "alice"})
    assert changelist.status_code == 200 and b"alice" in changelist.content
    page = moderator.get(reverse("admin:memory_subject_change", args=[subject.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "<details" in html and "<summary>identity" in html and "nurse" in html and "Lyon" in html
    assert "gemma-270m" in html and "last changed in v1" in html and "Review queue (2)" in html

    # Inline edit goes through the service (and the gate).
    leaf_url = reverse("admin:memory_subject_leaf", args=[subject.pk])
    response = moderator.post(
        leaf_url, {"path": ROLE, "value": "head nurse", "base_version": 1, "action": "save"}
    )
    assert response.status_code == 302
    assert selectors.tree_current(head(subject))[ROLE] == "head nurse"
    edit = OpRecord.objects.get(subject=subject, path=ROLE, new_value="head nurse")
    assert edit.actor_kind == "admin" and edit.actor_name == "moderator" and edit.version.number == 2
    # A stale form is refused, an over-budget value is rejected with its reason.
    stale = moderator.post(
        leaf_url, {"path": CITY, "value": "Paris", "base_version": 1, "action": "save"}, follow=True
    )
    assert "changed meanwhile" in stale.content.decode()
    over = moderator.post(
        leaf_url, {"path": CITY, "value": "x" * 999, "base_version": 2, "action": "save"}, follow=True
    )
    assert "OVER_BUDGET" in over.content.decode()
    assert selectors.tree_current(head(subject))[CITY] == "Lyon"

    # Review queue: approve one op, decline the other with a reason.
    queue_url = reverse("admin:memory_reviewitem_changelist")
    queue = moderator.get(queue_url)
    assert queue.status_code == 200 and "asthma" in queue.content.decode()
    asthma = next(r for r in held if r.path == HEALTH)
    cats = next(r for r in held if r.path == ALLERGY)
    response = moderator.post(queue_url, {"action": "approve_ops", ACTION_CHECKBOX_NAME: [asthma.pk]})
    assert response.status_code == 302
    assert OpRecord.objects.get(pk=asthma.pk).status == "approved"
    assert selectors.tree_current(head(subject))[HEALTH] == "asthma"
    confirm = moderator.post(queue_url, {"action": "decline_ops", ACTION_CHECKBOX_NAME: [cats.pk]})
    assert confirm.status_code == 200 and "Why are these ops declined" in confirm.content.decode()
    response = moderator.post(
        queue_url,
        {
            "action": "decline_ops",
            ACTION_CHECKBOX_NAME: [cats.pk],
            "confirm_decline": "1",
            "note": "not said by user",
        },
    )
    assert response.status_code == 302
    cats.refresh_from_db()
    assert (cats.status, cats.decision_note, cats.decided_by.username) == (
        "declined",
        "not said by user",
        "moderator",
    )

    # Op log filters.
    log = moderator.get(reverse("admin:memory_oprecord_changelist"), {"status__exact": "declined"})
    assert log.status_code == 200 and ALLERGY in log.content.decode()
    log = moderator.get(reverse("admin:memory_oprecord_changelist"), {"subject__id__exact": subject.pk})
    assert log.status_code == 200

    # History with a diff, then revert to v1 through the confirmation page.
    current = head(subject).head_version
    versions = moderator.get(
        reverse("admin:memory_subject_versions", args=[subject.pk]), {"a": 1, "b": current}
    )
    text = versions.content.decode()
    assert versions.status_code == 200 and "head nurse" in text and "asthma" in text
    revert_url = reverse("admin:memory_subject_revert", args=[subject.pk, 1])
    confirm = moderator.get(revert_url)
    assert confirm.status_code == 200 and "Yes, revert to v1" in confirm.content.decode()
    assert head(subject).head_version == current  # GET changes nothing
    response = moderator.post(revert_url, {"base_version": current})
    assert response.status_code == 302
    after = head(subject)
    assert after.head_version == current + 1 and after.head.created_by == "revert"
    assert selectors.tree_current(after).to_dict() == {ROLE: "nurse", CITY: "Lyon"}


def test_failed_chunks_can_be_requeued(moderator):
    chunk = ChunkFactory(status=Chunk.Status.FAILED, last_error="listener timeout after 300 s", attempts=5)
    page = moderator.get(reverse("admin:memory_chunk_changelist"), {"status__exact": "failed"})
    assert "listener timeout" in page.content.decode()
    response = moderator.post(
        reverse("admin:memory_chunk_changelist"),
        {"action": "requeue_failed", ACTION_CHECKBOX_NAME: [chunk.pk]},
    )
    assert response.status_code == 302
    chunk.refresh_from_db()
    assert chunk.status != Chunk.Status.FAILED


def test_admin_needs_login(client):
    subject = SubjectFactory()
    response = client.get(reverse("admin:memory_subject_change", args=[subject.pk]))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
