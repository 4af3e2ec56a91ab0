"""``create_import`` / ``get_import`` / ``imports`` against a live server (eager Celery: the import
runs, MemListener included, before the POST answers)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from personatree_client import AsyncPersonaTree, BadRequestError, ImportJob, NotFoundError, PersonaTree

pytestmark = pytest.mark.django_db(transaction=True)

HISTORY = Path(__file__).resolve().parents[1] / "fixtures" / "backfill" / "history.jsonl"


def test_import_a_file_then_poll_and_list(base_url, make_key):
    key = make_key(["ingest", "read"])
    with PersonaTree(base_url, key) as pt:
        job = pt.create_import(HISTORY, label="crm")
        assert isinstance(job, ImportJob) and job.source == "crm" and job.lines == 3
        polled = pt.get_import(job.id)
        assert polled.finished and polled.status == "done", polled
        assert (polled.new_messages, polled.duplicates) == (15, 0)
        assert polled.chunks["applied"] == polled.chunks["total"] == polled.chunks_created > 0
        assert pt.tree("alice").version > 0
        again = pt.get_import(pt.create_import(HISTORY, label="crm").id)
        assert (again.new_messages, again.duplicates) == (0, 15)
        assert [j.id for j in pt.imports(page_size=1)] == [again.id, job.id]
        with pytest.raises(BadRequestError) as bad:
            pt.create_import([{"subject": "x", "messages": [{"role": "robot", "content": "hi"}]}])
        assert bad.value.field == "line 1 messages[0].role"
    with PersonaTree(base_url, make_key(["ingest", "read"])) as other, pytest.raises(NotFoundError):
        other.get_import(job.id)


def test_async_import_of_mappings(base_url, make_key):
    key = make_key(["ingest", "read"])
    lines = [{"subject": "zoe", "messages": [{"role": "user", "content": "I live in Porto."}]}]

    async def run():
        async with AsyncPersonaTree(base_url, key) as apt:
            job = await apt.create_import(lines)
            return await apt.get_import(job.id)

    got = asyncio.run(run())
    assert got.status == "done" and got.messages == 1 and got.new_messages == 1
