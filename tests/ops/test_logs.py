"""Structured logs: request id (from/into ``X-Request-ID``), tenant id and hashed subject on every
line of a request, the eager Celery task's lines included; no external id, no message text."""

from __future__ import annotations

import io
import json
import logging
import re
from types import SimpleNamespace

import pytest
from celery.signals import before_task_publish, task_postrun, task_prerun

from personatree_site.ops import logging as logs
from serving.client import reset_listener_clients
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

EXTERNAL_ID = "ext-user-7f3e"
SECRET_TEXT = "my-secret-diary-entry"


@pytest.fixture
def json_lines():
    """Every root-logger line of the test, formatted as production does (JSON, context filter)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    handler.addFilter(logs.ContextFilter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


@pytest.fixture
def standin(settings):
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_BACKEND": "standin",
        "MEMLISTENER_STANDIN_MODE": "derived",
    }
    reset_listener_clients()
    yield
    reset_listener_clients()


def _messages(n: int) -> list[dict]:
    roles = ["user", "assistant"]
    return [
        {
            "role": roles[i % 2],
            "content": f"{SECRET_TEXT} {i}: I work as a baker.",
            "idempotency_key": f"k{i}",
        }
        for i in range(n)
    ]


def test_a_requests_lines_carry_its_id_tenant_and_hashed_subject_and_no_ids_or_text(
    transactional_db, json_lines, standin, make_api_client
):
    # transactional_db: commits are real, so the dispatch task runs (eagerly) inside the request.
    tenant = TenantFactory()
    client, _ = make_api_client(tenant, scopes=["ingest", "read"])
    response = client.post(
        f"/v1/subjects/{EXTERNAL_ID}/messages",
        {"messages": _messages(6)},  # three pairs: one chunk, dispatched by an eager task
        format="json",
        HTTP_X_REQUEST_ID="req-abc.123",
    )
    assert response.status_code == 202 and response.json()["chunks_created"] == 1
    assert response["X-Request-ID"] == "req-abc.123"
    missing = client.get("/v1/subjects/ext-missing-9/tree")  # a 404: Django logs "Not Found: <path>"
    assert missing.status_code == 404

    lines = json_lines()
    text = "\n".join(json.dumps(line) for line in lines)
    assert EXTERNAL_ID not in text and "ext-missing-9" not in text and SECRET_TEXT not in text
    ours = [line for line in lines if line.get("request_id") == "req-abc.123"]
    access = [line for line in ours if line["logger"] == "personatree.request"]
    assert len(access) == 1
    assert access[0]["message"] == "POST v1/subjects/<str:external_id>/messages 202 " + (
        f"{access[0]['duration_ms']:.1f}ms"
    )
    assert access[0]["tenant_id"] == str(tenant.pk) and access[0]["status"] == 202
    assert access[0]["subject"] == logs.subject_hash(tenant.pk, EXTERNAL_ID)
    assert {"time", "level"} <= set(access[0])
    # The eager dispatch task ran inside the request: its lines carry the request's id and its name.
    task_lines = [line for line in ours if line.get("task") == "workers.dispatch"]
    assert task_lines and all(line["tenant_id"] == str(tenant.pk) for line in task_lines)
    not_found = [line for line in lines if line["logger"] == "django.request"]
    assert not_found and not_found[0]["message"] == "Not Found: v1/subjects/<str:external_id>/tree"
    # After the request nothing is bound any more.
    assert logs.current() == dict.fromkeys(logs.current())


@pytest.mark.parametrize("sent", [None, "", "x" * 129, "has space", "new\nline", "ünï"])
def test_an_absent_or_unsafe_request_id_is_replaced(client, sent):
    headers = {} if sent is None else {"HTTP_X_REQUEST_ID": sent}
    response = client.get("/v1/subjects/x/tree", **headers)
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])


class FakeTask:
    name = "workers.dispatch"
    request = SimpleNamespace(pt_request_id="rid-42", pt_tenant="7", headers=None)


def test_the_request_id_travels_in_the_task_headers_and_is_bound_while_the_task_runs():
    headers: dict = {}
    tokens = logs.bind(request_id="rid-42")
    try:
        before_task_publish.send(sender="workers.dispatch", body=(), headers=headers)
    finally:
        logs.unbind(tokens)
    assert headers[logs.REQUEST_ID_TASK_HEADER] == "rid-42"

    # In the worker: the request's headers (Celery's protocol 2 puts them on task.request).
    task = FakeTask()
    task_prerun.send(sender=task, task_id="t-1", task=task, args=(), kwargs={})
    try:
        assert logs.current() == {
            "request_id": "rid-42",
            "tenant_id": "7",
            "subject": None,
            "task": "workers.dispatch",
            "task_id": "t-1",
        }
    finally:
        task_postrun.send(sender=task, task_id="t-1", task=task, args=(), kwargs={}, retval=None, state="")
    assert logs.current()["request_id"] is None and logs.current()["task"] is None


def test_logging_config_knows_two_formats():
    for log_format in logs.FORMATS:
        logging.config.dictConfig({**logs.logging_config(log_format), "root": {"level": "INFO"}})
    with pytest.raises(ValueError, match="PERSONATREE_LOG_FORMAT"):
        logs.logging_config("xml")


def test_the_subject_hash_is_keyed_by_tenant_and_stable():
    assert logs.subject_hash(1, "u") == logs.subject_hash(1, "u") != logs.subject_hash(2, "u")
    assert re.fullmatch(r"[0-9a-f]{16}", logs.subject_hash(1, "\ud800"))  # any id a URL can hold
