"""The client's sans-IO core without a server: batching, retry decisions, error mapping.

A plan is driven here by hand (:func:`drive`): every request it yields is answered by a
function of the test, every ``Sleep`` is recorded instead of slept.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from personatree_client import (
    APIConnectionError,
    APITimeoutError,
    BadRequestError,
    IdempotencyConflictError,
    IngestBlockedError,
    Message,
    ModelUnavailableError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitError,
    ResponseDecodeError,
    ServerError,
    ServiceUnavailableError,
    SubjectErasedError,
    WaitTimeoutError,
)
from personatree_client._core import Operations
from personatree_client._protocol import (
    ApiRequest,
    NoResponse,
    Response,
    RetryPolicy,
    Sleep,
    retry_after_seconds,
)
from personatree_client.errors import error_for


def drive(plan, answer):
    """Run ``plan``: ``answer(request) -> Response | NoResponse``. Returns (result, requests, sleeps)."""
    requests, sleeps, outcome = [], [], None
    while True:
        try:
            action = plan.send(outcome)
        except StopIteration as done:
            return done.value, requests, sleeps
        if isinstance(action, Sleep):
            sleeps.append(action.seconds)
            outcome = None
        else:
            requests.append(action)
            outcome = answer(action)


def ingest_answer(request: ApiRequest) -> Response:
    """What the server answers to a batch: every message accepted, seqs continuing per call."""
    body = json.loads(request.content)
    ingest_answer.seq = getattr(ingest_answer, "seq", 0)
    accepted = []
    for m in body["messages"]:
        ingest_answer.seq += 1
        accepted.append({"idempotency_key": m["idempotency_key"], "seq": ingest_answer.seq})
    data = {
        "subject": "u",
        "subject_created": accepted[0]["seq"] == 1,
        "accepted": accepted,
        "duplicates": [],
        "cursor": ingest_answer.seq,
        "chunks_created": 1,
    }
    return Response(202, {}, json.dumps(data).encode())


def error(status: int, code: str, *, field=None, headers=None) -> Response:
    body = {
        "status": status,
        "code": code,
        "detail": f"{code} happened",
        **({"field": field} if field else {}),
    }
    return Response(status, headers or {}, json.dumps(body).encode())


@pytest.fixture(autouse=True)
def _fresh_seq():
    ingest_answer.seq = 0


def ops(**kw) -> Operations:
    return Operations(retry=RetryPolicy(max_retries=kw.pop("max_retries", 3)), **kw)


def test_ingest_splits_by_count_keeps_order_and_merges():
    messages = [Message("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(25)]
    result, requests, sleeps = drive(ops(max_batch_messages=10).ingest("u", messages), ingest_answer)
    sent = [m for r in requests for m in json.loads(r.content)["messages"]]
    assert [len(json.loads(r.content)["messages"]) for r in requests] == [10, 10, 5]
    assert [m["content"] for m in sent] == [f"turn {i}" for i in range(25)]
    assert [r.idempotency_key for r in result.accepted] == [m.idempotency_key for m in messages]
    assert [r.seq for r in result.accepted] == list(range(1, 26))
    assert (result.batches, result.cursor, result.chunks_created, result.subject_created) == (3, 25, 3, True)
    assert all(r.method == "POST" and r.path == "/v1/subjects/u/messages" for r in requests)
    assert sleeps == []


def test_ingest_splits_by_bytes_and_recreates_only_in_the_first_batch():
    messages = [{"role": "user", "content": "é" * 300, "idempotency_key": f"k{i}"} for i in range(12)]
    limit = 1500
    _, requests, _ = drive(
        ops(max_batch_bytes=limit).ingest("u", messages, recreate_erased=True), ingest_answer
    )
    bodies = [json.loads(r.content) for r in requests]
    assert len(requests) > 1 and all(len(r.content) <= limit for r in requests)
    assert [b.get("recreate_erased") for b in bodies] == [True] + [None] * (len(bodies) - 1)
    assert [m["idempotency_key"] for b in bodies for m in b["messages"]] == [f"k{i}" for i in range(12)]


def test_ingest_message_alone_over_the_byte_limit_is_sent_alone():
    messages = [
        Message("user", "x" * 50, idempotency_key="a"),
        Message("user", "y" * 5000, idempotency_key="b"),
    ]
    _, requests, _ = drive(ops(max_batch_bytes=1000).ingest("u", messages), ingest_answer)
    batches = [[m["idempotency_key"] for m in json.loads(r.content)["messages"]] for r in requests]
    assert batches == [["a"], ["b"]]


def test_ingest_keys_are_made_once_and_kept_by_message_objects():
    m = Message("user", "hello")
    assert m.idempotency_key and Message("user", "hello").idempotency_key != m.idempotency_key
    body = m.to_json()
    assert body == {"role": "user", "content": "hello", "idempotency_key": m.idempotency_key}
    ts = datetime(2024, 4, 2, 10, 0, tzinfo=UTC)
    assert Message("user", "x", "k", ts=ts, session_id="s1").to_json()["ts"] == "2024-04-02T10:00:00+00:00"
    with pytest.raises(TypeError):
        Message.coerce(("user", "hi"))


def test_a_malformed_message_fails_before_any_batch_is_sent():
    messages = [Message("user", f"m{i}") for i in range(5)] + [{"role": "user", "text": "typo"}]
    with pytest.raises(TypeError, match="text"):
        drive(ops(max_batch_messages=2).ingest("u", messages), ingest_answer)
    assert ingest_answer.seq == 0


def test_ingest_error_in_a_later_batch_carries_partial_and_a_call_wide_field():
    def answer(request):
        if ingest_answer.seq >= 4:  # the third batch
            return error(409, "idempotency_conflict", field="messages[1].idempotency_key")
        return ingest_answer(request)

    messages = [Message("user", f"m{i}", idempotency_key=f"k{i}") for i in range(6)]
    with pytest.raises(IdempotencyConflictError) as info:
        drive(ops(max_batch_messages=2).ingest("u", messages), answer)
    err = info.value
    assert (err.status, err.code, err.field) == (409, "idempotency_conflict", "messages[5].idempotency_key")
    assert [r.idempotency_key for r in err.partial.accepted] == ["k0", "k1", "k2", "k3"]


def test_ingest_of_nothing_lets_the_server_refuse_it():
    result = []

    def answer(request):
        result.append(json.loads(request.content))
        return error(400, "empty", field="messages")

    with pytest.raises(BadRequestError):
        drive(ops().ingest("u", []), answer)
    assert result == [{"messages": []}]


def test_subject_ids_are_one_escaped_path_segment():
    tree = {"subject": "a/b c?d", "version": 3, "schema_id": "s", "schema_version": 1, "tree": {"a/b": "v"}}
    answer = Response(200, {}, json.dumps(tree).encode())
    result, requests, _ = drive(ops().tree("a/b c?d", as_of=3), lambda r: answer)
    assert requests[0].path == "/v1/subjects/a%2Fb%20c%3Fd/tree" and requests[0].params == {"as_of": "3"}
    assert result.tree == {"a/b": "v"} and result.version == 3


def test_retry_after_seconds_and_http_date():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    in_12_s = format_datetime(now + timedelta(seconds=12), usegmt=True)
    assert retry_after_seconds({"retry-after": in_12_s}, now=now) == 12
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_429_and_503_are_retried_after_retry_after_then_succeed():
    answers = iter(
        [
            error(429, "throttled", headers={"retry-after": "2"}),
            error(503, "model_unavailable", headers={"retry-after": "1"}),
            ingest_answer,
        ]
    )

    def answer(request):
        nxt = next(answers)
        return nxt(request) if callable(nxt) else nxt

    result, requests, sleeps = drive(ops().ingest("u", [Message("user", "hi")]), answer)
    assert sleeps == [2.0, 1.0] and len(requests) == 3
    assert requests[0].content == requests[2].content  # the same keys: a replay is a duplicate, never a copy
    assert result.cursor == 1


def test_retries_are_bounded_and_the_last_error_is_raised():
    with pytest.raises(RateLimitError) as info:
        drive(
            ops(max_retries=2).versions("u").next_page(),
            lambda r: error(429, "throttled", headers={"retry-after": "1"}),
        )
    assert info.value.retry_after == 1.0 and info.value.status == 429


def test_a_retry_after_longer_than_max_wait_is_not_waited_for():
    plan = Operations(retry=RetryPolicy(max_wait=5)).tree("u")
    with pytest.raises(RateLimitError) as info:
        drive(plan, lambda r: error(429, "throttled", headers={"retry-after": "60"}))
    assert info.value.retry_after == 60.0


def test_without_retry_after_the_wait_backs_off():
    policy = RetryPolicy(max_retries=3, backoff=1.0, max_wait=30)
    request = ApiRequest("GET", "/v1/x")
    waits = [policy.delay(Response(503, {}, b""), attempt, request) for attempt in range(3)]
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0 and 2.0 <= waits[2] <= 4.0
    assert policy.delay(Response(503, {}, b""), 3, request) is None
    assert policy.delay(Response(500, {}, b""), 0, request) is None
    assert policy.delay(Response(429, {"retry-after": "0"}, b""), 0, request) > 0  # "0": not a busy loop


def test_no_answer_is_retried_only_when_it_is_safe():
    policy = RetryPolicy()
    read_timeout = NoResponse(httpx.ReadTimeout("slow"))
    refused = NoResponse(httpx.ConnectError("refused"))
    erase = ApiRequest("DELETE", "/v1/subjects/u", idempotent=False)
    assert policy.delay(read_timeout, 0, ApiRequest("GET", "/v1/x")) is not None
    assert policy.delay(read_timeout, 0, erase) is None  # may have erased: a second erase would 404
    assert policy.delay(refused, 0, erase) is not None  # never reached the server


def test_no_answer_maps_to_connection_and_timeout_errors():
    with pytest.raises(APITimeoutError):
        drive(ops(max_retries=1).tree("u"), lambda r: NoResponse(httpx.ReadTimeout("slow")))
    with pytest.raises(APIConnectionError) as info:
        drive(ops(max_retries=0).erase("u"), lambda r: NoResponse(httpx.ConnectError("refused")))
    assert not isinstance(info.value, APITimeoutError)
    assert isinstance(info.value.__cause__, httpx.ConnectError)


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "invalid_role", BadRequestError),
        (404, "not_found", NotFoundError),
        (409, "subject_erased", SubjectErasedError),
        (409, "idempotency_conflict", IdempotencyConflictError),
        (413, "payload_too_large", PayloadTooLargeError),
        (503, "model_unavailable", ModelUnavailableError),
    ],
)
def test_error_bodies_map_to_classes(status, code, cls):
    errors = [{"field": "messages[0].role", "code": code, "detail": "m"}]
    body = {"status": status, "code": code, "detail": "m", "field": "messages[0].role", "errors": errors}
    err = error_for(status, json.dumps(body).encode())
    assert type(err) is cls
    assert (err.status, err.code, err.message, err.field) == (status, code, "m", "messages[0].role")
    assert err.details == errors and str(err) == f"{status} {code}: m (messages[0].role)"


def test_problem_details_and_non_json_errors_are_read_too():
    problem = {
        "type": "about:blank",
        "title": "Not Found",
        "status": 404,
        "detail": "Subject not found.",
        "code": "not_found",
    }
    err = error_for(404, json.dumps(problem).encode())
    assert isinstance(err, NotFoundError) and err.message == "Subject not found." and err.code == "not_found"
    html = error_for(502, b"<html>Bad Gateway</html>")
    assert isinstance(html, ServerError) and html.code == "http_502" and "Bad Gateway" in html.message
    throttled = {"status": 429, "code": "throttled", "detail": "m", "retry_after_s": 9}
    assert error_for(429, json.dumps(throttled).encode()).retry_after == 9
    down_body = {"status": 503, "code": "unavailable", "detail": "m", "error_id": "e-1"}
    down = error_for(503, json.dumps(down_body).encode(), 30)
    assert isinstance(down, ServiceUnavailableError) and (down.error_id, down.retry_after) == ("e-1", 30)


def test_problem_members_and_the_request_id_are_kept():
    errors = [{"field": "messages[0].role", "code": "invalid_role", "detail": "Unknown role."}]
    problem = {
        "type": "https://personatree.dev/problems/invalid_role",
        "title": "Unknown message role",
        "status": 400,
        "detail": "Unknown role.",
        "instance": "/v1/subjects/u/messages",
        "code": "invalid_role",
        "field": "messages[0].role",
        "errors": errors,
    }
    err = error_for(400, json.dumps(problem).encode(), request_id="rid-1")
    assert type(err) is BadRequestError
    assert (err.code, err.message, err.field, err.details) == (
        "invalid_role",
        "Unknown role.",
        "messages[0].role",
        errors,
    )
    assert (err.type, err.title, err.instance, err.request_id) == (
        problem["type"],
        "Unknown message role",
        "/v1/subjects/u/messages",
        "rid-1",
    )


def test_a_success_answer_that_is_not_the_expected_json_is_a_decode_error():
    with pytest.raises(ResponseDecodeError) as info:
        drive(ops().tree("u"), lambda r: Response(200, {}, b"<html></html>"))
    assert info.value.status == 200
    with pytest.raises(ResponseDecodeError):
        drive(ops().tree("u"), lambda r: Response(200, {}, b'{"subject": "u"}'))


def status_answer(cursor: int, applied: int, *, pending: int = 0, unchunked: int = 0, failed: bool = False):
    body = {
        "subject": "u",
        "cursor": cursor,
        "chunked_through_seq": cursor - unchunked,
        "applied_through_seq": applied,
        "unchunked_messages": unchunked,
        "chunks": {"pending": pending, "processing": 0, "applied": 1, "failed": int(failed)},
        "pending_chunks": pending,
        "head_version": 1,
        "last_applied_version": 1,
        "last_applied_at": "2026-01-01T00:00:00Z",
        "blocked": failed,
        "failures": [
            {"chunk_id": 9, "status": "failed", "start_seq": 7, "end_seq": 12, "attempts": 5, "error": "boom"}
        ]
        if failed
        else [],
    }
    return Response(200, {}, json.dumps(body).encode())


def test_wait_until_applied_flushes_then_polls_until_caught_up():
    flushed = {"chunks_created": [{"chunk_id": 3, "start_seq": 5, "end_seq": 6}]}
    answers = iter([status_answer(6, 4, pending=1), status_answer(6, 4, pending=1), status_answer(6, 6)])

    def answer(request):
        if request.path.endswith("/flush"):
            return Response(
                202, {}, json.dumps({**flushed, **json.loads(status_answer(6, 4).content)}).encode()
            )
        return next(answers)

    status, requests, sleeps = drive(ops().wait_until_applied("u", poll_interval=0.2), answer)
    assert [r.path.rsplit("/", 1)[1] for r in requests] == ["flush", "ingest", "ingest", "ingest"]
    assert sleeps == [0.2, 0.2] and status.caught_up and status.last_applied_at.tzinfo is not None


def test_wait_until_applied_with_a_cursor_and_no_flush():
    status, requests, _ = drive(
        ops().wait_until_applied("u", cursor=4, flush=False), lambda r: status_answer(6, 4, unchunked=2)
    )
    assert len(requests) == 1 and status.applied_through_seq == 4 and not status.caught_up


def test_wait_until_applied_raises_on_a_blocked_subject_and_after_its_timeout():
    with pytest.raises(IngestBlockedError) as info:
        drive(ops().wait_until_applied("u", flush=False), lambda r: status_answer(12, 6, failed=True))
    assert info.value.status.failures[0].error == "boom"

    plan = ops().wait_until_applied("u", flush=False, timeout=0.3, poll_interval=0.1)
    requests = []

    def pending(request):
        requests.append(request)
        return status_answer(6, 0, pending=2)

    outcome = None
    with pytest.raises(WaitTimeoutError) as info:  # driven with real sleeps: the deadline is real time
        while True:
            action = plan.send(outcome)
            if isinstance(action, Sleep):
                time.sleep(action.seconds)
                outcome = None
            else:
                outcome = pending(action)
    assert isinstance(info.value, TimeoutError) and info.value.status.pending_chunks == 2
    assert 2 <= len(requests) <= 4


def version(number: int) -> dict:
    return {
        "number": number,
        "parent": number - 1 or None,
        "created_by": "chunk",
        "chunk_id": number,
        "note": "",
    }


def read_pages(listing, answer):
    """Every page of ``listing``, each plan driven by :func:`drive`: (pages of items, requests)."""
    read, requests = [], []
    while not listing.exhausted:
        items, sent, _ = drive(listing.next_page(), answer)
        read.append(items)
        requests.extend(sent)
    return read, requests


def test_versions_follow_every_next_page_by_its_cursor_on_our_own_url():
    internal = "http://10.0.0.7:8000/v1/subjects/u/versions"
    pages = {
        None: {"versions": [version(5), version(4)], "next": f"{internal}?cursor=c1&page_size=2"},
        "c1": {"versions": [version(3), version(2)], "next": f"{internal}?page_size=2&cursor=c2"},
        "c2": {"versions": [version(1)], "next": None},
    }

    def answer(request):
        page = pages[(request.params or {}).get("cursor")]
        return Response(200, {}, json.dumps({"subject": "u", "head_version": 5, **page}).encode())

    read, requests = read_pages(ops().versions("u", page_size=2), answer)
    assert [[v.number for v in page] for page in read] == [[5, 4], [3, 2], [1]]
    assert all(r.path == "/v1/subjects/u/versions" for r in requests)
    assert [r.params for r in requests] == [
        {"page_size": "2"},
        {"page_size": "2", "cursor": "c1"},
        {"page_size": "2", "cursor": "c2"},
    ]


def test_export_pages_are_merged_and_the_last_page_gives_the_tree():
    pages = [
        {
            "head_version": 2,
            "tree": {"a": "1"},
            "versions": [version(1)],
            "ops": [{"id": 1}],
            "next": "/x?cursor=p2",
        },
        {
            "head_version": 3,
            "tree": {"a": "3"},
            "versions": [version(2), version(3)],
            "ops": [],
            "next": None,
        },
    ]
    answers = iter(pages)

    def answer(request):
        return Response(
            200, {}, json.dumps({"subject": "u", "schema": {"id": "s"}, **next(answers)}).encode()
        )

    export, requests, _ = drive(ops().export("u"), answer)
    assert [v["number"] for v in export.versions] == [1, 2, 3] and export.ops == ({"id": 1},)
    assert (export.head_version, export.tree, export.schema) == (3, {"a": "3"}, {"id": "s"})
    assert requests[0].params is None and requests[1].params == {"cursor": "p2"}


def test_a_page_plan_asks_for_one_page_and_a_read_list_has_no_next_page():
    listing = ops().subjects(page_size=1)
    subject = {"external_id": "a", "schema_id": "s", "schema_version": 1, "head_version": 0}
    first = {"subjects": [subject], "next": "/v1/subjects?cursor=c1"}
    items, requests, _ = drive(listing.next_page(), lambda r: Response(200, {}, json.dumps(first).encode()))
    assert [s.external_id for s in items] == ["a"] and len(requests) == 1 and not listing.exhausted
    last = {"subjects": [], "next": None}
    items, requests, _ = drive(listing.next_page(), lambda r: Response(200, {}, json.dumps(last).encode()))
    assert items == () and requests[0].params == {"page_size": "1", "cursor": "c1"} and listing.exhausted
    with pytest.raises(RuntimeError, match="every page was read"):
        next(listing.next_page())


def test_a_repeated_cursor_is_a_decode_error_on_the_page_that_repeats_it():
    page = {"subject": "u", "head_version": 1, "versions": [version(1)], "next": "/x?cursor=same"}
    listing = ops().versions("u")

    def answer(request):
        return Response(200, {}, json.dumps(page).encode())

    first, _, _ = drive(listing.next_page(), answer)
    assert [v.number for v in first] == [1]
    with pytest.raises(ResponseDecodeError, match="repeats a cursor"):
        drive(listing.next_page(), answer)


@pytest.mark.parametrize(
    "page",
    [
        {"versions": [], "next": "/x?page_size=2"},  # a next link without a cursor
        {"next": None},  # no list
        {"versions": [{"number": 1}], "next": None},  # an item without its fields
    ],
)
def test_a_malformed_page_is_a_decode_error(page):
    with pytest.raises(ResponseDecodeError) as info:
        drive(ops().versions("u").next_page(), lambda r: Response(200, {}, json.dumps(page).encode()))
    assert info.value.status == 200
