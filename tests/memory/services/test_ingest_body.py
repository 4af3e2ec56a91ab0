"""The ingest service reads the API's JSON body (ingest_body_parse) and is its only validator: the
API answers the service's error as the problem, field and code included."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.services import ServiceError
from memory.services.ingest import ingest_body_parse

GOOD = {"role": "user", "content": "hi", "idempotency_key": "k"}


def refusal(body) -> tuple[str | None, str, str]:
    with pytest.raises(ServiceError) as caught:
        ingest_body_parse(body)
    return caught.value.field, caught.value.code, caught.value.message


def test_messages_are_read_with_their_types():
    body = {
        "messages": [
            {**GOOD, "ts": "2024-02-03T04:05:06+02:00", "session_id": "  s1 "},
            {"role": "assistant", "content": 42, "idempotency_key": 7, "ts": "2024-02-03T04:05"},
        ],
        "recreate_erased": True,
    }
    messages, recreate = ingest_body_parse(body)
    assert recreate is True
    first, second = messages
    assert (first.role, first.content, first.idempotency_key, first.session_id) == ("user", "hi", "k", "s1")
    assert first.ts == datetime(2024, 2, 3, 2, 5, 6, tzinfo=UTC) and first.ts.utcoffset().total_seconds() == 0
    assert (second.content, second.idempotency_key, second.session_id) == ("42", "7", "")
    assert second.ts == datetime(2024, 2, 3, 4, 5, tzinfo=UTC)  # a naive time is UTC
    assert ingest_body_parse({"messages": [GOOD]})[1] is False


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ([GOOD], "messages", "invalid"),
        ({"messages": {}}, "messages", "invalid"),
        ({"messages": [GOOD], "recreate": True}, "recreate", "invalid"),
        ({"messages": [GOOD], "recreate_erased": "yes"}, "recreate_erased", "invalid"),
        ({"messages": [GOOD, "text"]}, "messages[1]", "invalid"),
        ({"messages": [{**GOOD, "mood": 1}]}, "messages[0].mood", "invalid"),
        ({"messages": [{"role": "user", "content": "x"}]}, "messages[0].idempotency_key", "required"),
        ({"messages": [{**GOOD, "content": None}]}, "messages[0].content", "null"),
        ({"messages": [{**GOOD, "role": ["user"]}]}, "messages[0].role", "invalid"),
        ({"messages": [{**GOOD, "session_id": True}]}, "messages[0].session_id", "invalid"),
        ({"messages": [{**GOOD, "ts": "2024-13-01T00:00"}]}, "messages[0].ts", "invalid"),
        ({"messages": [{**GOOD, "ts": 12}]}, "messages[0].ts", "invalid"),
        ({"messages": [{**GOOD, "ts": "0001-01-01T00:00+05:00"}]}, "messages[0].ts", "overflow"),
    ],
)
def test_shape_and_type_refusals_name_the_field(body, field, code):
    assert refusal(body)[:2] == (field, code)


def test_every_message_is_read_before_any_is_validated():
    """A type error in message 1 is reported before what message 0 says (an unknown role)."""
    body = {"messages": [{**GOOD, "role": "robot"}, {"role": "user", "content": "x"}]}
    assert refusal(body) == ("messages[1].idempotency_key", "required", "This field is required.")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("message", "field", "code", "detail"),
    [
        (
            {**GOOD, "ts": "soon"},
            "messages[0].ts",
            "invalid",
            "Datetime has wrong format. Use one of these formats instead: "
            "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].",
        ),
        (
            {**GOOD, "idempotency_key": ""},
            "messages[0].idempotency_key",
            "invalid",
            "idempotency_key must be 1-255 characters.",
        ),
        (
            {**GOOD, "content": "nul\u0000"},
            "messages[0].content",
            "invalid_text",
            "content contains the control character U+0000 at character 3.",
        ),
    ],
)
def test_the_api_answers_the_services_refusal(api_client, message, field, code, detail):
    response = api_client.post("/v1/subjects/body/messages", {"messages": [message]}, format="json")
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert (body["field"], body["code"], body["detail"]) == (field, code, detail)
