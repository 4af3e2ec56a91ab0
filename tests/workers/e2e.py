"""Helpers of the end-to-end ingest tests (HTTP ingest, waiting, the exactly-once/in-order check)."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from memory.models import Chunk, OpRecord, Subject, TreeVersion


def post_pairs(client, external_id, n_pairs, start=0):
    messages = []
    for i in range(start, start + n_pairs):
        messages += [
            {
                "role": "user",
                "content": f"My favourite number today is {i} and I like {i} apples",
                "idempotency_key": f"u{i}",
            },
            {"role": "assistant", "content": f"Noted: {i}", "idempotency_key": f"a{i}"},
        ]
    resp = client.post(f"/v1/subjects/{external_id}/messages", {"messages": messages}, format="json")
    assert resp.status_code == 202, resp.content
    return resp.json()


def all_applied(expected: int):
    def check():
        return Chunk.objects.filter(status="applied").count() == expected == Chunk.objects.count()

    return check


def assert_each_chunk_applied_once_in_order(
    n_subjects: int, chunks_per_subject: int, *, version_each: bool = True
):
    """Every chunk applied, its ops written exactly once, versions made in chunk order.

    ``version_each``: every chunk changed the tree (the stand-in always does; a real model's
    recorded ops may be NO_OP or rejected, and then that chunk makes no version).
    """
    assert set(Chunk.objects.values_list("status", flat=True)) == {"applied"}
    batches = Counter(
        chunk for chunk, _batch in OpRecord.objects.order_by().values_list("chunk_id", "batch").distinct()
    )
    assert len(batches) == n_subjects * chunks_per_subject
    assert set(batches.values()) == {1}, "a chunk was applied more than once"
    for subject in Subject.objects.all():
        rows = list(
            TreeVersion.objects.filter(subject=subject)
            .order_by("number")
            .values_list("number", "chunk__start_seq")
        )
        starts = [s for _, s in rows]
        assert [n for n, _ in rows] == list(range(1, len(rows) + 1))
        assert starts == sorted(starts) and len(set(starts)) == len(starts)  # strictly in chunk order
        if version_each:
            assert starts == [1 + 6 * k for k in range(chunks_per_subject)]


def serve_fixture(engine):
    """A module-scoped Ray Serve MemListener app with ``engine`` (an EngineConfig)."""
    pytest.importorskip("ray", reason="ray[serve] (the 'serve' extra) is not installed")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from serving.config import AppConfig
    from tests.ray_serve import serve_memlistener

    config = AppConfig(engine=engine, max_batch_size=16, batch_wait_timeout_s=0.005, num_cpus=0.5)
    return serve_memlistener(config, num_cpus=2)
