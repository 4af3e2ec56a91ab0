"""The embedded demo's database: SQLite has no row locks or SKIP LOCKED; the compare-and-set
claim path runs there. Real processes on a scratch SQLite file (stand-in engine, not a model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workers.processes import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FIXTURE = ROOT / "tests" / "fixtures" / "backfill" / "history.jsonl"

CHECK = """
import json
from django.db import connection
from memory.models import Chunk, TreeVersion
print(json.dumps({
    "vendor": connection.vendor,
    "statuses": sorted(set(Chunk.objects.values_list("status", flat=True))),
    "chunks": Chunk.objects.count(),
    "versions_by_chunk_order": [
        [v.number for v in TreeVersion.objects.filter(subject=s).order_by("chunk__start_seq")]
        for s in {c.subject for c in Chunk.objects.select_related("subject")}
    ],
}))
"""


def manage(*args: str, env: dict) -> str:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_backfill_and_dispatch_on_sqlite(tmp_path: Path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        "PERSONATREE_DATA_DIR": str(tmp_path),
        "PERSONATREE_MEMLISTENER_BACKEND": "standin",
        "PERSONATREE_MEMLISTENER_STANDIN_MODE": "derived",
        "PERSONATREE_EVIDENCE_INDEXING": "false",
    }
    manage("migrate", "--noinput", "-v", "0", env=env)
    manage("create_tenant", "demo", env=env)
    out = manage("backfill", str(FIXTURE), "--tenant", "demo", "--process", "--no-progress", env=env)
    assert "applied 4 (0 failed" in out, out
    again = manage("backfill", str(FIXTURE), "--tenant", "demo", "--process", "--no-progress", env=env)
    assert "(0 new, 15 already present), 0 chunks" in again, again
    state = json.loads(manage("shell", "-c", CHECK, env=env).strip().splitlines()[-1])
    assert state["vendor"] == "sqlite"
    assert state["statuses"] == ["applied"] and state["chunks"] == 4
    for numbers in state["versions_by_chunk_order"]:
        assert numbers == sorted(numbers) == list(range(1, len(numbers) + 1))
