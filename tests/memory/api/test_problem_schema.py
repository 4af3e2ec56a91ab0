"""The OpenAPI schema declares every answer: typed 2xx bodies and the problem responses (RFC 9457).

The schema is walked: a 2xx body that is a free-form object (``additionalProperties: {}``, an
object without properties) fails, and so does an operation without the problem responses it can
answer (401/403/429 and ``default`` everywhere, 404 with path parameters, 400/413 with a body,
409/503 where a view answers them). Then every operation is called for real, without a key, with
a key lacking its scope and for a resource that does not exist: each answer's status must be
declared for that operation, as ``application/problem+json`` with the ProblemDetail members.
"""

from __future__ import annotations

import uuid

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from memory.api.problems import PROBLEM_MEDIA_TYPE, TYPE_BASE
from memory.models import ApiKey

pytestmark = pytest.mark.django_db

PROBLEM_REF = "#/components/schemas/ProblemDetail"
#: What only some views answer (beyond what every operation of its kind declares).
EXPECTED_EXTRA = {
    ("post", "/v1/subjects/{external_id}/messages"): {"409"},
    ("put", "/v1/subjects/{external_id}/tree/leaves/{leaf_path}"): {"409"},
    ("delete", "/v1/subjects/{external_id}/tree/leaves/{leaf_path}"): {"409"},
    ("post", "/v1/keys/{prefix}/rotate"): {"409"},
    ("post", "/v1/subjects/{external_id}/answer"): {"503"},
    ("delete", "/v1/subjects/{external_id}"): {"503"},
}
PATH_VALUES = {
    "external_id": "nobody",
    "leaf_path": "identity/occupation/current_role",
    "prefix": "pt_live_00000000",
    "public_id": str(uuid.UUID(int=1)),
}
METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method in item:
                yield method, path, item[method]


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def untyped(schema: dict, node: dict, where: str, seen: set) -> list[str]:
    """Where ``node`` (recursively) is an object whose members are not declared."""
    if "$ref" in node:
        if node["$ref"] in seen:
            return []
        seen = seen | {node["$ref"]}
    node = resolve(schema, node)
    found = []
    if node.get("additionalProperties") in ({}, True):
        found.append(f"{where}: additionalProperties {node['additionalProperties']!r}")
    members = node.get("properties") or node.get("allOf")  # allOf: the members are its branches
    if node.get("type") == "object" and not members and "additionalProperties" not in node:
        found.append(f"{where}: object without properties")
    for name, sub in (node.get("properties") or {}).items():
        found += untyped(schema, sub, f"{where}.{name}", seen)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict) and node[key]:
            found += untyped(schema, node[key], f"{where}[{key}]", seen)
    for key in ("oneOf", "anyOf", "allOf"):
        for i, sub in enumerate(node.get(key) or ()):
            found += untyped(schema, sub, f"{where}.{key}[{i}]", seen)
    return found


def expected_problems(method: str, path: str, operation: dict) -> set[str]:
    places = {p["in"] for p in operation.get("parameters", [])}
    body = "requestBody" in operation
    expected = {"401", "403", "429", "default"} | EXPECTED_EXTRA.get((method, path), set())
    if "path" in places:
        expected.add("404")
    if body:
        expected |= {"400", "413"}
    if body or "query" in places or "{external_id}" in path:
        expected.add("400")
    return expected


def test_every_2xx_answer_is_typed(schema):
    problems = []
    for method, path, operation in operations(schema):
        for status, response in operation["responses"].items():
            if not status.startswith("2") or status == "204":
                continue
            content = response.get("content") or {}
            if "application/json" not in content:
                problems.append(f"{method.upper()} {path} {status}: no JSON body declared")
                continue
            problems += untyped(
                schema, content["application/json"]["schema"], f"{method} {path} {status}", set()
            )
    assert not problems, "\n".join(problems)


def test_deletes_that_answer_a_body_declare_their_200(schema):
    for path in ("/v1/subjects/{external_id}", "/v1/keys/{prefix}"):
        assert set(schema["paths"][path]["delete"]["responses"]) >= {"200"}
        assert "204" not in schema["paths"][path]["delete"]["responses"]


def test_every_operation_declares_its_problem_responses(schema):
    missing = []
    for method, path, operation in operations(schema):
        responses = operation["responses"]
        for status in sorted(expected_problems(method, path, operation)):
            content = (responses.get(status) or {}).get("content") or {}
            if content.get(PROBLEM_MEDIA_TYPE, {}).get("schema", {}).get("$ref") != PROBLEM_REF:
                missing.append(f"{method.upper()} {path}: {status}")
        for status in ("429", "503"):
            if status in responses:
                assert "Retry-After" in responses[status].get("headers", {}), (method, path, status)
    assert not missing, "operations without their problem responses:\n" + "\n".join(missing)
    problem = schema["components"]["schemas"]["ProblemDetail"]
    assert {"type", "title", "status", "detail", "code"} <= set(problem["required"])
    assert "error" not in problem["properties"]  # the body before problem details is gone


def _call(client: APIClient, method: str, path: str):
    url = path
    for name, value in PATH_VALUES.items():
        url = url.replace("{" + name + "}", value)
    kwargs = {"format": "json", "data": {}} if method in ("post", "put", "patch") else {}
    return getattr(client, method)(url, **kwargs)


def _scopes_without(needed: str) -> list[str]:
    return [s for s in ApiKey.SCOPES if s != needed and s not in ("admin",)][:1] or ["read"]


def test_the_statuses_the_api_really_answers_are_declared(schema, tenant, make_api_client):
    everything, _ = make_api_client(tenant, scopes=list(ApiKey.SCOPES))
    ingest_only, _ = make_api_client(tenant, scopes=["ingest"])
    read_only, _ = make_api_client(tenant, scopes=["read"])
    undeclared, seen = [], set()
    for method, path, operation in operations(schema):
        declared = set(operation["responses"])
        for who, client in (
            ("no key", APIClient()),
            ("ingest key", ingest_only),
            ("read key", read_only),
            ("all scopes", everything),
        ):
            response = _call(client, method, path)
            status = str(response.status_code)
            if response.status_code < 400:
                continue
            seen.add(status)
            if status not in declared:
                undeclared.append(f"{method.upper()} {path} ({who}): {status} not declared")
            assert response["Content-Type"] == PROBLEM_MEDIA_TYPE, (method, path, who)
            body = response.json()
            assert body["status"] == response.status_code and body["type"] == TYPE_BASE + body["code"]
            assert body["title"] and body["detail"] and body["instance"].startswith("/v1/")
            assert "error" not in body
    assert not undeclared, "\n".join(undeclared)
    assert {"400", "401", "403", "404"} <= seen  # the sweep reached each kind of refusal
