"""The review page and the queue (issue 28) through the Django test client: deciding one held op
(approve, edit & approve into another leaf, decline with a reason) through the write service,
the next item of the same filter, a stale page refused without loss, the queue's filters and
the per-tenant counts on the admin index."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory import selectors
from memory.engine.ops import Op
from memory.models import Message, Subject
from memory.services.tree import Actor, Source, leaf_edit, tree_apply_ops
from tests.factories import ChunkFactory, SubjectFactory, TenantFactory
from tests.memory.admin.test_access import staff

pytestmark = pytest.mark.django_db

ALLERGY = "body/health/allergies"
CONDITIONS = "body/health/conditions"
ROLE = "identity/occupation/current_role"
SENTENCE = "I have type 1 diabetes and they take insulin."


def held_op(subject, path=ALLERGY, value="Has type 1 diabetes", sentence=SENTENCE):
    subject.refresh_from_db()
    start = subject.messages.count() + 1
    Message.objects.bulk_create(
        [
            Message(subject=subject, seq=start, role="user", content="I work as a nurse."),
            Message(subject=subject, seq=start + 1, role="assistant", content="Nice."),
            Message(subject=subject, seq=start + 2, role="user", content=f"Also, {sentence} Every day."),
        ]
    )
    chunk = ChunkFactory(subject=subject, start_seq=start, end_seq=start + 2)
    outcome = tree_apply_ops(
        subject=subject, base_version=subject.head_version,
        ops=[Op(type="ADD", path=path, value=value, source=sentence)],
        actor=Actor.for_model(model_id="m1"), source=Source(chunk.pk, chunk.start_seq, chunk.end_seq),
    )  # fmt: skip
    (record,) = outcome.pending_review
    return record


def head(subject):
    return Subject.objects.select_related("head").get(pk=subject.pk)


@pytest.fixture
def root(client, admin_user):
    client.force_login(admin_user)
    return client


def page_of(record):
    return reverse("admin:memory_reviewitem_change", args=[record.pk])


def decide(client, record, **data):
    subject = head(record.subject)
    form = {"base_version": subject.head_version, **data}
    return client.post(reverse("admin:memory_reviewitem_decide", args=[record.pk]), form)


def test_the_review_page_shows_what_a_decision_needs(root):
    subject = SubjectFactory(external_id="ana")
    leaf_edit(subject=subject, path=ROLE, value="nurse", actor=Actor.system("seed"), base_version=0)
    record = held_op(subject)
    html = root.get(page_of(record)).content.decode()
    assert ALLERGY in html and "Allergies" in html and "special" in html  # leaf, description, tier
    assert f"<mark>{SENTENCE}</mark>" in html  # the user's sentence marked in its message
    assert "I work as a nurse." in html  # a turn around it
    assert "special tier" in html  # why it was held, in words
    assert 'id="pt-approve"' in html and 'id="pt-edit"' in html and 'id="pt-decline"' in html
    assert f'<option value="{CONDITIONS}">' in html  # the leaf picker offers the schema's leaves


def test_edit_and_approve_moves_the_value_to_another_leaf_and_opens_the_next(root):
    subject = SubjectFactory(external_id="ana")
    first, second = (
        held_op(subject),
        held_op(subject, path=CONDITIONS, value="asthma", sentence="I have asthma."),
    )
    response = decide(
        root, first, decision="edit", path=CONDITIONS, value="Has type 1 diabetes, takes insulin"
    )
    # CONDITIONS is now filled, so the second op (an ADD there) would no longer fit: that is its page's business.
    assert response.status_code == 302 and response["Location"].startswith(page_of(second))
    first.refresh_from_db()
    assert (first.status, first.op_type, first.path) == ("approved", "ADD", CONDITIONS)
    assert "corrected by moderator" in first.detail and ALLERGY in first.detail
    tree = selectors.tree_current(head(subject))
    assert tree[CONDITIONS] == "Has type 1 diabetes, takes insulin" and ALLERGY not in tree


def test_a_stale_page_is_refused_and_loses_nothing(root):
    subject = SubjectFactory(external_id="ana")
    record = held_op(subject)
    stale = head(subject).head_version
    leaf_edit(subject=head(subject), path=ROLE, value="surgeon", actor=Actor.system("x"), base_version=stale)
    response = root.post(
        reverse("admin:memory_reviewitem_decide", args=[record.pk]),
        {"decision": "edit", "base_version": stale, "path": CONDITIONS, "value": "my corrected value"},
    )
    html = response.content.decode()
    assert response.status_code == 200 and "The tree changed meanwhile" in html
    assert "my corrected value" in html  # the moderator's edit is still in the form
    record.refresh_from_db()
    assert record.status == "pending_review" and record.path == ALLERGY


def test_a_gate_refusal_keeps_the_item_waiting(root):
    subject = SubjectFactory(external_id="ana")
    record = held_op(subject)
    response = decide(root, record, decision="edit", path="body/health/nope", value="x")
    assert response.status_code == 200 and "UNKNOWN_PATH" in response.content.decode()
    record.refresh_from_db()
    assert (record.status, record.path) == ("pending_review", ALLERGY)


def test_decline_needs_a_reason_then_the_queue_follows_the_filter(root):
    a, b = TenantFactory(name="alpha"), TenantFactory(name="beta")
    ana, bob = SubjectFactory(tenant=a, external_id="ana"), SubjectFactory(tenant=b, external_id="bob")
    first, other, last = (
        held_op(ana),
        held_op(bob),
        held_op(ana, path=CONDITIONS, value="asthma", sentence="I have asthma."),
    )
    assert decide(root, first, decision="decline", note=" ").status_code == 200
    first.refresh_from_db()
    assert first.status == "pending_review"
    filters = f"subject__tenant__id__exact={a.pk}"
    response = decide(root, first, decision="decline", note="not said", _changelist_filters=filters)
    assert response.status_code == 302 and response["Location"].startswith(page_of(last))  # bob's skipped
    first.refresh_from_db()
    assert (first.status, first.decision_note) == ("declined", "not said")
    # Approving the last one of the filter goes back to the filtered queue.
    response = decide(root, last, decision="approve", _changelist_filters=filters)
    queue = reverse("admin:memory_reviewitem_changelist")
    assert response["Location"] == f"{queue}?{filters}"  # nothing of alpha left: bob's is not offered
    other.refresh_from_db()
    assert other.status == "pending_review"


def test_the_queue_filters_and_the_index_counts(root):
    a, b = TenantFactory(name="alpha"), TenantFactory(name="beta")
    ana, bob = SubjectFactory(tenant=a, external_id="ana"), SubjectFactory(tenant=b, external_id="bob")
    held_op(ana), held_op(ana, path=CONDITIONS, value="asthma", sentence="I have asthma."), held_op(bob)
    queue = reverse("admin:memory_reviewitem_changelist")
    html = root.get(queue).content.decode()
    assert html.index("ana") < html.index("bob")  # oldest first
    assert "special-tier leaf" in html and "Has type 1 diabetes" in html
    only_b = root.get(queue, {"subject__tenant__id__exact": b.pk}).content.decode()
    assert "bob" in only_b and "ana" not in only_b

    def rows(**query):
        return root.get(queue, query).content.decode().count('class="field-subject_id_shown"')

    assert rows() == 3 and rows(tier="special") == 3 and rows(tier="normal") == 0
    assert rows(reason="special") == 3 and rows(reason="mass") == 0
    assert rows(model_id="m1") == 3 and rows(model_id="other") == 0
    index = root.get(reverse("admin:index")).content.decode()
    assert "Waiting for review" in index
    assert index.index("alpha") < index.index("beta")  # most waiting first: alpha 2, beta 1
    log = root.get(
        reverse("admin:memory_oprecord_changelist"), {"subject__id__exact": ana.pk, "path__exact": CONDITIONS}
    )
    assert log.status_code == 200 and "asthma" in log.content.decode()


def test_staff_decide_only_their_tenants_and_not_special_without_the_permission(client, django_user_model):
    a, b = TenantFactory(name="alpha"), TenantFactory(name="beta")
    ana, bob = SubjectFactory(tenant=a, external_id="ana"), SubjectFactory(tenant=b, external_id="bob")
    mine, theirs = held_op(ana), held_op(bob)
    client.force_login(staff(django_user_model, "ada", a))
    assert client.get(page_of(theirs)).status_code == 404
    assert decide(client, theirs, decision="approve").status_code == 404
    index = client.get(reverse("admin:index")).content.decode()
    assert "alpha" in index and "beta" not in index
    html = client.get(page_of(mine)).content.decode()
    assert "diabetes" not in html and "•••• (special tier)" in html and 'id="pt-approve"' not in html
    assert decide(client, mine, decision="approve").status_code == 403
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.status == theirs.status == "pending_review"


def test_an_update_shows_a_word_diff(root):
    subject = SubjectFactory(external_id="ana")
    leaf_edit(
        subject=subject, path=CONDITIONS, value="mild asthma", actor=Actor.system("seed"), base_version=0
    )
    subject.refresh_from_db()
    chunk = ChunkFactory(subject=subject)
    (record,) = tree_apply_ops(
        subject=head(subject), base_version=1, ops=[Op.update(CONDITIONS, "asthma and diabetes")],
        actor=Actor.for_model(model_id="m1"), source=Source(chunk.pk, chunk.start_seq, chunk.end_seq),
    ).pending_review  # fmt: skip
    html = root.get(page_of(record)).content.decode()
    assert "<del>mild</del> asthma <ins>and diabetes</ins>" in html
