"""Schemathesis fuzzing of the v1 API over its own OpenAPI schema, against a live server.

The test starts pytest-django's ``live_server`` (a threaded WSGI server on loopback), loads the
schema the server itself serves (``/api/schema/``) and, for every operation, sends
schemathesis-generated requests in both modes — *positive* (bodies, query and path values that
match the schema) and *negative* (values that violate it) — with tenant A's API key, which holds
every scope. Two tenants are seeded: each has a subject ``fuzz-shared`` (the same external id in
both tenants) and tenant B also ``fuzz-b-only``; every tree value and message of a tenant holds
that tenant's canary string. Path ids are drawn from the generator, A's/B's shared id and B's
own id. Before that, a fixed sweep sends what the generator never does (paths no route matches,
every method on every path, non-JSON and non-UTF-8 bodies, a body over the byte limit, HTML
``Accept`` headers). On every response:

- the status is below 500;
- the body is JSON (``application/json`` or ``application/problem+json``, and it parses);
- tenant B's canary never appears (tenant isolation, whatever the input);
- the contract holds (schemathesis's checks, :data:`CONTRACT_CHECKS`): a request the document says
  is valid is accepted (``positive_data_acceptance``: not a 400, 413 or 422, but for the refusals
  the operation lists as ``x-refusals``: ``tests/fuzz/contract.py``), the status is one the
  operation documents, the Content-Type is the documented one for that status and the body matches
  its documented schema (problem details included).

The responder model is a double that answers with the whole prompt it was given, so anything
that reaches ``/answer``'s model shows in the response and is checked for B's canary too. Deep
mode's evidence index is reported unavailable (the fast fallback path); recall isolation over a
real Milvus Lite index is tested in ``tests/memory/recall``. Then the stateful phase: schemathesis
follows the document's OpenAPI links (:mod:`memory.api.openapi_links`: create a subject -> ingest
-> tree -> leaf edit -> versions -> export -> erase; webhook create -> deliveries -> rotate secret;
key create -> rotate -> revoke) with the same checks, ``PERSONATREE_FUZZ_STATEFUL`` runs
(default 10). Rotating and revoking a key run last, on their own key (tenant A's second admin key),
so that nothing after them is refused for a revoked key.

Size: ``PERSONATREE_FUZZ_EXAMPLES`` examples per operation and mode (default 25: about 1,000
requests with the sweep and the stateful phase; 315 s on 2 cores at load average 15 with other
work running, of which the sweep 94 s and the stateful phase 17 s), within ``PERSONATREE_FUZZ_BUDGET_S``
seconds (default 60, shared equally by the operations and modes; each sends at least one). The five
operations whose only input is the subject id in the path have no negative cases (any URL
segment is a valid string). A long run, about 10,000 requests (3,320 took 222 s here, so about
12 minutes)::

    PERSONATREE_TEST_DB=test_pt_fuzz PERSONATREE_FUZZ_EXAMPLES=770 PERSONATREE_FUZZ_BUDGET_S=1800 \
        .venv/bin/pytest tests/fuzz -s -p no:logging

The long run of the issue (schemathesis's command line against a live server on PostgreSQL) is
``tests/fuzz/long_run.py``.

``PERSONATREE_FUZZ_SEED`` fixes Hypothesis' seed (to replay a run). The figures are printed and
written to ``var/test-results/fuzz.json`` (``fuzz.requests``, ``fuzz.5xx``, ...).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
import schemathesis
from django.conf import settings as django_settings
from hypothesis import HealthCheck, Phase, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memory.models import ApiKey, Subject
from memory.recall import runtime
from memory.recall.index import IndexUnavailable
from serving.engines.base import Generation
from tests.factories import ApiKeyFactory, MessageFactory, SubjectFactory, TenantFactory, TreeVersionFactory
from tests.fuzz.contract import positive_data_acceptance_or_listed

EXAMPLES = int(os.environ.get("PERSONATREE_FUZZ_EXAMPLES", "25"))
STATEFUL_RUNS = int(os.environ.get("PERSONATREE_FUZZ_STATEFUL", "10"))
BUDGET_S = float(os.environ.get("PERSONATREE_FUZZ_BUDGET_S", "60"))

# The budget bounds the requests; generation and the last request of each share come on top.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(int(BUDGET_S) + 900)]
SEED = os.environ.get("PERSONATREE_FUZZ_SEED")
REQUEST_TIMEOUT_S = 180.0  # a loaded CI machine: the first query of a run loads its models
EDGE_MAX_REQUEST_BYTES = 4096
REPORT = Path(django_settings.BASE_DIR) / "var" / "test-results" / "fuzz.json"

# Every request carries tenant A's key (negative data never drops it: an unauthenticated request
# only reaches the 401); reproduction commands are printed as sent (with $KEY_A for the key).
CONFIG = schemathesis.Config.from_dict(
    {"generation": {"with-security-parameters": False}, "output": {"sanitization": {"enabled": False}}}
)
#: What every response is held to beside the checks of :func:`_problems`.
CONTRACT_CHECKS = [
    not_a_server_error,
    positive_data_acceptance_or_listed,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
#: Run last, on their own key: rotating or revoking the key every other request carries would
#: turn the rest of the run into 401s.
KEY_ENDS = {("POST", "/v1/keys/{prefix}/rotate"), ("DELETE", "/v1/keys/{prefix}")}
SHARED_ID = "fuzz-shared"
B_ONLY_ID = "fuzz-b-only"
CANARY_A = "canary-A-7f3e1c9d2b"
CANARY_B = "canary-B-4a8d6e0f5c"
JSON_TYPES = ("application/json", "application/problem+json")


def _seed_tenant(canary: str, external_ids: list[str]) -> str:
    """A tenant with an all-scope key and subjects whose messages and tree hold ``canary``."""
    tenant = TenantFactory()
    for external_id in external_ids:
        subject = SubjectFactory(tenant=tenant, external_id=external_id)
        for seq, role in enumerate(["user", "assistant", "user", "assistant"], start=1):
            MessageFactory(subject=subject, seq=seq, role=role, content=f"{role} says {canary} #{seq}")
        head = None
        for number in (1, 2):
            snapshot = {
                "body/appearance/style": f"style {canary} v{number}",
                "body/health/injuries": f"injury {canary} v{number}",  # special tier
            }
            head = TreeVersionFactory(subject=subject, number=number, snapshot=snapshot, parent=head)
        Subject.objects.filter(pk=subject.pk).update(head=head, head_version=2)
    _, raw = ApiKeyFactory.create_raw(tenant=tenant, scopes=list(ApiKey.SCOPES))
    return raw


def _second_key(raw: str) -> tuple[str, str]:
    """(prefix, raw key) of another all-scope key of ``raw``'s tenant (for rotation and revocation)."""
    tenant = ApiKey.objects.get(prefix=raw[: len(ApiKey.PREFIX) + 8]).tenant
    key, second = ApiKeyFactory.create_raw(tenant=tenant, scopes=list(ApiKey.SCOPES))
    return key.prefix, second


class EchoResponder:
    """The responder model's double: answers with the prompt, so whatever reached it is visible."""

    model_id = "fuzz-echo"

    def generate(self, prompts, json_schema=None):
        return [Generation(text=f"{p.static}\n{p.dynamic}", model_id=self.model_id) for p in prompts]


def _no_index():
    raise IndexUnavailable("evidence index not used by the fuzz test")


@dataclass
class Figures:
    requests: int = 0
    server_errors: int = 0
    by_status: Counter = field(default_factory=Counter)
    by_operation: Counter = field(default_factory=Counter)
    error_codes: Counter = field(default_factory=Counter)
    canary_a_seen: int = 0
    skipped_over_budget: int = 0
    edge_requests: int = 0
    request_seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)
    contract_failures: Counter = field(default_factory=Counter)
    stateful_runs: int = 0
    stateful_seconds: float = 0.0
    edge_seconds: float = 0.0

    def record(self, label: str, case, response, headers: dict) -> None:
        """Count a generated request's response and keep every check it fails."""
        self.requests += 1
        self.by_status[response.status_code] += 1
        self.by_operation[label] += 1
        if response.status_code >= 500:
            self.server_errors += 1
        if CANARY_A.encode() in response.content:
            self.canary_a_seen += 1
        if 400 <= response.status_code < 500:
            self.error_codes[f"{label} {_error_code(response.content)}"] += 1
        content_type = (response.headers.get("content-type") or [""])[0]
        problems = _problems(response.status_code, content_type, response.content)
        for check, message in _contract(case, response, headers):
            self.contract_failures[check] += 1
            problems.append(message)
        curl = case.as_curl_command(headers={"Authorization": "Bearer $KEY_A"})
        for problem in problems:
            self.failures.append(
                f"{label}: {problem}; status {response.status_code}; body {response.content[:300]!r}\n    {curl}"
            )

    def as_dict(self, seconds: float) -> dict:
        return {
            "fuzz.requests": self.requests,
            "fuzz.5xx": self.server_errors,
            "fuzz.failures": len(self.failures),
            "fuzz.edge_requests": self.edge_requests,
            "fuzz.seconds": round(seconds, 1),
            "fuzz.request_seconds": round(self.request_seconds, 1),
            "fuzz.examples_per_operation_and_mode": EXAMPLES,
            "fuzz.skipped_over_budget": self.skipped_over_budget,
            "fuzz.canary_a_responses": self.canary_a_seen,
            "fuzz.by_status": {str(k): v for k, v in sorted(self.by_status.items())},
            "fuzz.by_operation": dict(sorted(self.by_operation.items())),
            "fuzz.no_cases": self.not_applicable,
            "fuzz.error_codes": dict(sorted(self.error_codes.items())),
            "fuzz.contract_failures": dict(sorted(self.contract_failures.items())),
            "fuzz.stateful_runs": self.stateful_runs,
            "fuzz.stateful_seconds": round(self.stateful_seconds, 1),
            "fuzz.edge_seconds": round(self.edge_seconds, 1),
        }


def _problems(status: int, content_type: str, content: bytes, *, head: bool = False) -> list[str]:
    problems = []
    if status >= 500:
        problems.append(f"server error {status}")
    content_type = content_type.split(";")[0].strip().lower()
    if content_type not in JSON_TYPES:
        problems.append(f"Content-Type {content_type or '(none)'} is not JSON")
    elif not head:  # HEAD: GET's headers without the body
        try:
            json.loads(content)
        except ValueError:
            problems.append("body does not parse as JSON")
    if CANARY_B.encode() in content:
        problems.append("tenant B's canary in a response to tenant A's key")
    return problems


INDEX = re.compile(r"\[\d+\]")


def _error_code(content: bytes) -> str:
    try:
        error = json.loads(content)
        field = str(error.get("field") or "")
        return f"{error['code']} {INDEX.sub('[i]', field)}".strip()
    except (ValueError, KeyError, TypeError):
        return "?"


def _edge_requests(operations) -> list[tuple[str, str, dict, bytes]]:
    """What the generator never sends: (method, path, headers, body).

    Paths no route matches (an id holding ``%2F``, an empty id, a trailing slash), every method on
    every path, bodies that are not JSON or not UTF-8, a body over the byte limit, and ``Accept``
    headers of a browser or of HTML only.
    """
    paths = sorted({op.path for op in operations})
    posts = sorted(
        {op.path.replace("{external_id}", SHARED_ID) for op in operations if op.method.upper() == "POST"}
    )
    concrete = [p.replace("{external_id}", SHARED_ID) for p in paths]
    unrouted = [
        *(p.replace("{external_id}", "a%2Fb") for p in paths),
        *(p.replace("{external_id}", "") for p in paths),
        *(p + "/" for p in concrete),
        "/v1/",
        "/v1/subjects/",
        "/v1/nope",
    ]
    # Every method on every route, for an id no tenant has (DELETE must not erase A's subject here).
    absent = [p.replace("{external_id}", "fuzz-absent") for p in paths]
    edges = [
        (method, path, {}, b"")
        for path in absent + unrouted[:1]
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD")
    ]
    edges += [(method, path, {}, b"") for path in unrouted for method in ("GET", "POST")]
    json_body = {"Content-Type": "application/json"}
    bodies = [
        ({"Content-Type": "text/plain"}, b'{"query": "hi"}'),
        ({"Content-Type": "application/x-www-form-urlencoded"}, b"query=hi"),
        ({"Content-Type": "multipart/form-data; boundary=x"}, b"--x\r\n\r\nhi\r\n--x--\r\n"),
        ({"Content-Type": "application/xml"}, b"<query>hi</query>"),
        ({}, b'{"query": "hi"}'),
        ({"Content-Type": "application/json; charset=utf-16"}, b'{"query": "hi"}'),
        ({"Content-Type": "application/json; charset=nope"}, b'{"query": "hi"}'),
        (json_body, b'{"query": "\xff\xfe"}'),
        (json_body, b"[" * 100_000),
        (json_body, b'{"query": "%s"}' % (b"x" * (EDGE_MAX_REQUEST_BYTES + 1))),
    ]
    edges += [("POST", path, headers, body) for path in posts for headers, body in bodies]
    accepts = ("text/html", "text/html,application/xhtml+xml,*/*;q=0.8", "application/xml")
    edges += [("GET", path, {"Accept": a}, b"") for path in concrete[-1:] + unrouted[:1] for a in accepts]
    return edges


def _operations(schema) -> list:
    operations = [result.ok() for result in schema.get_all_operations()]
    # Erasure last: it empties tenant A's seeded subject, which the other operations read; then
    # the key's rotation and revocation (on their own key).
    return sorted(
        operations,
        key=lambda op: (
            (op.method.upper(), op.path) in KEY_ENDS,
            op.method.upper() == "DELETE",
            op.path,
            op.method,
        ),
    )


def _contract(case, response, headers: dict) -> list[tuple[str, str]]:
    """(check name, message) of every contract check the response fails."""
    try:
        case.validate_response(response, checks=CONTRACT_CHECKS, headers=headers)
    except FailureGroup as group:
        return [(type(f).__name__, f"{f.title}: {f.message}"[:600]) for f in group.exceptions]
    return []


def _strategy(schema, operation, mode: GenerationMode, key_prefix: str):
    if "{prefix}" in operation.path:
        ids, name = [None, key_prefix], "prefix"
    else:
        ids, name = [None, SHARED_ID, B_ONLY_ID], "external_id"
    branches = [operation.as_strategy(mode, path_parameters={name: i} if i else None) for i in ids]
    if mode == GenerationMode.POSITIVE:
        branches.extend(schema.get_strategies_from_examples(operation))
    return st.one_of(branches)


def _fuzz(strategy, send, label: str) -> bool:
    """Run ``send(case, label)`` on ``EXAMPLES`` cases drawn from ``strategy`` (Hypothesis drives the draws)."""

    @hypothesis_settings(
        max_examples=EXAMPLES,
        deadline=None,  # each request has a timeout and the whole run a time budget instead
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: failures are collected, not raised
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case):
        send(case, label)

    if SEED is not None:
        run = seed(int(SEED))(run)
    try:
        run()
    except Unsatisfiable:
        # Negative data for an operation whose only input is a string path segment: every value
        # schemathesis can put in a URL is a string, so there is nothing to send.
        return False
    return True


def test_fuzz_api_with_schemathesis(live_server, monkeypatch, settings):
    key_a = _seed_tenant(CANARY_A, [SHARED_ID])
    end_prefix, end_key = _second_key(key_a)
    _seed_tenant(CANARY_B, [SHARED_ID, B_ONLY_ID])
    # The live server runs in a thread of this process: these doubles apply to it.
    monkeypatch.setattr(runtime, "responder_engine", lambda: (EchoResponder(), ""))
    monkeypatch.setattr(runtime, "configured_index", _no_index)

    assert live_server.url.startswith(("http://localhost:", "http://127.0.0.1:")), live_server.url
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json", config=CONFIG)
    operations = _operations(schema)
    assert {op.path for op in operations} >= {"/v1/subjects/{external_id}/tree", "/v1/subjects/{external_id}"}

    session = requests.Session()
    headers = {"Authorization": f"Bearer {key_a}"}
    end_headers = {"Authorization": f"Bearer {end_key}"}
    figures = Figures()
    started = time.monotonic()

    labels = [
        f"{op.method.upper()} {op.path} [{mode.value}]"
        for op in operations
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    ]
    # Each operation and mode gets an equal share of the time budget (a loaded machine sends
    # fewer requests per operation, never skips an operation).
    share_s = BUDGET_S / len(labels)
    deadline = {"at": 0.0}

    def send(case, label: str) -> None:
        if time.monotonic() > deadline["at"] and figures.by_operation[label]:
            figures.skipped_over_budget += 1
            return
        sent = time.monotonic()
        sent_headers = (
            end_headers if (case.operation.method.upper(), case.operation.path) in KEY_ENDS else headers
        )
        response = case.call(
            base_url=live_server.url, session=session, headers=sent_headers, timeout=REQUEST_TIMEOUT_S
        )
        figures.request_seconds += time.monotonic() - sent
        figures.record(label, case, response, sent_headers)

    max_request_bytes = settings.PERSONATREE["MAX_REQUEST_BYTES"]
    # First the requests the generator never sends, with the same checks (the byte limit is
    # lowered so that a body over it stays small), while tenant A's subject still exists.
    settings.PERSONATREE = {**settings.PERSONATREE, "MAX_REQUEST_BYTES": EDGE_MAX_REQUEST_BYTES}
    for method, path, extra, body in _edge_requests(operations):
        response = session.request(
            method, live_server.url + path, headers={**headers, **extra}, data=body, timeout=REQUEST_TIMEOUT_S
        )
        figures.requests += 1
        figures.edge_requests += 1
        figures.by_status[response.status_code] += 1
        if response.status_code >= 500:
            figures.server_errors += 1
        problems = _problems(
            response.status_code,
            response.headers.get("Content-Type", ""),
            response.content,
            head=method == "HEAD",
        )
        for problem in problems:
            figures.failures.append(
                f"edge {method} {path} {extra} body {body[:60]!r}: {problem}; status {response.status_code}; "
                f"body {response.content[:300]!r}"
            )

    settings.PERSONATREE = {**settings.PERSONATREE, "MAX_REQUEST_BYTES": max_request_bytes}
    figures.edge_seconds = time.monotonic() - started

    stateful_done = False
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            label = f"{operation.method.upper()} {operation.path} [{mode.value}]"
            deadline["at"] = time.monotonic() + share_s
            if (operation.method.upper(), operation.path) in KEY_ENDS and not stateful_done:
                # Everything else before the key's rotation and revocation: the stateful phase too.
                _stateful(schema, live_server.url, headers, figures)
                stateful_done = True
            if not _fuzz(_strategy(schema, operation, mode, end_prefix), send, label):
                figures.not_applicable.append(label)

    if not stateful_done:
        _stateful(schema, live_server.url, headers, figures)
    seconds = time.monotonic() - started
    report = figures.as_dict(seconds)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"\nfuzz: {figures.requests} requests in {seconds:.1f} s, {figures.server_errors} 5xx, "
        f"{len(figures.failures)} failed checks, statuses {dict(sorted(figures.by_status.items()))}; "
        f"figures in {REPORT}"
    )

    assert not figures.failures, f"{len(figures.failures)} failed checks:\n" + "\n".join(
        figures.failures[:30]
    )
    assert figures.server_errors == 0
    assert not figures.contract_failures
    assert figures.stateful_runs == STATEFUL_RUNS
    # The checks are not vacuous: every operation was exercised and tenant A's own data came back.
    fuzzed = {label for label in figures.by_operation if not label.endswith("[stateful]")}
    assert fuzzed | set(figures.not_applicable) == set(labels)
    assert all(label.endswith("[negative]") for label in figures.not_applicable)
    assert figures.canary_a_seen > 0
    assert figures.requests >= len(operations) * 2


def _stateful(schema, base_url: str, headers: dict, figures: Figures) -> None:
    """Schemathesis's stateful phase: sequences of calls along the document's links, each response
    held to the contract checks (a failure fails the run with schemathesis's report)."""
    started = time.monotonic()
    machine_class = schema.as_state_machine()
    machine_class = type(
        "ContractMachine",
        (machine_class,),
        {
            "get_call_kwargs": lambda self, case: {
                "base_url": base_url,
                "headers": headers,
                "timeout": REQUEST_TIMEOUT_S,
            },
            "validate_response": lambda self, response, case, **kw: self._count(case, response),
            "_count": _count_step(figures, headers),
        },
    )
    settings = hypothesis_settings(
        max_examples=STATEFUL_RUNS,
        stateful_step_count=6,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    machine_class.run(settings=settings)
    figures.stateful_runs += STATEFUL_RUNS
    figures.stateful_seconds += time.monotonic() - started


def _count_step(figures: Figures, headers: dict):
    def count(self, case, response) -> None:
        figures.record(
            f"{case.operation.method.upper()} {case.operation.path} [stateful]", case, response, headers
        )

    return count
