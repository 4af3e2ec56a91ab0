"""What the admin shows to which staff (issue 15): per-tenant grants and the special tier.

Two tenants, two staff users: ``ada`` is granted tenant A only and has the usual view/change/review
permissions but not ``memory.view_special_tier``; ``bea`` is granted tenant B and has that
permission too. Real Postgres, Django test client, the real admin URLs.
"""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.urls import reverse

from memory import selectors
from memory.engine.ops import Op
from memory.models import OpRecord, Subject, TenantStaff, TreeVersion
from memory.services.tree import Actor, Source, tree_apply_ops
from tests.factories import ChunkFactory, SubjectFactory, TenantFactory

pytestmark = pytest.mark.django_db

ROLE = "identity/occupation/current_role"
RELIGION = "identity/beliefs/religion"  # special tier
HEALTH = "body/health/conditions"  # special tier
SECRET_FAITH = "devout Zoroastrian"
SECRET_HEALTH = "type 1 diabetes since 2009"
SECRET_SENTENCE = "I have had type 1 diabetes since 2009."
MODEL = Actor.for_model(model_id="m")

STAFF_PERMS = [
    "view_tenant", "view_subject", "change_subject", "delete_subject", "view_treeversion",
    "view_oprecord", "change_oprecord", "view_reviewitem", "change_reviewitem", "view_chunk",
    "view_apikey", "view_tombstone",
]  # fmt: skip


def staff(django_user_model, name, tenant, *, special=False):
    user = django_user_model.objects.create_user(name, password=f"pw-{name}", is_staff=True)
    codenames = STAFF_PERMS + (["view_special_tier"] if special else [])
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="memory", codename__in=codenames)
    )
    TenantStaff.objects.create(user=user, tenant=tenant)
    return user


def memory_of(tenant, external_id):
    """A subject with an ordinary leaf, a special-tier leaf (by the system) and a held special-tier
    op from the model, whose source sentence is the user's."""
    subject = SubjectFactory(tenant=tenant, external_id=external_id)
    tree_apply_ops(subject=subject, base_version=0, ops=[Op.add(ROLE, "nurse"), Op.add(RELIGION, SECRET_FAITH)],
                   actor=Actor.system("seed"))  # fmt: skip
    chunk = ChunkFactory(subject=subject)
    subject.refresh_from_db()
    held = tree_apply_ops(
        subject=subject, base_version=1, ops=[Op(type="ADD", path=HEALTH, value=SECRET_HEALTH, source=SECRET_SENTENCE)],
        actor=MODEL, source=Source(chunk.pk, chunk.start_seq, chunk.end_seq),
    ).pending_review  # fmt: skip
    assert len(held) == 1
    return Subject.objects.select_related("head").get(pk=subject.pk)


@pytest.fixture
def world(django_user_model):
    a, b = TenantFactory(name="tenant-a"), TenantFactory(name="tenant-b")
    return {
        "a": a,
        "b": b,
        "alice": memory_of(a, "alice-of-a"),
        "bob": memory_of(b, "bob-of-b"),
        "ada": staff(django_user_model, "ada", a),
        "bea": staff(django_user_model, "bea", b, special=True),
    }


def logged_in(client, user):
    client.force_login(user)
    return client


def page(client, name, *args, query=None):
    response = client.get(reverse(name, args=args), query or {})
    return response.status_code, response.content.decode()


def test_staff_see_only_the_tenants_they_are_granted(client, world):
    ada = logged_in(client, world["ada"])
    bob = world["bob"]
    for name in (
        "admin:memory_subject_changelist",
        "admin:memory_tenant_changelist",
        "admin:memory_oprecord_changelist",
        "admin:memory_reviewitem_changelist",
        "admin:memory_treeversion_changelist",
        "admin:memory_chunk_changelist",
    ):
        status, html = page(ada, name)
        assert status == 200, name
        assert "bob-of-b" not in html and "tenant-b" not in html, name  # rows and the tenant filter
    status, html = page(ada, "admin:memory_subject_changelist")
    assert "alice-of-a" in html and "tenant-a" in html

    # Every page of another tenant's subject is a 404 (as if it did not exist), the change of a leaf too.
    version = TreeVersion.objects.filter(subject=bob).first()
    record = OpRecord.objects.filter(subject=bob).first()
    for name, args in (
        ("admin:memory_subject_change", [bob.pk]),
        ("admin:memory_subject_versions", [bob.pk]),
        ("admin:memory_subject_revert", [bob.pk, 0]),
        ("admin:memory_subject_delete", [bob.pk]),
        ("admin:memory_treeversion_change", [version.pk]),
        ("admin:memory_oprecord_change", [record.pk]),
        ("admin:memory_tenant_change", [world["b"].pk]),
    ):
        status, _ = page(ada, name, *args)
        assert status in (302, 404), (name, status)  # the admin redirects a missing object to its index
        if status == 302:
            assert "bob-of-b" not in ada.get(reverse(name, args=args), follow=True).content.decode()
    leaf = ada.post(reverse("admin:memory_subject_leaf", args=[bob.pk]),
                    {"path": ROLE, "value": "pirate", "base_version": bob.head_version, "action": "save"})  # fmt: skip
    assert leaf.status_code == 404
    assert selectors.tree_current(Subject.objects.select_related("head").get(pk=bob.pk))[ROLE] == "nurse"
    # Actions act on the visible rows only: approving bob's held op through ada's list does nothing.
    held = OpRecord.objects.get(subject=bob, status="pending_review")
    ada.post(reverse("admin:memory_reviewitem_changelist"),
             {"action": "approve_ops", ACTION_CHECKBOX_NAME: [held.pk]})  # fmt: skip
    held.refresh_from_db()
    assert held.status == "pending_review"


def test_a_staff_user_without_grants_sees_no_tenant(client, world, django_user_model):
    nobody = django_user_model.objects.create_user("nobody", password="pw", is_staff=True)
    nobody.user_permissions.set(
        Permission.objects.filter(content_type__app_label="memory", codename__in=STAFF_PERMS)
    )
    status, html = page(logged_in(client, nobody), "admin:memory_subject_changelist")
    assert status == 200 and "alice-of-a" not in html and "bob-of-b" not in html


def test_special_tier_values_are_masked_without_the_permission(client, world):
    alice = world["alice"]
    ada = logged_in(client, world["ada"])
    secrets = (SECRET_FAITH, SECRET_HEALTH, "Zoroastrian", "diabetes", SECRET_SENTENCE)

    status, tree = page(ada, "admin:memory_subject_change", alice.pk)
    assert status == 200 and "nurse" in tree and "•••• (special tier)" in tree
    assert f'value="{RELIGION}"' not in tree  # no edit form for a masked leaf, nor in "fill an empty leaf"
    assert f'<option value="{HEALTH}">' not in tree
    _, versions = page(ada, "admin:memory_subject_versions", alice.pk, query={"a": 0, "b": 1})
    assert RELIGION in versions and "nurse" in versions  # the change is listed, its value masked
    _, revert = page(ada, "admin:memory_subject_revert", alice.pk, 0)
    _, oplog = page(ada, "admin:memory_oprecord_changelist")
    _, queue = page(ada, "admin:memory_reviewitem_changelist")
    held = OpRecord.objects.get(subject=alice, status="pending_review")
    _, record = page(ada, "admin:memory_oprecord_change", held.pk)
    seed = OpRecord.objects.get(subject=alice, path=RELIGION)
    _, seed_record = page(ada, "admin:memory_oprecord_change", seed.pk)
    version = TreeVersion.objects.get(subject=alice, number=1)
    _, snapshot = page(ada, "admin:memory_treeversion_change", version.pk)
    for name, html in (("tree", tree), ("versions", versions), ("revert", revert), ("op log", oplog),
                       ("queue", queue), ("record", record), ("seed record", seed_record), ("snapshot", snapshot)):  # fmt: skip
        assert not [s for s in secrets if s in html], name
        assert "•••• (special tier)" in html, name
    assert "nurse" in snapshot and HEALTH in record

    # Searching the op log by the user's words would tell who said what: not offered.
    _, found = page(ada, "admin:memory_oprecord_changelist", query={"q": "diabetes"})
    assert HEALTH not in found

    # Editing a special leaf blind is refused; deciding a special-tier op too.
    edit = ada.post(reverse("admin:memory_subject_leaf", args=[alice.pk]),
                    {"path": RELIGION, "value": "none", "base_version": alice.head_version, "action": "save"})  # fmt: skip
    assert edit.status_code == 403
    ada.post(reverse("admin:memory_reviewitem_changelist"),
             {"action": "approve_ops", ACTION_CHECKBOX_NAME: [held.pk]}, follow=True)  # fmt: skip
    held.refresh_from_db()
    assert held.status == "pending_review"
    assert (
        selectors.tree_current(Subject.objects.select_related("head").get(pk=alice.pk))[RELIGION]
        == SECRET_FAITH
    )
    # Ordinary leaves are edited as before.
    ok = ada.post(reverse("admin:memory_subject_leaf", args=[alice.pk]),
                  {"path": ROLE, "value": "head nurse", "base_version": alice.head_version, "action": "save"})  # fmt: skip
    assert ok.status_code == 302
    assert (
        selectors.tree_current(Subject.objects.select_related("head").get(pk=alice.pk))[ROLE] == "head nurse"
    )


def test_the_special_tier_permission_shows_values_and_allows_decisions(client, world):
    bob = world["bob"]
    bea = logged_in(client, world["bea"])
    _, tree = page(bea, "admin:memory_subject_change", bob.pk)
    assert SECRET_FAITH in tree and "•••• (special tier)" not in tree
    held = OpRecord.objects.get(subject=bob, status="pending_review")
    _, record = page(bea, "admin:memory_oprecord_change", held.pk)
    assert SECRET_HEALTH in record and SECRET_SENTENCE in record
    _, found = page(bea, "admin:memory_oprecord_changelist", query={"q": "diabetes"})
    assert HEALTH in found
    bea.post(reverse("admin:memory_reviewitem_changelist"),
             {"action": "approve_ops", ACTION_CHECKBOX_NAME: [held.pk]})  # fmt: skip
    held.refresh_from_db()
    assert held.status == "approved"
    assert (
        selectors.tree_current(Subject.objects.select_related("head").get(pk=bob.pk))[HEALTH] == SECRET_HEALTH
    )
    # bea's grant is tenant B only: alice stays invisible to her.
    status, _ = page(bea, "admin:memory_subject_change", world["alice"].pk)
    assert status in (302, 404)


def test_only_superusers_manage_the_grants(client, world, admin_user):
    ada = logged_in(client, world["ada"])
    assert ada.get(reverse("admin:memory_tenantstaff_changelist")).status_code == 403
    ada.post(reverse("admin:memory_tenantstaff_add"), {"user": world["ada"].pk, "tenant": world["b"].pk})
    assert not TenantStaff.objects.filter(user=world["ada"], tenant=world["b"]).exists()
    root = logged_in(client, admin_user)
    status, html = page(root, "admin:memory_subject_changelist")
    assert "alice-of-a" in html and "bob-of-b" in html  # superusers see every tenant
    _, tree = page(root, "admin:memory_subject_change", world["alice"].pk)
    assert SECRET_FAITH in tree
    response = root.post(
        reverse("admin:memory_tenantstaff_add"), {"user": world["ada"].pk, "tenant": world["b"].pk}
    )
    assert (
        response.status_code == 302
        and TenantStaff.objects.filter(user=world["ada"], tenant=world["b"]).exists()
    )


def test_values_whose_leaf_cannot_be_told_are_masked_too(client, world):
    """A rejected op on a path that is no leaf (a misspelt special leaf) and a parse error's raw line
    may hold a special-tier value: without the permission they are masked like one."""
    alice = world["alice"]
    chunk = ChunkFactory(subject=alice)
    tree_apply_ops(
        subject=alice, base_version=alice.head_version, ops=[Op.add("identity/beliefs/religon", "Zoroastrian priest")],
        actor=MODEL, source=Source(chunk.pk, chunk.start_seq, chunk.end_seq),
        parse_errors=[{"line_no": 2, "line": "{'op': 'ADD', 'leaf': 3, 'value': 'Zoroastrian convert'}", "message": "leaf id"}],
    )  # fmt: skip
    records = OpRecord.objects.filter(subject=alice, chunk=chunk)
    assert sorted(r.reason_code for r in records) == ["PARSE_ERROR", "UNKNOWN_PATH"]
    ada = logged_in(client, world["ada"])
    _, oplog = page(ada, "admin:memory_oprecord_changelist")
    assert "Zoroastrian" not in oplog and "identity/beliefs/religon" in oplog
    for record in records:
        _, html = page(ada, "admin:memory_oprecord_change", record.pk)
        assert "Zoroastrian" not in html and "•••• (special tier)" in html
    bea_sees = logged_in(client, world["bea"])  # not granted tenant A: nothing of it at all
    _, other = page(bea_sees, "admin:memory_oprecord_changelist")
    assert "religon" not in other
