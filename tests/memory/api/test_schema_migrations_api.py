"""POST/GET /v1/schema-migrations (issue 18 item 1): dry run, queued run, progress, errors as problems."""

from __future__ import annotations

import json

import pytest

from memory.models import SchemaMigration, Subject, TreeVersion
from tests.schema_migration_fixture import MAPPING_ID, TREES, acme_tenant, mapping

pytestmark = pytest.mark.django_db
URL = "/v1/schema-migrations"


@pytest.fixture
def acme(db):
    return acme_tenant()


@pytest.fixture
def admin_client(acme, make_api_client):
    return make_api_client(acme, scopes=("admin",))[0]


def pins(tenant) -> set:
    return set(Subject.objects.filter(tenant=tenant).values_list("schema_id", "schema_version"))


@pytest.mark.parametrize("how", ["query", "body"])
def test_dry_run_reports_without_storing_anything(
    acme, admin_client, how, django_capture_on_commit_callbacks
):
    """A dry run is a task (issue 24): 202 with where to poll; the poll gives the report."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        if how == "query":
            response = admin_client.post(f"{URL}?dry_run=1", mapping(), format="json")
        else:
            response = admin_client.post(URL, {**mapping(), "dry_run": True}, format="json")
    assert response.status_code == 202, response.content
    queued = response.json()
    assert queued["status"] == "queued" and response["Location"] == queued["location"]
    assert queued["location"] == f"{URL}/dry-runs/{queued['id']}"
    assert admin_client.get(queued["location"]).json()["status"] == "queued"  # not run in the request
    for callback in callbacks:
        callback()  # the task (eager) after the commit
    polled = admin_client.get(queued["location"])
    assert polled.status_code == 200 and polled.json()["status"] == "done", polled.content
    report = polled.json()["report"]
    assert report["dry_run"] is True and report["mapping"] == MAPPING_ID
    assert (report["subjects"], report["changed"], report["held"]) == (4, 2, 1)
    assert report["dropped"] == [{"path": "body/appearance/height", "subjects": 2, "max_length": 6}]
    assert not any(v in response.content.decode() for tree in TREES.values() for v in tree.values())
    assert not SchemaMigration.objects.exists() and pins(acme) == {("acme-profile", 1)}


def test_post_stores_and_queues_the_run_and_get_shows_its_progress(
    acme, admin_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = admin_client.post(URL, mapping(), format="json")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "created" and callbacks  # the run is queued on commit
    assert pins(acme) == {("acme-profile", 2)}  # eager Celery ran workers.schema_migrate
    assert TreeVersion.objects.filter(subject__tenant=acme, created_by="migration").count() == 2
    status = admin_client.get(f"{URL}/{MAPPING_ID}").json()
    assert status["status"] == "done" and status["remaining"] == 0
    assert status["counts"] == {
        "migrated": 2, "unchanged": 2, "held": 1, "held_ops": 2, "failed": 0, "failures": {},
    }  # fmt: skip
    assert status["source"] == ["acme-profile", 1] and status["target"] == ["acme-profile", 2]
    again = admin_client.post(URL, mapping(), format="json")  # idempotent: the same row, run again
    assert again.status_code == 202 and SchemaMigration.objects.count() == 1


def test_errors_are_problems_naming_the_bad_step(acme, admin_client):
    bad = mapping()
    bad["steps"][3]["rule"] = "halves"
    response = admin_client.post(URL, bad, format="json")
    assert response.status_code == 400
    problem = response.json()
    assert response["Content-Type"].startswith("application/problem+json")
    assert problem["field"] == "document.steps[3]" and "steps[3] (split" in problem["detail"]
    wrong = {**mapping(), "target": {"id": "acme-profile", "version": 9}}
    assert admin_client.post(URL, wrong, format="json").json()["field"] == "document.target"
    assert admin_client.post(URL, ["a", "list"], format="json").status_code == 400
    huge = {**mapping(), "source": {"id": "acme-profile", "version": 10**30}}
    assert admin_client.post(URL, huge, format="json").json()["field"] == "document.source"
    long_id = {**mapping(), "id": "x" * 201}
    assert admin_client.post(URL, long_id, format="json").json()["field"] == "document.id"
    assert admin_client.post(f"{URL}?dry_run=maybe", mapping(), format="json").json()["field"] == "dry_run"
    admin_client.post(URL, mapping(), format="json")
    other = {**mapping(), "doc": "another document under the same id"}
    conflict = admin_client.post(URL, other, format="json")
    assert conflict.status_code == 409 and conflict.json()["code"] == "schema_migration_conflict"


@pytest.mark.parametrize("field", ["doc", "id"])
def test_a_nul_character_in_the_mapping_is_a_400_not_a_500(acme, admin_client, field):
    """PostgreSQL stores no NUL: it was a 500 when the mapping was stored (issue 24)."""
    document = {**mapping(), field: "a\x00b"}
    for url in (URL, f"{URL}?dry_run=1"):
        response = admin_client.post(url, json.dumps(document), content_type="application/json")
        assert response.status_code == 400, response.content
        assert response.json()["field"] == "document" and "NUL" in response.json()["detail"]
    assert not SchemaMigration.objects.exists()


def test_scope_and_tenant_isolation(acme, admin_client, make_api_client, other_tenant):
    reader = make_api_client(acme, scopes=("read",))[0]
    assert reader.post(URL, mapping(), format="json").status_code == 403
    admin_client.post(URL, mapping(), format="json")
    stranger = make_api_client(other_tenant, scopes=("admin",))[0]
    assert stranger.get(f"{URL}/{MAPPING_ID}").status_code == 404
    response = stranger.post(URL, mapping(), format="json")  # acme's schemas are unknown there
    assert response.status_code == 400 and response.json()["field"] == "document.source"
    assert admin_client.get(f"{URL}/nope").status_code == 404
    location = admin_client.post(f"{URL}?dry_run=1", mapping(), format="json").json()["location"]
    assert admin_client.get(location).status_code == 200
    assert stranger.get(location).status_code == 404  # a dry run is its tenant's own
    assert admin_client.get(f"{URL}/dry-runs/{'0' * 32}").status_code == 404


def test_openapi_declares_typed_answers():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    post = schema["paths"][URL]["post"]
    assert {"202", "409"} <= set(post["responses"])
    assert "200" not in post["responses"]  # a dry run is not answered in the request (issue 24)
    assert json.dumps(schema["paths"][f"{URL}/dry-runs/{{run_id}}"]["get"]["responses"]["200"])
    body = post["requestBody"]["content"]["application/json"]["schema"]
    document = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    assert document["properties"]["steps"]["items"]["properties"]["op"]["enum"][:2] == ["rename", "move"]
    assert json.dumps(schema["paths"][f"{URL}/{{mapping_id}}"]["get"]["responses"]["200"])
