"""Erasure wins every race with evidence indexing (issue 24 item 8).

The index task embeds a span (seconds on a busy CPU) and then upserts it. An erasure, and the purge
of the subject's vectors it queues, can land in between: before, the upsert then wrote the erased
subject's text back into the index for good. Both interleavings are driven here step by step, with
an in-memory index standing in for Milvus (what matters is the order of the calls)."""

from __future__ import annotations

import pytest

from memory.recall.indexing import evidence_index_span
from memory.services.subjects import subject_erase
from tests.factories import MessageFactory, SubjectFactory

pytestmark = pytest.mark.django_db


class MemoryIndex:
    def __init__(self) -> None:
        self.rows: dict[tuple[int, int, int], str] = {}
        self.before_upsert = None  # a step run between the task's last check and the write

    def upsert(self, rows) -> int:
        if self.before_upsert is not None:
            self.before_upsert()
        for row in rows:
            self.rows[(row.tenant_id, row.subject_id, row.start_seq)] = row.text
        return len(rows)

    def delete_subject(self, tenant_id: int, subject_id: int) -> int:
        gone = [k for k in self.rows if k[:2] == (tenant_id, subject_id)]
        for key in gone:
            del self.rows[key]
        return len(gone)


class Embedder:
    def __init__(self, during=None) -> None:
        self.during = during

    def embed(self, texts):
        if self.during is not None:
            self.during()
        return [[0.0, 1.0] for _ in texts]


@pytest.fixture
def subject():
    subject = SubjectFactory()
    MessageFactory(subject=subject, seq=1, role="user", content="my secret is Marmalade")
    MessageFactory(subject=subject, seq=2, role="assistant", content="noted")
    return subject


def _erase_and_purge(subject, index: MemoryIndex):
    ids = (subject.tenant_id, subject.pk)

    def step():
        subject_erase(subject=subject)
        index.delete_subject(*ids)  # the purge task, run at once

    return step


def test_the_span_is_indexed_when_nothing_intervenes(subject):
    index = MemoryIndex()
    assert (
        evidence_index_span(subject_id=subject.pk, start_seq=1, end_seq=2, index=index, embedder=Embedder())
        == 1
    )
    assert any("Marmalade" in text for text in index.rows.values())


def test_erased_and_purged_while_embedding_nothing_is_written(subject):
    index = MemoryIndex()
    embedder = Embedder(during=_erase_and_purge(subject, index))
    assert (
        evidence_index_span(subject_id=subject.pk, start_seq=1, end_seq=2, index=index, embedder=embedder)
        == 0
    )
    assert index.rows == {}


def test_erased_and_purged_just_before_the_write_the_rows_are_withdrawn(subject):
    index = MemoryIndex()
    index.before_upsert = _erase_and_purge(subject, index)
    assert (
        evidence_index_span(subject_id=subject.pk, start_seq=1, end_seq=2, index=index, embedder=Embedder())
        == 0
    )
    assert index.rows == {}, "the erased subject's text came back after its purge"
