"""Tenant schemas in the admin console (issue 18 item 1), as a staff user granted one tenant.

Real Postgres, the Django test client, the real admin URLs: the list and the read-only page show
only the granted tenant's schemas, the add form stores through schema_upload and shows its
refusals in the form (never a 500), and stored versions are neither editable nor deletable.
"""

from __future__ import annotations

import copy
import json

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from memory.models import TenantSchema, TenantStaff
from memory.services.schemas import schema_upload
from memory.services.subjects import subject_get_or_create
from tests.factories import TenantFactory
from tests.schema_documents import schema_document

pytestmark = pytest.mark.django_db

DOC = {
    "id": "tutor-profile",
    "version": 1,
    "tree": {
        "learning": {
            "goals": {"current_goal": {"description": "The learner's current goal", "budget": 160}},
            "preferences": {"study_time": {"description": "When the learner studies", "budget": 80}},
        }
    },
}
B_DOC = schema_document("coach-secret-plan", ("health/habits/sleep", "How the user sleeps", 80))
ADD = reverse("admin:memory_tenantschema_add")
LIST = reverse("admin:memory_tenantschema_changelist")


def change_url(row) -> str:
    return reverse("admin:memory_tenantschema_change", args=[row.pk])


@pytest.fixture
def world(client, django_user_model):
    a, b = TenantFactory(name="tenant-a"), TenantFactory(name="tenant-b")
    user = django_user_model.objects.create_user("ada", password="pw-ada", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="memory",
            codename__in=[
                "view_tenantschema",
                "add_tenantschema",
                "change_tenantschema",
                "delete_tenantschema",
            ],
        )
    )
    TenantStaff.objects.create(user=user, tenant=a)
    a_row, _ = schema_upload(tenant=a, document=DOC)
    b_row, _ = schema_upload(tenant=b, document=B_DOC)
    for i in range(2):
        subject_get_or_create(
            tenant=a, external_id=f"learner-{i}", schema_id="tutor-profile", schema_version=1
        )
    client.force_login(user)
    return {"a": a, "b": b, "a_row": a_row, "b_row": b_row, "client": client}


def add(client, tenant, document) -> object:
    text = document if isinstance(document, str) else json.dumps(document)
    return client.post(ADD, {"tenant": tenant.pk, "document_json": text})


def test_the_list_shows_the_granted_tenants_schemas_only(world):
    response = world["client"].get(LIST)
    assert response.status_code == 200
    page = response.content.decode()
    assert "tutor-profile" in page and "coach-secret-plan" not in page
    (row,) = response.context["cl"].result_list
    assert (row.schema_id, row.leaf_count, row.pinned) == ("tutor-profile", 2, 2)


def test_the_change_view_is_a_read_only_pretty_document(world):
    client, row = world["client"], world["a_row"]
    response = client.get(change_url(row))
    assert response.status_code == 200
    page = response.content.decode()
    assert '"current_goal": {' in page.replace("&quot;", '"')  # indented JSON, not a one-line dump
    assert 'name="document' not in page and "Save" not in page.split("submit-row")[-1][:400]
    posted = client.post(change_url(row), {"tenant": world["b"].pk, "document_json": "{}"})
    assert posted.status_code == 403
    row.refresh_from_db()
    assert row.document == DOC and row.tenant == world["a"]
    assert (
        client.post(reverse("admin:memory_tenantschema_delete", args=[row.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert TenantSchema.objects.filter(pk=row.pk).exists()


def test_another_tenants_schema_is_not_shown(world):
    response = world["client"].get(change_url(world["b_row"]), follow=True)
    assert (
        "coach-secret-plan" not in response.content.decode()
        and "health/habits" not in response.content.decode()
    )


def test_add_stores_through_the_service(world):
    client, a = world["client"], world["a"]
    v2 = copy.deepcopy(DOC)
    v2["version"] = 2
    v2["tree"]["learning"]["goals"]["deadline"] = {"description": "When the goal is due", "budget": 40}
    response = add(client, a, v2)
    assert response.status_code == 302, response.content.decode()[-2000:]
    row = TenantSchema.objects.get(tenant=a, schema_id="tutor-profile", version=2)
    assert row.document == v2 and row.leaf_count == 3 and row.created_by == "admin:ada"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "Not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({**DOC, "version": 2, "tree": {"Learning": {"x": {"description": "y", "budget": 5}}}}, "Learning"),
        ({**DOC, "id": "personatree-default"}, "reserved"),
        ({**DOC, "version": 4}, "next version is 2"),
        ({**DOC, "doc": "changed"}, "exists with another document"),
        (DOC, "already stored with this document"),
    ],
)
def test_refusals_show_in_the_form(world, document, message):
    response = add(world["client"], world["a"], document)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors.get("document_json", [])), errors
    assert TenantSchema.objects.filter(tenant=world["a"]).count() == 1


def test_an_ungranted_tenant_cannot_be_chosen(world):
    response = add(world["client"], world["b"], {**DOC, "id": "sneaky"})
    assert response.status_code == 200
    assert "tenant" in response.context["adminform"].form.errors
    assert not TenantSchema.objects.filter(schema_id="sneaky").exists()
    form_page = world["client"].get(ADD).content.decode()
    assert "tenant-a" in form_page and "tenant-b" not in form_page
