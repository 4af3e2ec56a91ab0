"""The committed OpenAPI document (``docs/openapi.json``) is the one the code generates and the
server serves, and it passes Redocly's lint.

When a change to a view or serializer changes the API, the drift test fails with the diff and the
command that regenerates the file (``make openapi``), so every API change shows in review as a
change of the committed document. The lint runs Redocly CLI from ``tools/openapi`` (``make test``
installs it there with ``npm ci``); without Node.js on the machine it is skipped, saying why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from memory.management.commands.openapi import REGENERATE, document_diff, document_path, document_text

TOOLS = Path(settings.BASE_DIR) / "tools" / "openapi"
REDOCLY = TOOLS / "node_modules" / ".bin" / "redocly"


def test_committed_document_is_what_the_code_generates():
    path = document_path()
    assert path.exists(), f"{path} is missing; generate it: {REGENERATE}"
    diff = document_diff(path.read_text(encoding="utf-8"), document_text())
    assert not diff, f"docs/openapi.json is stale; regenerate it with: {REGENERATE}\n\n{diff[:20000]}"


def test_the_server_serves_the_committed_document(client):
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    served = json.loads(response.content)
    assert served == json.loads(document_path().read_text(encoding="utf-8"))


def test_every_operation_is_documented_in_full():
    """Summaries, operation ids and a problem+json body for every error the operation declares."""
    document = json.loads(document_path().read_text(encoding="utf-8"))
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            label = f"{method.upper()} {path}"
            assert operation.get("summary"), f"{label} has no summary"
            assert operation.get("operationId"), label
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")) or status == "default":
                    assert list(response["content"]) == ["application/problem+json"], (label, status)


@pytest.mark.slow
def test_document_passes_redocly_lint():
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: the Redocly lint of docs/openapi.json needs it")
    assert REDOCLY.exists(), (
        "Redocly CLI is not installed in tools/openapi; install it with: npm ci --prefix tools/openapi "
        "(make test does)"
    )
    result = subprocess.run(
        [
            str(REDOCLY),
            "lint",
            str(document_path()),
            "--config",
            str(TOOLS / "redocly.yaml"),
            "--format=stylish",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=TOOLS,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"redocly lint failed:\n{output[-8000:]}"
