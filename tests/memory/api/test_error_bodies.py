"""Error bodies do not leak internals (issue 15): a server-side failure answers a generic message
and an ``error_id``; the cause (internal URLs, Milvus URIs, file paths, a backend's exception
text) is only in the log, under that id. Also the one walker of DRF error trees."""

from __future__ import annotations

import logging

import pytest
from rest_framework import serializers

from memory.api import errors, subjects
from memory.api.errors import first_error
from memory.models import Chunk
from memory.recall import runtime
from memory.recall.index import IndexUnavailable
from memory.services import query
from tests.factories import ChunkFactory

pytestmark = pytest.mark.django_db

INTERNALS = ("http://milvus.internal:19530", "/srv/models/secret.gguf", "10.0.0.5", "password=hunter2")
CAUSE = f"cannot reach {INTERNALS[0]} nor {INTERNALS[2]} (model {INTERNALS[1]}, dsn {INTERNALS[3]})"


def assert_no_internals(response) -> None:
    text = response.content.decode()
    for word in (*INTERNALS, "Traceback", "RuntimeError"):
        assert word not in text, f"{word!r} leaked: {text}"


def error_records(caplog, error_id: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if error_id in r.getMessage()]


def test_an_unexpected_error_is_a_json_500_with_an_id_and_the_cause_only_in_the_log(
    subject, api_client, monkeypatch, caplog
):
    def broken(*args, **kwargs):
        raise RuntimeError(CAUSE)

    monkeypatch.setattr(subjects, "_Visible", broken)  # called by the export view
    with caplog.at_level(logging.ERROR, logger="personatree.api"):
        response = api_client.get(f"/v1/subjects/{subject.external_id}/export")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/problem+json"
    error = response.json()
    assert error["code"] == "internal_error" and error["error_id"]
    assert_no_internals(response)
    logged = error_records(caplog, error["error_id"])
    assert logged and CAUSE in logged[0].getMessage() and logged[0].exc_info is not None


def test_an_unavailable_model_is_a_503_with_retry_after_and_no_url_or_path(
    subject, make_api_client, monkeypatch, caplog, settings
):
    settings.PERSONATREE = {**settings.PERSONATREE, "ANSWER_MODE": "model"}  # extractive asks no model
    monkeypatch.setattr(runtime, "responder_engine", lambda: (None, f"responder model unavailable: {CAUSE}"))
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    with caplog.at_level(logging.WARNING, logger="personatree.api"):
        response = client.post(
            f"/v1/subjects/{subject.external_id}/answer", {"query": "where?", "mode": "fast"}, format="json"
        )
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    error = response.json()
    assert error["code"] == "model_unavailable" and error["error_id"]
    assert error["detail"] == errors.PUBLIC_MESSAGES["model_unavailable"]
    assert_no_internals(response)
    assert CAUSE in error_records(caplog, error["error_id"])[0].getMessage()


def test_deep_recall_fallback_names_no_milvus_uri(subject, make_api_client, monkeypatch, caplog):
    """A 200 that says the index was down: the notice and ``recall.detail`` carry an id, not the URI."""
    for name in ("configured_reranker", "configured_index", "configured_embedder"):
        monkeypatch.setattr(runtime, name, lambda: None)
    monkeypatch.setattr(runtime, "responder_engine", lambda: (None, f"no model: {CAUSE}"))

    def down(*args, **kwargs):
        raise IndexUnavailable(f"cannot connect to Milvus at {INTERNALS[0]}: {CAUSE}")

    monkeypatch.setattr(query, "agentic_recall", down)
    client, _ = make_api_client(subject.tenant, scopes=["read", "read_special"])
    with caplog.at_level(logging.WARNING):
        response = client.post(
            f"/v1/subjects/{subject.external_id}/context", {"query": "why?", "mode": "deep"}, format="json"
        )
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert body["mode_used"] == "fast" and body["recall"]["status"] == "unavailable"
    assert any("evidence recall unavailable" in n for n in body["notices"])
    assert_no_internals(response)
    assert any(INTERNALS[0] in r.getMessage() for r in caplog.records)  # the operator still sees it


def test_ingest_status_shows_no_chunk_error_text(subject, api_client):
    ChunkFactory(
        subject=subject,
        status=Chunk.Status.FAILED,
        attempts=5,
        last_error=f"memlistener unreachable at http://ray-head:8000/memlistener: {CAUSE}",
    )
    ChunkFactory(
        subject=subject, status=Chunk.Status.PENDING, attempts=1, last_error=f"apply failed: {CAUSE}"
    )
    response = api_client.get(f"/v1/subjects/{subject.external_id}/ingest")
    assert response.status_code == 200
    failures = response.json()["failures"]
    assert [f["status"] for f in failures] == ["failed", "pending"]
    assert all(f["error"] for f in failures)
    assert_no_internals(response)
    assert "ray-head" not in response.content.decode()
    flushed = api_client.post(f"/v1/subjects/{subject.external_id}/flush")
    assert flushed.status_code == 202
    assert_no_internals(flushed)


def test_client_errors_keep_their_message():
    """4xx bodies are about the client's own input: they keep saying what was wrong."""
    response = errors.exception_handler(errors.ServiceError("mode must be fast.", field="mode"), {})
    assert response.status_code == 400
    assert "error" not in response.data
    assert (response.data["detail"], response.data["code"], response.data["field"]) == (
        "mode must be fast.",
        "invalid",
        "mode",
    )


class Item(serializers.Serializer):
    ts = serializers.DateTimeField()


class Body(serializers.Serializer):
    name = serializers.CharField()
    items = Item(many=True)
    tags = serializers.ListField(child=serializers.IntegerField())


@pytest.mark.parametrize(
    ("data", "field", "code"),
    [
        ({"items": [], "tags": []}, "name", "required"),
        (
            {"name": "a", "items": [{"ts": "2024-01-01T00:00"}, {"ts": "nope"}], "tags": []},
            "items[1].ts",
            "invalid",
        ),
        ({"name": "a", "items": [], "tags": [1, "x"]}, "tags[1]", "invalid"),
    ],
)
def test_one_walker_names_the_first_bad_field(data, field, code):
    serializer = Body(data=data)
    assert not serializer.is_valid()
    got_field, message, got_code = first_error(serializer.errors)
    assert (got_field, got_code) == (field, code) and message


def test_non_field_errors_name_no_field():
    assert first_error({"non_field_errors": ["Both or neither."]})[0] == ""
