"""The TypeScript client (clients/typescript) built and tested with node against the live server.

``npm ci`` runs only when ``node_modules`` is missing or older than the lock file (it is kept
between runs, gitignored); then ``npm run build`` (tsc) and ``npm test``, which first checks that
the committed generated types match docs/openapi.json, then runs node's test runner with the
server's URL and a key in the environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
NPM = shutil.which("npm")


def npm(*args: str, env: dict[str, str] | None = None) -> str:
    assert NPM is not None
    done = subprocess.run(
        [NPM, *args], cwd=CLIENT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"npm {' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def installed() -> bool:
    marker = CLIENT / "node_modules" / ".package-lock.json"
    lock = CLIENT / "package-lock.json"
    return marker.exists() and marker.stat().st_mtime >= lock.stat().st_mtime


@pytest.mark.skipif(shutil.which("node") is None or NPM is None, reason="node and npm are not installed")
def test_typescript_client_against_the_live_server(base_url, make_key):
    if not installed():
        npm("ci", "--no-audit", "--no-fund")
    npm("run", "build")
    key = make_key(["ingest", "read", "write", "erase"])
    out = npm("test", env={**os.environ, "PERSONATREE_URL": base_url, "PERSONATREE_API_KEY": key})
    assert "# SKIP" not in out, out  # the live suite ran
    assert "against the live server" in out, out
