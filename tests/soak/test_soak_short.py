"""The short chaos soak, in ``make test``: 200 chunks over 40 subjects of 4 tenants, 6 faults (every
kind at least once: a worker SIGKILLed, the broker, PostgreSQL and the MemListener restarted), then
every chunk applied exactly once and every head equal to the replay of its op log.

It runs ``tests/soak/run.py --short`` as its own process: the soak needs a Django process on its own
private PostgreSQL cluster, not on the pytest-django test database. Where ``initdb``/``pg_ctl`` are
missing the soak uses a temporary database on the test server instead and skips the PostgreSQL
restart; this test then says so in a warning. ``make soak`` is the full run (>= 100 faults).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _admin_url() -> str:
    """The test database's server, its maintenance database (only for the fallback database)."""
    db = settings.DATABASES["default"]
    user = db.get("USER") or "postgres"
    auth = f"{user}:{db['PASSWORD']}" if db.get("PASSWORD") else user
    return f"postgres://{auth}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/postgres"


def test_short_chaos_soak_loses_nothing_applies_each_chunk_once_and_leaves_nothing_stuck(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (the soak runs a private one)")
    out = tmp_path / "soak.json"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.soak.run",
            "--short",
            "--json",
            str(out),
            "--fallback-database-url",
            _admin_url(),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    print(done.stdout[-6000:])
    assert out.exists(), f"the soak did not finish (exit {done.returncode}):\n{done.stderr[-6000:]}"
    report = json.loads(out.read_text())
    if "postgres_restart" in report["skipped"]:
        warnings.warn(
            f"short soak without PostgreSQL restarts: {report['skipped']['postgres_restart']}", stacklevel=1
        )
    assert report["chunks_expected"] == 200 and report["chunks"] == 200, report["problems"]
    assert report["lost"] == 0, report["problems"]
    assert report["double_applied"] == 0, report["problems"]
    assert report["stuck"] == 0, report["problems"]
    assert report["quarantined"] == report["poison_expected"] == 4, report["problems"]  # one per tenant
    assert report["head_mismatch"] == 0, report["problems"]
    assert report["faults_injected"] >= 5
    # the faults land on work in flight (a chunk claimed within the last second), not on an idle system
    assert report["faults_on_work_in_flight"] >= report["faults_injected"] // 2, report["events"]
    kinds = {"worker_kill", "redis_restart", "listener_stop"}
    if "postgres_restart" not in report["skipped"]:
        kinds.add("postgres_restart")
    assert kinds <= set(report["faults_by_kind"]), report["faults_by_kind"]
    assert done.returncode == 0, done.stderr[-4000:]
