"""Tenant schemas through the API (issue 18 item 1): upload, list, read, default, subjects pinned to them.

Real Postgres, the real URLs and exception handler. Tenant isolation: tenant B can neither read,
pin nor create subjects on tenant A's schema, and the same id may mean different documents in the
two tenants.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from memory.models import ApiKey, Subject, TenantSchema
from memory.schema_models import document_digest
from memory.services import schemas as service

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[3] / "docs" / "SCHEMAS.md"

TUTOR = {
    "id": "tutor-profile",
    "version": 1,
    "doc": "What a tutoring product remembers about a learner.",
    "budgets": {"short": 80, "medium": 160},
    "tree": {
        "learning": {
            "goals": {
                "current_goal": {
                    "description": "What the learner is working towards now",
                    "budget": "medium",
                },
                "deadline": {"description": "When the learner must reach the goal", "budget": "short"},
            },
            "preferences": {
                "study_time": {"description": "When the learner likes to study", "budget": "short"},
            },
        },
    },
}


def version_url(schema_id: str, version: int) -> str:
    return reverse("schema-version", kwargs={"schema_id": schema_id, "version": version})


def v2(document: dict) -> dict:
    doc = copy.deepcopy(document)
    doc["version"] = 2
    doc["tree"]["learning"]["preferences"]["format"] = {
        "description": "Video, text or exercises",
        "budget": 40,
    }
    return doc


@pytest.fixture
def admin(tenant, make_api_client):
    client, _ = make_api_client(tenant, scopes=["admin", "ingest", "read"])
    return client


@pytest.fixture
def other_admin(other_tenant, make_api_client):
    client, _ = make_api_client(other_tenant, scopes=["admin", "ingest", "read"])
    return client


def test_every_schema_endpoint_needs_the_admin_scope(tenant, make_api_client):
    client, _ = make_api_client(tenant, scopes=list(set(ApiKey.SCOPES) - {"admin"}))
    for response in (
        client.get(reverse("schemas")),
        client.post(reverse("schemas"), TUTOR, format="json"),
        client.get(version_url("personatree-default", 1)),
        client.get(reverse("schema-default")),
        client.put(
            reverse("schema-default"), {"schema_id": "personatree-default", "version": 1}, format="json"
        ),
    ):
        assert response.status_code == 403, response.content
        assert response.json()["code"] == "permission_denied"
    assert not TenantSchema.objects.exists()


def test_upload_creates_then_is_idempotent(admin, tenant):
    first = admin.post(reverse("schemas"), TUTOR, format="json")
    assert first.status_code == 201, first.content
    body = first.json()
    assert body == {
        "schema_id": "tutor-profile",
        "version": 1,
        "digest": document_digest(TUTOR),
        "leaf_count": 3,
        "shipped": False,
        "created_at": body["created_at"],
        "subjects": 0,
    }
    assert body["created_at"]
    again = admin.post(reverse("schemas"), copy.deepcopy(TUTOR), format="json")
    assert again.status_code == 200 and again.json() == body
    row = TenantSchema.objects.get(tenant=tenant)
    assert row.document == TUTOR and row.created_by.startswith("api_key:pt_live_")
    assert admin.post(reverse("schemas"), v2(TUTOR), format="json").status_code == 201


def test_another_document_under_a_stored_version_is_a_conflict(admin):
    admin.post(reverse("schemas"), TUTOR, format="json")
    changed = copy.deepcopy(TUTOR)
    changed["tree"]["learning"]["goals"]["deadline"]["budget"] = "medium"
    response = admin.post(reverse("schemas"), changed, format="json")
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "schema_conflict" and body["field"] == "document.version"
    assert "v2" in body["detail"]


@pytest.mark.parametrize(
    ("mutate", "field", "words"),
    [
        (lambda d: d["tree"].update({"Learning": {"x": {"description": "y"}}}), "document", "Learning"),
        (lambda d: d["tree"]["learning"]["goals"]["deadline"].update({"budget": "huge"}), "document", "huge"),
        (lambda d: d.update({"version": 0}), "document", "version"),
        (lambda d: d.update({"id": "personatree-default"}), "document.id", "reserved"),
        (lambda d: d.update({"version": 3}), "document.version", "next version is 1"),
        (lambda d: d.update({"id": "x" * 101}), "document.id", "at most 100"),
        (lambda d: d["tree"]["learning"]["goals"]["deadline"].update({"tier": "secret"}), "document", "tier"),
    ],
)
def test_invalid_documents_are_a_400_naming_the_engines_error(admin, mutate, field, words):
    doc = copy.deepcopy(TUTOR)
    mutate(doc)
    response = admin.post(reverse("schemas"), doc, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == field and words in body["detail"], body
    assert response["Content-Type"] == "application/problem+json"
    assert not TenantSchema.objects.exists()


def test_a_body_that_is_not_an_object_is_a_400(admin):
    for body in ([TUTOR], "tutor", 3):
        response = admin.post(reverse("schemas"), body, format="json")
        assert response.status_code == 400 and response.json()["field"] == "document"


def test_too_large_documents_are_a_413(admin, monkeypatch):
    many = copy.deepcopy(TUTOR)
    many["tree"] = {
        "t": {f"leaf_{i}": {"description": f"leaf {i}", "budget": 9} for i in range(service.MAX_LEAVES + 1)}
    }
    response = admin.post(reverse("schemas"), many, format="json")
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
    big = copy.deepcopy(TUTOR)
    big["doc"] = "x" * service.MAX_DOCUMENT_BYTES
    response = admin.post(reverse("schemas"), big, format="json")
    assert response.status_code == 413 and str(service.MAX_DOCUMENT_BYTES) in response.json()["detail"]
    assert not TenantSchema.objects.exists()


def test_list_shows_shipped_and_own_schemas_with_pinned_subjects(admin, tenant):
    admin.post(reverse("schemas"), TUTOR, format="json")
    assert admin.post(reverse("subject-list"), {"external_id": "u1"}, format="json").status_code == 201
    pinned = {"external_id": "u2", "schema_id": "tutor-profile", "schema_version": 1}
    assert admin.post(reverse("subject-list"), pinned, format="json").status_code == 201
    body = admin.get(reverse("schemas")).json()
    assert body["default"] == {"schema_id": "personatree-default", "version": 1}
    by_key = {(s["schema_id"], s["version"]): s for s in body["schemas"]}
    assert set(by_key) == {("personatree-default", 1), ("tutor-profile", 1)}
    shipped = by_key[("personatree-default", 1)]
    assert shipped["shipped"] is True and shipped["created_at"] is None and shipped["subjects"] == 1
    assert shipped["leaf_count"] > 100
    own = by_key[("tutor-profile", 1)]
    assert own["shipped"] is False and own["subjects"] == 1 and own["leaf_count"] == 3


def test_read_one_version_with_its_document(admin):
    admin.post(reverse("schemas"), TUTOR, format="json")
    body = admin.get(version_url("tutor-profile", 1)).json()
    assert body["document"] == TUTOR and body["digest"] == document_digest(TUTOR)
    shipped = admin.get(version_url("personatree-default", 1))
    assert shipped.status_code == 200 and shipped.json()["document"]["id"] == "personatree-default"
    for url in (
        version_url("tutor-profile", 2),
        version_url("nothing", 1),
        version_url("tutor-profile", 2**40),
    ):
        response = admin.get(url)
        assert response.status_code == 404 and response.json()["code"] == "not_found", url


def test_default_schema_for_new_subjects(admin, tenant):
    admin.post(reverse("schemas"), TUTOR, format="json")
    response = admin.put(
        reverse("schema-default"), {"schema_id": "tutor-profile", "version": 1}, format="json"
    )
    assert response.status_code == 200 and response.json() == {"schema_id": "tutor-profile", "version": 1}
    assert admin.get(reverse("schema-default")).json() == {"schema_id": "tutor-profile", "version": 1}
    tenant.refresh_from_db()
    assert (tenant.default_schema_id, tenant.default_schema_version) == ("tutor-profile", 1)
    created = admin.post(reverse("subject-list"), {"external_id": "learner-1"}, format="json")
    assert created.status_code == 201
    assert (created.json()["schema_id"], created.json()["schema_version"]) == ("tutor-profile", 1)
    tree = admin.get(reverse("subject-tree", kwargs={"external_id": "learner-1"})).json()
    assert (tree["schema_id"], tree["schema_version"], tree["tree"]) == ("tutor-profile", 1, {})
    unknown = admin.put(
        reverse("schema-default"), {"schema_id": "tutor-profile", "version": 2}, format="json"
    )
    assert unknown.status_code == 404 and unknown.json()["field"] == "schema_id"  # names no schema
    for bad in ({"schema_id": "tutor-profile"}, {"version": 1}):
        response = admin.put(reverse("schema-default"), bad, format="json")
        assert response.status_code == 400, bad
    tenant.refresh_from_db()
    assert tenant.default_schema_id == "tutor-profile"


def test_subject_create_pins_validates_and_is_idempotent(admin, tenant, make_api_client):
    admin.post(reverse("schemas"), TUTOR, format="json")
    admin.post(reverse("schemas"), v2(TUTOR), format="json")
    url = reverse("subject-list")
    body = {"external_id": "learner-2", "schema_id": "tutor-profile", "schema_version": 2}
    first = admin.post(url, body, format="json")
    assert first.status_code == 201 and first.json()["schema_version"] == 2
    assert admin.post(url, body, format="json").status_code == 200
    assert admin.post(url, {"external_id": "learner-2"}, format="json").status_code == 200
    other = admin.post(url, {**body, "schema_version": 1}, format="json")
    assert other.status_code == 409 and other.json()["code"] == "schema_conflict"
    unknown = admin.post(
        url, {"external_id": "x", "schema_id": "tutor-profile", "schema_version": 3}, format="json"
    )
    assert unknown.status_code == 404 and unknown.json()["field"] == "schema_id"  # names no schema
    for bad, field in (
        ({"external_id": "x", "schema_id": "tutor-profile"}, "schema_version"),
        ({"external_id": "x", "schema_version": 1}, "schema_id"),
        ({"external_id": "bad\x00id"}, "external_id"),
        ({}, "external_id"),
    ):
        response = admin.post(url, bad, format="json")
        assert response.status_code == 400 and response.json()["field"] == field, (bad, response.json())
    assert not Subject.objects.filter(external_id="x").exists()
    reader, _ = make_api_client(tenant, scopes=["read"])
    assert reader.post(url, {"external_id": "y"}, format="json").status_code == 403


def test_tenant_b_can_neither_read_nor_pin_tenant_as_schema(admin, other_admin, other_tenant):
    assert admin.post(reverse("schemas"), TUTOR, format="json").status_code == 201
    assert other_admin.get(version_url("tutor-profile", 1)).status_code == 404
    listed = other_admin.get(reverse("schemas")).json()["schemas"]
    assert [s["schema_id"] for s in listed] == ["personatree-default"]
    pin = other_admin.put(
        reverse("schema-default"), {"schema_id": "tutor-profile", "version": 1}, format="json"
    )
    assert pin.status_code == 404 and pin.json()["field"] == "schema_id"
    other_tenant.refresh_from_db()
    assert other_tenant.default_schema_id == "personatree-default"
    subject = {"external_id": "b-user", "schema_id": "tutor-profile", "schema_version": 1}
    create = other_admin.post(reverse("subject-list"), subject, format="json")
    assert create.status_code == 404 and "Unknown schema" in create.json()["detail"]
    assert not Subject.objects.filter(tenant=other_tenant).exists()
    # The same id is B's own name space: another document under it is no conflict with A's.
    theirs = copy.deepcopy(TUTOR)
    theirs["tree"]["learning"]["goals"]["current_goal"]["description"] = "B's meaning of a goal"
    uploaded = other_admin.post(reverse("schemas"), theirs, format="json")
    assert uploaded.status_code == 201 and uploaded.json()["digest"] != document_digest(TUTOR)
    assert other_admin.get(version_url("tutor-profile", 1)).json()["document"] == theirs
    assert admin.get(version_url("tutor-profile", 1)).json()["document"] == TUTOR


def docs_section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text.split("## Tenant schemas", 1)[1].split("\n## ", 1)[0]


def docs_example() -> dict:
    """The schema document of docs/SCHEMAS.md's "Tenant schemas" section (its JSON block)."""
    block = re.search(r"```json\n(.*?)\n```", docs_section(), re.S)
    assert block, "no JSON example in the Tenant schemas section"
    return json.loads(block.group(1))


def docs_curls() -> list[tuple[str, str, str, str | None]]:
    """``(key variable, method, path, body)`` of every curl command of the section, in order."""
    block = re.search(r"```sh\n(.*?)\n```", docs_section(), re.S)
    assert block, "no shell example in the Tenant schemas section"
    commands = block.group(1).replace("\\\n", " ")
    calls = []
    for line in commands.splitlines():
        if not line.startswith("curl "):
            continue
        method = re.search(r"-X (\w+)", line)
        body = re.search(r"-d (@\S+|'[^']*')", line)
        calls.append(
            (
                re.search(r"Bearer \$(\w+)", line).group(1),
                method.group(1) if method else "GET",
                re.search(r"http://127\.0\.0\.1:8008(\S+)", line).group(1),
                body.group(1).strip("'") if body else None,
            )
        )
    return calls


def test_the_docs_example_runs_through_the_api(admin, tenant, make_api_client):
    """The JSON document and every curl command of the section, sent as written."""
    ingest, _ = make_api_client(tenant, scopes=["ingest"])
    clients = {"ADMIN_KEY": admin, "INGEST_KEY": ingest}
    document = docs_example()
    statuses = []
    for key, method, path, body in docs_curls():
        data = document if body == "@tutor-profile.json" else (json.loads(body) if body else None)
        kwargs = {"data": data, "format": "json"} if data is not None else {}
        response = getattr(clients[key], method.lower())(path, **kwargs)
        assert response.status_code < 300, (method, path, response.content)
        statuses.append(response.status_code)
    assert statuses == [201, 200, 200, 200, 201]
    subject = Subject.objects.get(tenant=tenant, external_id="learner-42")
    assert (subject.schema_id, subject.schema_version) == (document["id"], document["version"])
    again = admin.post(reverse("schemas"), document, format="json")
    assert again.status_code == 200
    tenant.refresh_from_db()
    assert tenant.default_schema_id == document["id"]


def test_the_docs_error_example_is_the_engines_message(admin):
    document = docs_example()
    document["tree"]["learning"]["goals"]["deadline"]["budget"] = "huge"
    detail = admin.post(reverse("schemas"), document, format="json").json()["detail"]
    assert f"`{detail}`" in docs_section()


def test_the_gate_and_the_leaf_api_follow_the_subjects_schema(admin, tenant, make_api_client):
    admin.post(reverse("schemas"), TUTOR, format="json")
    pinned = {"external_id": "learner-9", "schema_id": "tutor-profile", "schema_version": 1}
    admin.post(reverse("subject-list"), pinned, format="json")
    writer, _ = make_api_client(tenant, scopes=["write", "read"])

    def leaf(path):
        return reverse("subject-leaf", kwargs={"external_id": "learner-9", "leaf_path": path})

    ok = writer.put(leaf("learning/goals/current_goal"), {"value": "pass the B2 exam"}, format="json")
    assert ok.status_code == 200, ok.content
    unknown = writer.put(leaf("identity/occupation/current_role"), {"value": "nurse"}, format="json")
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_leaf"
    over = writer.put(leaf("learning/goals/deadline"), {"value": "x " * 60}, format="json")
    assert over.status_code == 400 and over.json()["reason"] == "OVER_BUDGET"  # budget "short" = 80
    tree = writer.get(reverse("subject-tree", kwargs={"external_id": "learner-9"})).json()["tree"]
    assert tree == {"learning/goals/current_goal": "pass the B2 exam"}


def test_a_subject_created_by_ingest_is_pinned_to_the_default(admin, tenant):
    admin.post(reverse("schemas"), TUTOR, format="json")
    admin.put(reverse("schema-default"), {"schema_id": "tutor-profile", "version": 1}, format="json")
    messages = {"messages": [{"role": "user", "content": "My goal is the B2 exam.", "idempotency_key": "m1"}]}
    url = reverse("subject-messages", kwargs={"external_id": "via-ingest"})
    response = admin.post(url, messages, format="json")
    assert response.status_code in (200, 201, 202), response.content
    subject = Subject.objects.get(tenant=tenant, external_id="via-ingest")
    assert (subject.schema_id, subject.schema_version) == ("tutor-profile", 1)
