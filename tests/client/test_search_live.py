"""``PersonaTree.search`` / ``AsyncPersonaTree.search`` against a live server: typed hits, filters."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from personatree_client import AsyncPersonaTree, BadRequestError, LeafHit, PersonaTree, SearchResult

pytestmark = pytest.mark.django_db(transaction=True)


def test_search_sync_and_async(base_url, make_key):
    key = make_key(["ingest", "read", "write"])
    with PersonaTree(base_url, key) as pt:
        pt.ingest("dee", [{"role": "user", "content": "hello"}])
        pt.set_leaf("dee", "behaviour/habits/exercise", "swims three times a week")
        pt.set_leaf("dee", "identity/location/current_city", "Lisbon")
        found = pt.search("dee", "which sport for exercise")
        assert isinstance(found, SearchResult) and found.subject == "dee"
        assert isinstance(found.leaves[0], LeafHit) and found.leaves[0].path == "behaviour/habits/exercise"
        assert found.leaves[0].set_at is not None and found.leaves[0].set_at.tzinfo is not None
        assert found.evidence == () and found.evidence_status == "withheld"
        assert found.raw["version"] == found.version
        under = pt.search("dee", "which sport for exercise", prefix="identity/")
        assert all(h.path.startswith("identity/") for h in under.leaves)
        later = pt.search("dee", "exercise", since=datetime.now(UTC) + timedelta(hours=1))
        assert later.leaves == ()
        with pytest.raises(BadRequestError) as bad:
            pt.search("dee", "exercise", limit=0)
        assert bad.value.field == "limit"

    async def run():
        async with AsyncPersonaTree(base_url, key) as apt:
            return await apt.search("dee", "where does she live", limit=1)

    got = asyncio.run(run())
    assert [h.path for h in got.leaves] == ["identity/location/current_city"]


def test_requeue_chunk_of_a_failed_chunk(base_url, make_key):
    from personatree_client import ConflictError, NotFoundError

    from memory.models import Chunk, Subject
    from tests.factories import ChunkFactory, TenantFactory

    tenant = TenantFactory()
    key = make_key(["ingest", "read"], tenant=tenant)
    with PersonaTree(base_url, key) as pt:
        pt.ingest("eve", [{"role": "user", "content": "hello"}])
        subject = Subject.objects.get(tenant=tenant, external_id="eve")
        chunk = ChunkFactory(  # over the one message stored, so the dispatcher it asks for can run it
            subject=subject,
            start_seq=1,
            end_seq=1,
            status=Chunk.Status.FAILED,
            attempts=5,
            last_error="timeout",
        )
        back = pt.requeue_chunk("eve", chunk.pk)
        assert (back.chunk_id, back.status, back.attempts, back.last_error) == (
            chunk.pk,
            "pending",
            0,
            "timeout",
        )
        chunk.refresh_from_db()  # pending, or already applied by the eager dispatcher it asked for
        assert chunk.status in (Chunk.Status.PENDING, Chunk.Status.APPLIED) and chunk.attempts <= 1
        with pytest.raises((ConflictError, NotFoundError)):
            pt.requeue_chunk("eve", chunk.pk)  # no longer failed (409), or gone if it ran (never 2xx)
        with pytest.raises(NotFoundError):
            pt.requeue_chunk("nobody", chunk.pk)


def test_leaf_history_diff_and_revert(base_url, make_key):
    key = make_key(["ingest", "read", "write"])
    path = "behaviour/habits/exercise"
    with PersonaTree(base_url, key) as pt:
        pt.ingest("fay", [{"role": "user", "content": "hello"}])
        first = pt.set_leaf("fay", path, "running").version
        pt.set_leaf("fay", path, "swimming")
        history = list(pt.leaf_history("fay", path, page_size=1))  # two pages
        assert [(c.op, c.previous, c.value) for c in history] == [
            ("ADD", None, "running"),
            ("UPDATE", "running", "swimming"),
        ]
        assert history[0].actor_kind == "api_key" and history[0].version == first
        (change,) = pt.diff("fay", first, first + 1)
        assert (change.path, change.op, change.old, change.new) == (path, "UPDATE", "running", "swimming")
        back = pt.revert("fay", first, base_version=first + 1)
        assert back.status == "applied" and back.head_version == first + 2
        assert pt.tree("fay").tree == {path: "running"}
        assert pt.revert("fay", first).status == "unchanged"
        assert pt.subject("fay").head_version == first + 2
