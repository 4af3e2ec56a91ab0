"""The ingest endpoints: 202 with accepted/duplicates/cursor, status, flush, and clear 4xx on bad input."""

from __future__ import annotations

import json

import pytest

from memory.models import Chunk, Message, Subject

pytestmark = pytest.mark.django_db

URL = "/v1/subjects/{}/messages"


def pairs(n, prefix="m", start=0):
    out = []
    for i in range(start, start + n):
        out += [
            {"role": "user", "content": f"I have {i} cats", "idempotency_key": f"{prefix}-u{i}"},
            {"role": "assistant", "content": f"{i} cats is a lot", "idempotency_key": f"{prefix}-a{i}"},
        ]
    return out


def post(client, external_id, messages, **extra):
    return client.post(URL.format(external_id), {"messages": messages}, format="json", **extra)


def test_post_accepts_and_reports_cursor_then_retry_reports_duplicates(
    api_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        resp = post(api_client, "alice", pairs(3))
    assert resp.status_code == 202, resp.content
    body = resp.json()
    assert body["subject_created"] and body["cursor"] == 6 and body["chunks_created"] == 1
    assert [a["seq"] for a in body["accepted"]] == [1, 2, 3, 4, 5, 6]
    assert len(callbacks) == 1  # the dispatcher is enqueued only after commit
    again = post(api_client, "alice", pairs(3))
    assert again.status_code == 202
    assert again.json()["accepted"] == [] and len(again.json()["duplicates"]) == 6
    assert Message.objects.count() == 6


def test_ts_and_session_are_stored(api_client):
    msg = {
        "role": "user",
        "content": "hi",
        "idempotency_key": "t1",
        "ts": "2024-02-03T04:05:06Z",
        "session_id": "s9",
    }
    assert post(api_client, "ts", [msg]).status_code == 202
    stored = Message.objects.get()
    assert stored.session_id == "s9" and stored.ts.isoformat() == "2024-02-03T04:05:06+00:00"


@pytest.mark.parametrize(
    ("messages", "http", "field"),
    [
        ([{"role": "robot", "content": "x", "idempotency_key": "k"}], 400, "messages[0].role"),
        ([{"role": "user", "idempotency_key": "k"}], 400, "messages[0].content"),
        ([{"role": "user", "content": "", "idempotency_key": "k"}], 400, "messages[0].content"),
        ([{"role": "user", "content": None, "idempotency_key": "k"}], 400, "messages[0].content"),
        ([{"role": "user", "content": "x"}], 400, "messages[0].idempotency_key"),
        ([{"role": "user", "content": "x", "idempotency_key": "k", "ts": "soon"}], 400, "messages[0].ts"),
        (
            [{"role": "user", "content": "x", "idempotency_key": "k", "mood": "happy"}],
            400,
            "messages[0].mood",
        ),
        (["just a string"], 400, "messages[0]"),
        ([], 400, "messages"),
        ([{"role": "user", "content": "nul\u0000", "idempotency_key": "k"}], 400, "messages[0].content"),
        ([{"role": "user", "content": "esc \u001b[31m", "idempotency_key": "k"}], 400, "messages[0].content"),
    ],
)
def test_bad_messages_get_400_naming_the_field(api_client, messages, http, field):
    good = {"role": "user", "content": "fine", "idempotency_key": "good"}
    body = [good, *messages] if messages else messages
    if messages:
        field = field.replace("messages[0]", "messages[1]")
    resp = post(api_client, "bad", body)
    assert resp.status_code == http, resp.content
    assert resp.json()["field"] == field
    assert not Message.objects.exists()  # nothing of a refused batch is stored


def test_lone_surrogate_in_json_is_refused(api_client):
    raw = '{"messages": [{"role": "user", "content": "x \\ud800 y", "idempotency_key": "s"}]}'
    resp = api_client.post(URL.format("sur"), raw, content_type="application/json")
    assert resp.status_code == 400 and resp.json()["field"] == "messages[0].content"


def test_non_utf8_body_is_a_400(api_client):
    resp = api_client.post(
        URL.format("enc"), b'{"messages": [{"content": "\xff\xfe"}]}', content_type="application/json"
    )
    assert resp.status_code == 400
    assert "utf-8" in json.dumps(resp.json()).lower()


def test_body_that_is_not_an_object(api_client):
    resp = api_client.post(URL.format("arr"), "[1, 2]", content_type="application/json")
    assert resp.status_code == 400 and resp.json()["field"] == "messages"


def test_limits_are_413_with_the_field(api_client, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "MAX_MESSAGES_PER_CALL": 4, "MAX_MESSAGE_CHARS": 50}
    resp = post(api_client, "big", pairs(3))
    assert resp.status_code == 413 and resp.json()["field"] == "messages"
    resp = post(api_client, "big", [{"role": "user", "content": "y" * 51, "idempotency_key": "long"}])
    assert resp.status_code == 413 and resp.json()["field"] == "messages[0].content"


def test_replayed_key_with_new_content_is_409_and_keeps_the_original(api_client):
    post(api_client, "rk", pairs(1))
    changed = [{"role": "user", "content": "something else", "idempotency_key": "m-u0"}]
    resp = post(api_client, "rk", changed)
    assert resp.status_code == 409 and resp.json()["field"] == "messages[0].idempotency_key"
    assert Message.objects.get(idempotency_key="m-u0").content == "I have 0 cats"


def test_other_tenants_subject_is_invisible(api_client, other_tenant, make_api_client):
    post(api_client, "shared-name", pairs(3))
    other, _ = make_api_client(other_tenant)
    assert other.get("/v1/subjects/shared-name/ingest").status_code == 404
    assert other.post("/v1/subjects/shared-name/flush").status_code == 404
    resp = post(other, "shared-name", pairs(1))
    assert resp.status_code == 202 and resp.json()["subject_created"] and resp.json()["cursor"] == 2
    assert Subject.objects.filter(external_id="shared-name").count() == 2


def test_status_and_flush(api_client):
    post(api_client, "st", pairs(4))
    status = api_client.get("/v1/subjects/st/ingest")
    assert status.status_code == 200
    body = status.json()
    assert body["cursor"] == 8 and body["chunked_through_seq"] == 6 and body["unchunked_messages"] == 2
    assert body["chunks"]["pending"] == 1 and body["head_version"] == 0 and body["failures"] == []
    flushed = api_client.post("/v1/subjects/st/flush")
    assert flushed.status_code == 202
    assert flushed.json()["chunks_created"][0]["start_seq"] == 7
    assert flushed.json()["unchunked_messages"] == 0
    assert Chunk.objects.count() == 2


def test_scopes_are_enforced(tenant, make_api_client):
    reader, _ = make_api_client(tenant, scopes=("read",))
    assert post(reader, "sc", pairs(1)).status_code == 403
    assert reader.post("/v1/subjects/sc/flush").status_code in (403, 404)
    writer, _ = make_api_client(tenant, scopes=("ingest",))
    assert post(writer, "sc", pairs(1)).status_code == 202
    assert writer.get("/v1/subjects/sc/ingest").status_code == 403


def test_unauthenticated_is_401(client):
    assert client.post(URL.format("x"), {"messages": []}, content_type="application/json").status_code == 401


@pytest.mark.parametrize(
    "path", ["/v1/subjects/a%00b/messages", "/v1/subjects/a%07b/ingest", "/v1/subjects/a%00/flush"]
)
def test_control_characters_in_the_subject_id_are_a_400(api_client, path):
    if path.endswith("messages"):
        resp = api_client.post(path, {"messages": pairs(1)}, format="json")
    elif path.endswith("flush"):
        resp = api_client.post(path)
    else:
        resp = api_client.get(path)
    assert resp.status_code == 400 and resp.json()["field"] == "external_id"


# --- request size: the documented limits are reachable, and the byte limit is a JSON 413 ----------


def _long_messages(n, chars, prefix="big"):
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": (f"{i} " + "x" * chars)[:chars],
            "idempotency_key": f"{prefix}-{i}",
        }
        for i in range(n)
    ]


def test_a_3mb_body_within_the_documented_limits_is_accepted(api_client, settings):
    messages = _long_messages(150, settings.PERSONATREE["MAX_MESSAGE_CHARS"])
    raw = json.dumps({"messages": messages})
    assert len(raw.encode()) > 3_000_000  # over Django's default DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB)
    resp = api_client.post(URL.format("large"), raw, content_type="application/json")
    assert resp.status_code == 202, resp.content[:300]
    assert resp.json()["cursor"] == 150
    assert Message.objects.filter(subject__external_id="large").count() == 150


def test_one_character_over_the_limit_in_a_large_body_is_the_documented_413(api_client, settings):
    limit = settings.PERSONATREE["MAX_MESSAGE_CHARS"]
    messages = _long_messages(150, limit)
    messages[149]["content"] += "y"
    resp = post(api_client, "large", messages)
    assert resp.status_code == 413, resp.content[:300]
    body = resp.json()
    assert (body["code"], body["detail"], body["field"]) == (
        "payload_too_large",
        f"content has {limit + 1} characters; at most {limit} are allowed.",
        "messages[149].content",
    )


def test_the_byte_limit_sits_above_the_message_limits_and_below_django(settings):
    cfg = settings.PERSONATREE
    at_both_limits = cfg["MAX_MESSAGES_PER_CALL"] * cfg["MAX_MESSAGE_CHARS"] * 4  # 4 UTF-8 bytes/char
    assert cfg["MAX_REQUEST_BYTES"] > at_both_limits
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE > cfg["MAX_REQUEST_BYTES"]


def test_a_body_over_the_byte_limit_is_a_json_413(api_client, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "MAX_REQUEST_BYTES": 1_000_000}
    raw = json.dumps({"messages": _long_messages(60, 20_000)})
    resp = api_client.post(URL.format("huge"), raw, content_type="application/json")
    assert resp.status_code == 413, resp.content[:300]
    assert resp["Content-Type"] == "application/problem+json"
    error = resp.json()
    assert error["code"] == "payload_too_large" and "1000000 bytes" in error["detail"]
    assert not Subject.objects.filter(external_id="huge").exists()


def test_a_body_over_djangos_own_limit_is_the_same_json_413(api_client, settings):
    """DRF reads JSON through request.body, where Django's DATA_UPLOAD_MAX_MEMORY_SIZE fires first."""
    settings.PERSONATREE = {**settings.PERSONATREE, "MAX_REQUEST_BYTES": 100_000}
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 200_000
    raw = json.dumps({"messages": _long_messages(30, 10_000)})
    assert len(raw) > 300_000
    resp = api_client.post(URL.format("huge"), raw, content_type="application/json")
    assert resp.status_code == 413, resp.content[:300]
    body = resp.json()
    assert (body["code"], body["detail"]) == (
        "payload_too_large",
        f"The request body is {len(raw)} bytes; at most 100000 bytes are allowed.",
    )
    assert "field" not in body


def test_surrogate_field_name_in_a_message_is_a_400(api_client):
    raw = '{"messages": [{"role": "user", "content": "x", "idempotency_key": "s", "\\udfff": 1}]}'
    resp = api_client.post(URL.format("sur"), raw, content_type="application/json")
    assert resp.status_code == 400, resp.content[:300]
    body = resp.json()
    assert (body["code"], body["detail"], body["field"]) == (
        "invalid_text",
        "messages[0].\\udfff is not valid Unicode text (unpaired surrogate).",
        "messages[0].\\udfff",
    )


def test_unknown_top_level_field_is_a_400(api_client):
    resp = api_client.post(URL.format("top"), {"messages": pairs(1), "recreate": True}, format="json")
    assert resp.status_code == 400 and resp.json()["field"] == "recreate"


def test_bad_ts_values_are_a_400(api_client):
    for ts in ("2024-13-01T00:00", "0001-01-01T00:00+05:00", "\u00b2", 12):
        msg = {"role": "user", "content": "x", "idempotency_key": "t", "ts": ts}
        resp = post(api_client, "ts-bad", [msg])
        assert resp.status_code == 400, (ts, resp.content[:300])
        assert resp.json()["field"] == "messages[0].ts"


# --- erasure: a replay does not silently bring an erased subject back ------------------------------


def test_replay_after_erasure_is_refused_unless_recreation_is_asked_for(tenant, make_api_client):
    client, _ = make_api_client(tenant, scopes=["ingest", "read", "erase"])
    assert post(client, "gone", pairs(2)).status_code == 202
    assert client.delete("/v1/subjects/gone").status_code == 200

    replay = post(client, "gone", pairs(2))
    assert replay.status_code == 409, replay.content
    error = replay.json()
    assert error["code"] == "subject_erased" and error["field"] == "external_id"
    assert "recreate_erased" in error["detail"]
    assert not Subject.objects.filter(external_id="gone").exists() and not Message.objects.exists()

    not_bool = client.post(
        URL.format("gone"), {"messages": pairs(2), "recreate_erased": "yes"}, format="json"
    )
    assert not_bool.status_code == 400 and not_bool.json()["field"] == "recreate_erased"

    again = client.post(URL.format("gone"), {"messages": pairs(2), "recreate_erased": True}, format="json")
    assert again.status_code == 202, again.content
    assert again.json()["subject_created"] is True and again.json()["cursor"] == 4
    # The subject exists again: later calls need no flag.
    assert post(client, "gone", pairs(1, prefix="later")).status_code == 202


def test_erasure_in_one_tenant_does_not_block_the_same_id_in_another(tenant, other_tenant, make_api_client):
    client, _ = make_api_client(tenant, scopes=["ingest", "erase"])
    other, _ = make_api_client(other_tenant, scopes=["ingest"])
    assert post(client, "shared", pairs(1)).status_code == 202
    assert client.delete("/v1/subjects/shared").status_code == 200
    resp = post(other, "shared", pairs(1))
    assert resp.status_code == 202 and resp.json()["subject_created"] is True


def test_the_service_refuses_an_erased_id_for_every_caller(tenant):
    from memory.services.ingest import IncomingMessage, messages_ingest
    from memory.services.subjects import SubjectErased, subject_erase

    msgs = [IncomingMessage(role="user", content="hi", idempotency_key="k")]
    result = messages_ingest(tenant=tenant, external_id="svc", messages=msgs, enqueue=False)
    subject_erase(subject=result.subject)
    with pytest.raises(SubjectErased):
        messages_ingest(tenant=tenant, external_id="svc", messages=msgs, enqueue=False)
    again = messages_ingest(
        tenant=tenant, external_id=" svc ", messages=msgs, enqueue=False, recreate_erased=True
    )
    assert again.subject_created
