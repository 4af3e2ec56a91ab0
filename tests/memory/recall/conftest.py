"""Recall fixtures: a real Milvus Lite file per test (tmp dir), the real MiniLM embedder (loaded once)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.models import Chunk, Subject
from memory.recall import runtime
from memory.recall.index import EvidenceIndex, Hit, Scope
from memory.recall.rows import OUTPUT_FIELDS, to_hit
from serving.embedder import get_embedder
from tests.factories import ChunkFactory, MessageFactory, TreeVersionFactory

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def embedder():
    emb = get_embedder("minilm", "")
    emb.embed(["warm up"])
    return emb


@pytest.fixture
def index(tmp_path, embedder):
    idx = EvidenceIndex(str(tmp_path / "evidence.db"), dim=embedder.dim, collection="evidence_test")
    yield idx
    idx.close()


@pytest.fixture
def recall_settings(settings, tmp_path, embedder):
    """Point the runtime at a temp Milvus Lite file; no responder model unless a test sets one."""
    runtime.reset_runtime()
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MILVUS_URI": str(tmp_path / "runtime-evidence.db"),
        "MILVUS_COLLECTION": "evidence_api",
        "EMBEDDER": "minilm",
        "EMBEDDER_PATH": "",
        "RERANKER_PATH": "",
        "RESPONDER_BACKEND": "none",
        "EVIDENCE_INDEXING": True,
    }
    yield settings
    runtime.reset_runtime()


def stored_hits(index: EvidenceIndex, scope: Scope) -> list[Hit]:
    """Every row the index holds for the scope's subject, by start_seq (what a test checks was
    written); none when its collection was never made."""
    name = index.collection_of(scope.subject_id)
    if not index.client.has_collection(name):
        return []
    rows = index.client.query(name, filter=scope.expr(), output_fields=["pk", *OUTPUT_FIELDS], limit=1000)
    return sorted((to_hit(r, 0.0) for r in rows), key=lambda h: h.start_seq)


def add_messages(subject: Subject, pairs: list[tuple[str, str]], *, start_seq: int = 1, session: str = "s1"):
    """Create user/assistant messages; returns the last seq."""
    seq = start_seq
    for i, (user, assistant) in enumerate(pairs):
        ts = T0 + timedelta(minutes=seq + i)
        MessageFactory(subject=subject, seq=seq, role="user", content=user, ts=ts, session_id=session)
        MessageFactory(
            subject=subject, seq=seq + 1, role="assistant", content=assistant, ts=ts, session_id=session
        )
        seq += 2
    return seq - 1


def put_version(subject: Subject, snapshot: dict, *, span: tuple[int, int] | None = None):
    """Write tree version head+1 (optionally produced by an applied chunk over `span`) and make it head."""
    number = subject.head_version + 1
    chunk = None
    if span is not None:
        chunk = ChunkFactory(subject=subject, start_seq=span[0], end_seq=span[1], status=Chunk.Status.APPLIED)
    version = TreeVersionFactory(
        subject=subject,
        number=number,
        snapshot=snapshot,
        chunk=chunk,
        created_by="chunk" if chunk else "import",
    )
    if chunk is not None:
        Chunk.objects.filter(pk=chunk.pk).update(produced_version=version)
    Subject.objects.filter(pk=subject.pk).update(head=version, head_version=number)
    subject.refresh_from_db()
    return version
