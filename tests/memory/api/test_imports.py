"""POST /v1/imports, GET /v1/imports/<id>, GET /v1/imports: bulk import over HTTP on the backfill."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from memory.backfill.imports import import_execute
from memory.models import Chunk, Import, Message, Subject

pytestmark = pytest.mark.django_db

HISTORY = (Path(__file__).resolve().parents[2] / "fixtures" / "backfill" / "history.jsonl").read_bytes()


def _line(subject: str, *messages: tuple[str, str]) -> str:
    return json.dumps({"subject": subject, "messages": [{"role": r, "content": c} for r, c in messages]})


def _post(client, body: bytes | str, **params):
    url = reverse("imports") + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
    return client.generic("POST", url, body, content_type="application/x-ndjson")


@pytest.fixture
def ingest_client(tenant, make_api_client):
    return make_api_client(tenant, scopes=["ingest", "read"])[0]


@pytest.fixture
def extractive(settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "MEMLISTENER_BACKEND": "extractive"}


def test_a_small_import_runs_end_to_end_in_eager_mode(
    tenant, ingest_client, extractive, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        r = _post(ingest_client, HISTORY)
    assert r.status_code == 202, r.content
    body = r.json()
    assert r["Location"] == body["location"] == reverse("import", args=[body["id"]])
    assert (body["lines"], body["messages"], body["status"]) == (3, 15, "queued")
    polled = ingest_client.get(body["location"]).json()
    assert (polled["new_messages"], polled["duplicates"]) == (15, 0)
    chunks = polled["chunks"]
    assert polled["status"] == "done", polled
    assert chunks["total"] == polled["chunks_created"] == Chunk.objects.filter(subject__tenant=tenant).count()
    assert (
        chunks["pending"] == chunks["processing"] == 0
        and chunks["applied"] + chunks["failed"] == chunks["total"]
    )
    assert polled["eta_s"] == 0 and polled["finished_at"] is not None
    assert Message.objects.filter(subject__tenant=tenant).count() == 15
    assert Subject.objects.get(tenant=tenant, external_id="alice").head_id is not None, (
        "the listener applied it"
    )
    assert Import.objects.get().body == b"", "the body is dropped once done"


def test_the_same_body_sent_again_adds_nothing(tenant, ingest_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        _post(ingest_client, HISTORY)
    with django_capture_on_commit_callbacks(execute=True):
        location = _post(ingest_client, HISTORY).json()["location"]
    again = ingest_client.get(location).json()
    assert (again["new_messages"], again["duplicates"], again["chunks_created"]) == (0, 15, 0)
    assert Message.objects.filter(subject__tenant=tenant).count() == 15


@pytest.mark.parametrize(
    ("line2", "field", "fragment"),
    [
        (
            '{"subject": "b", "messages": [{"role": "robot", "content": "x"}]}',
            "line 2 messages[0].role",
            "role",
        ),
        ("not json", "line 2", "not JSON"),
        ('{"subject": "b", "messages": [], "extra": 1}', "line 2", "unknown keys"),
        ('{"subject": "", "messages": []}', "line 2 subject", "non-empty"),
    ],
)
def test_a_bad_line_is_a_400_naming_it_and_nothing_is_stored(ingest_client, line2, field, fragment):
    body = _line("a", ("user", "hi")) + "\n" + line2 + "\n"
    r = _post(ingest_client, body)
    assert r.status_code == 400, r.content
    assert r["Content-Type"].startswith("application/problem+json")
    assert r.json()["code"] == "invalid_import_line" and r.json()["field"] == field
    assert fragment in r.json()["detail"]
    assert not Import.objects.exists() and not Message.objects.exists()


def test_an_empty_body_is_a_400(ingest_client):
    r = _post(ingest_client, "\n  \n")
    assert r.status_code == 400 and r.json()["code"] == "empty_import"


def test_over_the_size_cap_is_a_413(ingest_client, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "IMPORT_MAX_BYTES": 100}
    r = _post(ingest_client, _line("a", ("user", "x" * 200)))
    assert r.status_code == 413 and r.json()["code"] == "payload_too_large"
    assert not Import.objects.exists()


def test_a_multipart_upload_with_a_source_label(ingest_client, django_capture_on_commit_callbacks):
    upload = SimpleUploadedFile("h.jsonl", HISTORY, content_type="application/octet-stream")
    with django_capture_on_commit_callbacks(execute=True):
        r = ingest_client.post(reverse("imports"), {"file": upload, "source": "crm-2024"})
    assert r.status_code == 202, r.content
    polled = ingest_client.get(r.json()["location"]).json()
    assert polled["source"] == "crm-2024" and polled["new_messages"] == 15


def test_a_file_part_sent_as_text_is_read_like_an_upload(ingest_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        r = ingest_client.post(reverse("imports"), {"file": HISTORY.decode(), "source": "pasted"})
    assert r.status_code == 202, r.content
    assert ingest_client.get(r.json()["location"]).json()["new_messages"] == 15
    bad = ingest_client.post(reverse("imports"), {"file": "https://example.org"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_import_line", bad.content


def test_a_multipart_form_without_a_file_is_a_400(ingest_client):
    r = ingest_client.post(reverse("imports"), {"source": "x"})
    assert r.status_code == 400 and r.json()["field"] == "file"


def test_json_is_a_415(ingest_client):
    r = ingest_client.post(reverse("imports"), {"subject": "a"}, content_type="application/json")
    assert r.status_code == 415


def test_posting_needs_the_ingest_scope(tenant, make_api_client):
    client, _ = make_api_client(tenant, scopes=["read"])
    assert _post(client, _line("a", ("user", "hi"))).status_code == 403
    assert client.get(reverse("imports")).status_code == 200


def test_another_tenants_import_is_a_404_and_not_listed(
    tenant, other_tenant, ingest_client, make_api_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        mine = _post(ingest_client, _line("a", ("user", "hi"), ("assistant", "hello"))).json()
    other, _ = make_api_client(other_tenant, scopes=["ingest", "read"])
    assert other.get(mine["location"]).status_code == 404
    assert other.get(reverse("import", args=[uuid.uuid4()])).status_code == 404
    assert other.get(reverse("imports")).json()["imports"] == []
    listed = ingest_client.get(reverse("imports")).json()
    assert [i["id"] for i in listed["imports"]] == [mine["id"]] and listed["next"] is None


def test_the_list_is_newest_first_and_paged(tenant, ingest_client):
    for n in range(3):
        _post(ingest_client, _line(f"s{n}", ("user", "hi")))  # not committed: the tasks never run
    page = ingest_client.get(reverse("imports"), {"page_size": 2}).json()
    assert [i["lines"] for i in page["imports"]] == [1, 1] and page["next"]
    assert page["imports"][0]["status"] == "queued" and page["imports"][0]["rate_chunks_per_s"] is None
    rest = ingest_client.get(page["next"]).json()
    ids = {i["id"] for i in page["imports"] + rest["imports"]}
    assert len(ids) == 3 and rest["next"] is None


def test_with_workers_the_chunks_are_handed_over_and_progress_is_read_from_them(
    tenant, ingest_client, settings, monkeypatch
):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr("memory.backfill.service.schedule_dispatch", lambda: None)
    row = Import.objects.get(id=_imported_id(ingest_client))
    assert import_execute(row.pk) == "processing"
    first = ingest_client.get(reverse("import", args=[row.public_id])).json()
    assert first["status"] == "processing" and first["chunks"]["pending"] == first["chunks_created"] > 0
    assert first["rate_chunks_per_s"] is None and first["eta_s"] is None, "no rate before a chunk is done"
    Chunk.objects.filter(subject__tenant=tenant).update(status=Chunk.Status.APPLIED)
    done = ingest_client.get(reverse("import", args=[row.public_id])).json()
    assert done["status"] == "done" and done["chunks"]["applied"] == done["chunks_created"]
    assert done["rate_chunks_per_s"] > 0 and done["eta_s"] == 0


def _imported_id(client) -> int:
    body = _post(client, HISTORY).json()
    return Import.objects.get(public_id=body["id"]).pk


def test_no_eta_while_a_failed_chunk_blocks_its_subject(tenant, ingest_client, settings, monkeypatch):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr("memory.backfill.service.schedule_dispatch", lambda: None)
    row = Import.objects.get(id=_imported_id(ingest_client))
    import_execute(row.pk)
    alice = Chunk.objects.filter(subject__external_id="alice").order_by("start_seq")
    Chunk.objects.filter(pk=alice[0].pk).update(status=Chunk.Status.FAILED)
    Chunk.objects.exclude(subject__external_id="alice").update(status=Chunk.Status.APPLIED)
    got = ingest_client.get(reverse("import", args=[row.public_id])).json()
    assert got["status"] == "processing" and got["chunks"]["failed"] == 1 and got["chunks"]["pending"] > 0
    assert got["rate_chunks_per_s"] > 0 and got["eta_s"] is None


def test_a_run_the_ingest_service_refuses_fails_with_its_reason(
    tenant, ingest_client, django_capture_on_commit_callbacks
):
    first = json.dumps({"subject": "a", "messages": [{"role": "user", "content": "one", "id": "m1"}]})
    clash = json.dumps({"subject": "a", "messages": [{"role": "user", "content": "two", "id": "m1"}]})
    with django_capture_on_commit_callbacks(execute=True):
        location = _post(ingest_client, first + "\n" + clash + "\n").json()["location"]
    got = ingest_client.get(location).json()
    assert got["status"] == "failed" and "line:2" in got["error"] and got["finished_at"]
    assert Import.objects.get().body == b"", "a failed import's body is not kept either"
    assert Message.objects.filter(subject__tenant=tenant).count() == 1, "what came before the bad line stays"


def test_a_redelivered_task_resumes_without_duplicating(tenant, ingest_client, settings, monkeypatch):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr("memory.backfill.service.schedule_dispatch", lambda: None)
    row = Import.objects.get(id=_imported_id(ingest_client))
    import_execute(row.pk)
    chunks = Chunk.objects.filter(subject__tenant=tenant).count()
    # a worker killed before it recorded the end: the row still says ingesting, its body is kept
    Import.objects.filter(pk=row.pk).update(status=Import.Status.INGESTING)
    assert import_execute(row.pk) == "processing"
    row.refresh_from_db()
    assert (row.new_messages, row.duplicates, row.chunks_created) == (0, 15, 0)
    assert Message.objects.filter(subject__tenant=tenant).count() == 15
    assert Chunk.objects.filter(subject__tenant=tenant).count() == chunks
