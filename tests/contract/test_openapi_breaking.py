"""A change to the committed OpenAPI document that breaks clients is named in the changelog.

The baseline is the document as committed before: ``HEAD``'s when the working copy changed it, else
the version before the last commit that changed it. Each breaking change
(:func:`tests.contract.breaking.breaking_changes`: a removed path or field, a narrowed type, a new
required input, ...) must name its operation (``GET /v1/keys``) in ``CHANGELOG.md``.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from tests.contract.breaking import breaking_changes

ROOT = Path(settings.BASE_DIR)
DOCUMENT = "docs/openapi.json"
CHANGELOG = ROOT / "CHANGELOG.md"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _baseline() -> tuple[str, dict] | None:
    """(where, document) of the previously committed document, or None when there is none."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    try:
        head = json.loads(_git("show", f"HEAD:{DOCUMENT}"))
    except (subprocess.CalledProcessError, ValueError):
        return None
    if head != json.loads((ROOT / DOCUMENT).read_text(encoding="utf-8")):
        return "HEAD", head
    commits = _git("log", "-n", "2", "--format=%H", "--", DOCUMENT).split()
    if len(commits) < 2:
        return None
    return commits[1], json.loads(_git("show", f"{commits[1]}:{DOCUMENT}"))


def test_breaking_changes_are_named_in_the_changelog():
    baseline = _baseline()
    if baseline is None:
        pytest.skip(f"no earlier committed {DOCUMENT} to compare with (first version, or not a git clone)")
    where, old = baseline
    changes = breaking_changes(old, json.loads((ROOT / DOCUMENT).read_text(encoding="utf-8")))
    changelog = CHANGELOG.read_text(encoding="utf-8") if CHANGELOG.exists() else ""
    unnamed = [c for c in changes if c.split(":", 1)[0] not in changelog]
    assert not unnamed, (
        f"{len(unnamed)} change(s) since {DOCUMENT} at {where[:12]} break clients and their operations are "
        "not named in CHANGELOG.md (add them under the next release's 'Breaking' heading):\n"
        + "\n".join(unnamed[:60])
    )


# --- the comparison itself -------------------------------------------------------------------------

BASE = {
    "openapi": "3.0.3",
    "paths": {
        "/v1/things": {
            "post": {
                "parameters": [{"in": "query", "name": "dry_run", "schema": {"type": "boolean"}}],
                "requestBody": {
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ThingIn"}}}
                },
                "responses": {
                    "201": {
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}
                    }
                },
            },
            "get": {"responses": {"200": {"content": {"application/json": {"schema": {"type": "object"}}}}}},
        }
    },
    "components": {
        "schemas": {
            "ThingIn": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "maxLength": 100},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                },
                "required": ["name"],
            },
            "Thing": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                "required": ["id", "name"],
            },
        }
    },
}


def _changed(edit) -> list[str]:
    new = copy.deepcopy(BASE)
    edit(new)
    return breaking_changes(BASE, new)


def test_an_additive_change_breaks_nothing():
    def add(doc):
        doc["components"]["schemas"]["ThingIn"]["properties"]["note"] = {"type": "string"}
        doc["components"]["schemas"]["Thing"]["properties"]["note"] = {"type": "string"}
        doc["components"]["schemas"]["ThingIn"]["properties"]["name"]["maxLength"] = 200
        doc["paths"]["/v1/other"] = {"get": {"responses": {"200": {}}}}

    assert _changed(add) == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d["paths"].pop("/v1/things"), "GET /v1/things: operation removed"),
        (
            lambda d: d["components"]["schemas"]["Thing"]["properties"].pop("name"),
            "POST /v1/things: response 201: field name removed",
        ),
        (
            lambda d: d["components"]["schemas"]["ThingIn"]["required"].append("kind"),
            "POST /v1/things: request: field kind is now required",
        ),
        (
            lambda d: d["components"]["schemas"]["ThingIn"]["properties"]["name"].update(maxLength=10),
            "POST /v1/things: request.name: maxLength 100 -> 10",
        ),
        (
            lambda d: d["components"]["schemas"]["ThingIn"]["properties"]["kind"].update(enum=["a"]),
            "POST /v1/things: request.kind: enum values removed",
        ),
        (
            lambda d: d["components"]["schemas"]["Thing"]["properties"]["id"].update(type="string"),
            "POST /v1/things: response 201.id: type integer -> string",
        ),
        (
            lambda d: d["paths"]["/v1/things"]["post"]["parameters"][0].update(required=True),
            "POST /v1/things: parameter dry_run (query) is now required",
        ),
        (
            lambda d: d["components"]["schemas"]["ThingIn"]["properties"].pop("kind"),
            "POST /v1/things: request: field kind removed (now refused)",
        ),
    ],
)
def test_a_breaking_change_is_reported(edit, expected):
    assert expected in _changed(edit)
