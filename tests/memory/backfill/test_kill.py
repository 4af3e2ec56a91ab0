"""``manage.py backfill --process`` as a real process, SIGKILLed at several points and restarted:
the end state equals a clean import's, with nothing duplicated (stand-in engine, not a model)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memory.backfill import JsonlSource
from memory.models import Chunk, Message, OpRecord
from tests.memory.backfill.test_service import processed, state
from tests.workers.helpers import standin_client
from tests.workers.processes import ROOT, live_database_url, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SUBJECTS, PAIRS = 10, 10  # 4 chunks per subject (3 full windows + the flushed partial pair)


def write_source(path: Path) -> Path:
    with path.open("w") as fh:
        for s in range(SUBJECTS):
            messages = []
            for i in range(PAIRS):
                messages += [
                    {"role": "user", "content": f"Subject {s}: I collect item {i} and plan trip {i}"},
                    {"role": "assistant", "content": f"Item {i}, noted."},
                ]
            fh.write(json.dumps({"subject": f"bk{s}", "messages": messages}) + "\n")
    return path


def start(path: Path, tenant_name: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
        "DATABASE_URL": live_database_url(),
        "PERSONATREE_MEMLISTENER_BACKEND": "standin",
        "PERSONATREE_MEMLISTENER_STANDIN_MODE": "derived",
        "PERSONATREE_MEMLISTENER_STANDIN_LATENCY_MS": "40",
        "PERSONATREE_BATCH_MAX_JOBS": "4",
        "PERSONATREE_EVIDENCE_INDEXING": "false",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "backfill",
            str(path),
            "--tenant",
            tenant_name,
            "--process",
            "--no-progress",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill_when(proc: subprocess.Popen, predicate, what: str) -> None:
    try:
        wait_for(lambda: predicate() or proc.poll() is not None, timeout=120, interval=0.01, what=what)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


def test_killed_backfill_resumes_without_duplicates(tmp_path, tenant, other_tenant):
    path = write_source(tmp_path / "history.jsonl")
    applied = lambda n: lambda: Chunk.objects.filter(subject__tenant=tenant, status="applied").count() >= n  # noqa: E731
    kill_when(
        start(path, tenant.name),
        lambda: Message.objects.filter(subject__tenant=tenant).exists(),
        "first messages",
    )
    kill_when(start(path, tenant.name), applied(6), "6 chunks applied")
    kill_when(start(path, tenant.name), applied(20), "20 chunks applied")
    killed_at = Chunk.objects.filter(subject__tenant=tenant, status="applied").count()
    final = start(path, tenant.name)
    out, _ = final.communicate(timeout=180)
    assert final.returncode == 0, out.decode()
    assert killed_at < SUBJECTS * 4, "the kills came too late to interrupt anything"
    # a clean, uninterrupted import of the same file into another tenant
    processed(other_tenant, JsonlSource(path), standin_client())
    resumed, clean = state(tenant), state(other_tenant)
    assert resumed == clean
    assert Chunk.objects.filter(subject__tenant=tenant, status="applied").count() == SUBJECTS * 4
    # every chunk's ops were written once
    per_chunk = (
        OpRecord.objects.filter(subject__tenant=tenant).values_list("chunk_id", "batch").order_by().distinct()
    )
    assert len(per_chunk) == SUBJECTS * 4
