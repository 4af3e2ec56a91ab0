"""Limits of a tenant's schema (issue 24 item 4): a hostile document is a 400 naming what is wrong,
never a 500 and never a stored row the prompt, the grammar or the op log cannot handle."""

from __future__ import annotations

import copy
import json

import pytest
from django.urls import reverse

from memory.engine.schema import MAX_BUDGET, MAX_DEPTH, MAX_PATH_CHARS, SchemaError, load_schema
from memory.models import TenantSchema

pytestmark = pytest.mark.django_db

DOC = {
    "id": "hostile",
    "version": 1,
    "tree": {"about": {"city": {"description": "Where the person lives", "budget": 80}}},
}


def _leaf(doc: dict) -> dict:
    return doc["tree"]["about"]["city"]


def _nested(depth: int) -> dict:
    node: dict = {"description": "deep", "budget": 10}
    for i in range(depth - 1):
        node = {f"n{i}": node}
    return {"top": node}


HOSTILE = [
    ("budget over the limit", lambda d: _leaf(d).update(budget=MAX_BUDGET + 1), f"{MAX_BUDGET}"),
    ("named budget over the limit", lambda d: d.update(budgets={"huge": 10**9}), f"{MAX_BUDGET}"),
    (
        "path over the column",
        lambda d: (
            d.update(leaves=[{"path": "a" * (MAX_PATH_CHARS + 1), "description": "x", "budget": 5}])
            or d.pop("tree")
        ),
        f"{MAX_PATH_CHARS}",
    ),
    (
        "too deep (flat form)",
        lambda d: (
            d.update(leaves=[{"path": "/".join(["a"] * (MAX_DEPTH + 1)), "description": "x", "budget": 5}])
            or d.pop("tree")
        ),
        "deeper",
    ),
    ("too deep (nested form)", lambda d: d.update(tree=_nested(MAX_DEPTH + 2)), "deeper"),
    ("very deep nesting", lambda d: d.update(tree=_nested(400)), "deep"),
    ("NUL in a description", lambda d: _leaf(d).update(description="city\x00"), "NUL"),
    ("lone surrogate in a description", lambda d: _leaf(d).update(description="city \ud800"), "surrogate"),
    ("lone surrogate in the doc", lambda d: d.update(doc="\udfff"), "surrogate"),
    ("NUL in an alias", lambda d: _leaf(d).update(aliases=["to\x00wn"]), "NUL"),
    (
        "lone surrogate in a key",
        lambda d: d["tree"]["about"].update({"x\ud800": {"description": "y", "budget": 3}}),
        "surrogate",
    ),
    ("huge description", lambda d: _leaf(d).update(description="word " * 2000), "longer than"),
]


@pytest.fixture
def admin(tenant, make_api_client):
    client, _ = make_api_client(tenant, scopes=["admin"])
    return client


@pytest.mark.parametrize(("name", "mutate", "words"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_schema_is_a_400_naming_the_limit(admin, name, mutate, words):
    doc = copy.deepcopy(DOC)
    mutate(doc)
    # Sent as JSON text with escapes (\\ud800): the test client's own renderer cannot encode a lone surrogate.
    response = admin.post(reverse("schemas"), json.dumps(doc), content_type="application/json")
    assert response.status_code == 400, response.content
    body = response.json()
    if words == "surrogate":  # the API's parser refuses unpaired surrogates before the service
        assert body["code"] == "invalid_text", body
    else:
        assert body["field"] == "document" and words in body["detail"], body
    assert not TenantSchema.objects.exists()


@pytest.mark.parametrize(("name", "mutate", "words"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_the_engine_refuses_them_too(name, mutate, words):
    """The admin and the management commands load schemas without the API's parser."""
    doc = copy.deepcopy(DOC)
    mutate(doc)
    with pytest.raises(SchemaError, match=words):
        load_schema(doc)


def test_the_limits_themselves_are_accepted():
    doc = {
        "id": "edge",
        "version": 1,
        "leaves": [
            {
                "path": "/".join(["a" * 36] * MAX_DEPTH)[:MAX_PATH_CHARS],
                "description": "x",
                "budget": MAX_BUDGET,
            }
        ],
    }
    schema = load_schema(doc)
    assert schema.leaves[0].budget == MAX_BUDGET and len(schema.leaves[0].path) <= MAX_PATH_CHARS
    with pytest.raises(SchemaError, match="NUL"):
        load_schema({**doc, "doc": "a\x00"})
    # The message never quotes the bad text (it is shown and logged).
    with pytest.raises(SchemaError) as caught:
        load_schema({**doc, "tree": {"x\ud800": {"y": {"description": "\x00", "budget": 3}}}})
    assert "\ud800" not in str(caught.value) and "\x00" not in str(caught.value)
    # A proper astral character (a surrogate pair in JSON) is ordinary text.
    assert load_schema({**doc, "doc": "smile \U0001f600"}).doc == "smile \U0001f600"


def test_nesting_deeper_than_the_json_parser_goes_is_a_400(admin):
    body = '{"id": "deep", "version": 1, "tree": ' + '{"a": ' * 5000 + "{}" + "}" * 5000 + "}"
    response = admin.post(reverse("schemas"), body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert not TenantSchema.objects.exists()
