"""Bad input in a JSON body: always a JSON 4xx naming the field, never a 500 or an HTML page.

JSON can spell an unpaired UTF-16 surrogate (the six characters backslash-u-d-8-0-0) that Python
keeps in a ``str`` but that neither a UTF-8 response nor PostgreSQL can encode: an error message
echoing it (DRF's "is not a valid choice", our "unknown field") used to crash the renderer.
"""

from __future__ import annotations

import pytest

from memory.api.parsers import unpaired_surrogate_path

pytestmark = pytest.mark.django_db

SUR = "\\ud800"  # the JSON escape, as a client sends it


def _post(client, path, raw: str):
    return client.post(path, raw, content_type="application/json")


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"query": "hi", "mode": "SUR"}', "mode"),
        ('{"query": "hi SUR there"}', "query"),
        ('{"query": "hi", "as_of": "SUR"}', "as_of"),
        ('{"query": "hi", "SUR": 1}', SUR),
        ('{"query": "hi", "mode": "fast", "token_budget": "SUR"}', "token_budget"),
    ],
)
@pytest.mark.parametrize("endpoint", ["context", "answer"])
def test_unpaired_surrogates_in_a_query_body_are_a_400(subject, make_api_client, raw, field, endpoint):
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    response = _post(client, f"/v1/subjects/{subject.external_id}/{endpoint}", raw.replace("SUR", SUR))
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert error["code"] == "invalid_text" and error["field"] == field


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"query": "hi", "mode": "nope"}', "mode"),
        ('{"query": "hi", "as_of": "2024-13-01T00:00"}', "as_of"),
        ('{"query": "hi", "as_of": "\u00b2"}', "as_of"),
        ('{"query": "hi", "as_of": %s}' % ("9" * 400), "as_of"),
        ('{"query": "hi", "as_of": "%s"}' % ("9" * 400), "as_of"),
        ('{"query": "hi", "as_of": -1}', "as_of"),
        ('{"query": "hi", "token_budget": %s}' % ("9" * 400), "token_budget"),
        ('{"query": "hi", "token_budget": "\u00b2"}', "token_budget"),
    ],
)
def test_bad_query_parameters_are_a_400_naming_them(subject, make_api_client, raw, field):
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    response = _post(client, f"/v1/subjects/{subject.external_id}/context", raw)
    assert response.status_code == 400, response.content[:300]
    assert response.json()["field"] == field


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 100_000,  # deeper than the decoder's recursion limit
        '{"query": "hi", "token_budget": %s}' % ("9" * 5000),  # beyond int()'s digit limit
        '{"query": NaN}',
        "{nope",
    ],
)
def test_undecodable_bodies_are_a_json_400(subject, make_api_client, raw):
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    response = _post(client, f"/v1/subjects/{subject.external_id}/context", raw)
    assert response.status_code == 400, response.content[:300]
    assert response.json()["code"] == "parse_error"


def test_form_bodies_are_refused_in_json(subject, make_api_client):
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    response = client.post(
        f"/v1/subjects/{subject.external_id}/context",
        "query=hi",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


def test_surrogate_path_names_where_it_is():
    assert unpaired_surrogate_path({"a": [{"b": "ok"}, {"c": "x\ud800"}]}) == "a[1].c"
    assert unpaired_surrogate_path({"a": {"\udc00k": 1}}) == "a.\\udc00k"
    assert unpaired_surrogate_path("\ud800") == ""
    assert unpaired_surrogate_path({"a": ["\U0001f600 fine", 1, None, True]}) is None


# Found while building the fuzz test (tests/fuzz checks that every answer is JSON): a subject id
# holding "/" (sent as %2F) matches no route, and Django answered with its HTML 404 page.
@pytest.mark.parametrize(
    "path",
    [
        "/v1/subjects/a%2Fb/tree",  # an id holding "/"
        "/v1/subjects//tree",  # an empty id
        "/v1/subjects/x/tree/",  # a trailing slash
        "/v1/subjects/",
        "/v1/",
        "/v1/nope",
        "/v1/subjects/x/tree/%0A",
    ],
)
@pytest.mark.parametrize("method", ["get", "post", "put", "delete", "options"])
def test_paths_no_endpoint_matches_are_a_json_404(subject, make_api_client, path, method):
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    response = getattr(client, method)(path, HTTP_ACCEPT="text/html")
    assert response.status_code == 404, response.content[:300]
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "not_found"


def test_unknown_paths_need_no_key_to_be_a_json_404(client):
    response = client.get("/v1/subjects/a%2Fb/export")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_the_catch_all_is_not_in_the_openapi_schema(client):
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    # Every path is a route of its own (the catch-all's regex would show as "/v1/{...}" or hold "[").
    assert all(
        p.startswith(("/v1/subjects", "/v1/keys", "/v1/webhooks", "/v1/schema", "/v1/imports"))
        and "[" not in p
        for p in paths
    ), sorted(paths)
    assert "/v1/subjects/{external_id}/tree" in paths and "/v1/keys" in paths


# Found the same way: DRF's browsable API answered a browser's Accept header with an HTML page
# (the subject's tree, or the error, inside it). The API answers JSON only.
@pytest.mark.parametrize("accept", ["text/html,application/xhtml+xml,*/*;q=0.8", "*/*", None])
@pytest.mark.parametrize("external_id", ["mine", "missing"])
def test_browser_accept_headers_get_json(subject, make_api_client, accept, external_id):
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    external_id = subject.external_id if external_id == "mine" else "missing"
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    response = client.get(f"/v1/subjects/{external_id}/tree", **headers)
    found = external_id == subject.external_id
    assert response.status_code == (200 if found else 404)
    assert response["Content-Type"] == ("application/json" if found else "application/problem+json")
    response.json()


def test_an_html_only_accept_header_is_a_json_406(subject, make_api_client):
    client, _ = make_api_client(subject.tenant, scopes=["read"])
    response = client.get(f"/v1/subjects/{subject.external_id}/tree", HTTP_ACCEPT="text/html")
    assert response.status_code == 406 and response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "not_acceptable"


def test_openapi_schema_lists_the_accepted_roles(client):
    # Without the enum a schema-driven client (the fuzz test) sent free-text roles only: every
    # generated ingest call was a 400 and the accepting path was never exercised.
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert schema["components"]["schemas"]["RoleEnum"]["enum"] == ["user", "assistant", "system"]


def test_openapi_schema_closes_the_ingest_body(client):
    # The ingest API refuses unknown fields, an empty message list and an empty key (400): the
    # schema says so, so schema-driven clients send bodies it can accept.
    schemas = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]
    body, message = schemas["MessagesIn"], schemas["MessageIn"]
    assert body["additionalProperties"] is False and message["additionalProperties"] is False
    assert body["properties"]["messages"]["minItems"] == 1
    assert message["properties"]["idempotency_key"]["minLength"] == 1
    assert message["properties"]["content"]["pattern"] == message["properties"]["idempotency_key"]["pattern"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/schema-migrations/0%00",
        "/v1/schemas/personatree-default%00/versions/1",
        "/v1/schemas/x%ED%A0%80/versions/1",  # a lone surrogate, as UTF-8 bytes
        "/v1/schema-migrations/dry-runs/a%00b",
    ],
)
def test_a_nul_or_lone_surrogate_in_a_url_name_is_a_404_not_a_500(tenant, make_api_client, path):
    """Found by the hostile fuzz run: PostgreSQL refused the NUL in the lookup (a 500)."""
    api, _ = make_api_client(tenant, scopes=["admin", "read"])
    answer = api.get(path)
    assert answer.status_code == 404, answer.content
    assert answer["Content-Type"] == "application/problem+json"
