"""Evidence indexing in bulk (a backfill's model phase): applied chunks' spans collected, embedded
together in one call per batch, written and confirmed like their own tasks would; a batch that fails
falls back to one task per span."""

import pytest

from memory.models import Chunk
from memory.recall import runtime
from memory.recall.bulk import embed_texts, evidence_write_spans, span_texts
from memory.recall.index import Scope
from memory.signals import version_applied
from tests.factories import SubjectFactory
from tests.memory.recall.conftest import add_messages, put_version, stored_hits
from workers import indexing

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


class CountingEmbedder:
    def __init__(self, inner, fail: bool = False) -> None:
        self.inner, self.fail, self.calls = inner, fail, []

    @property
    def dim(self):
        return self.inner.dim

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.fail:
            raise RuntimeError("embedder down")
        return self.inner.embed(texts)


def _count(subject):
    return runtime.configured_index().count(Scope(subject.tenant_id, subject.pk))


def _applied(tenant, pairs):
    subject = SubjectFactory(tenant=tenant)
    end = add_messages(subject, pairs)
    version = put_version(subject, {}, span=(1, end))
    return subject, version


def _announce(subject, version):
    version_applied.send(
        sender=None, subject_id=subject.pk, version=version.number, chunk_id=version.chunk_id
    )


@pytest.fixture
def counting(recall_settings, embedder, monkeypatch):
    counter = CountingEmbedder(embedder)
    monkeypatch.setattr(runtime, "configured_embedder", lambda: counter)
    return counter


def test_spans_are_embedded_in_one_call_and_confirmed(counting, tenant, other_tenant):
    runtime.configured_index()  # the index learns its dimension before the counting starts
    counting.calls.clear()
    a, va = _applied(tenant, [("I play chess on Sundays", "Nice"), ("my dog is Rex", "Cute")])
    b, vb = _applied(other_tenant, [("I live in Porto", "Lovely city")])
    with indexing.batched_indexing(size=2) as batch:
        _announce(a, va)
        assert _count(a) == 0  # collected, not indexed one by one
        _announce(b, vb)
    assert batch.indexed == 2
    assert len(counting.calls) == 1 and len(counting.calls[0]) == 3  # three pair units, one call
    assert (_count(a), _count(b)) == (2, 1)
    assert Chunk.objects.filter(pk__in=[va.chunk_id, vb.chunk_id], indexed_at__isnull=False).count() == 2
    hits = stored_hits(runtime.configured_index(), Scope(a.tenant_id, a.pk))
    assert [(h.start_seq, h.end_seq) for h in hits] == [(1, 2), (3, 4)]


def test_the_rest_of_a_batch_is_indexed_when_the_context_ends(counting, tenant):
    subject, version = _applied(tenant, [("I cycle to work", "Good for you")])
    with indexing.batched_indexing(size=64):
        _announce(subject, version)
        assert _count(subject) == 0
    assert _count(subject) == 1


def test_bulk_rows_match_a_single_span_task(recall_settings, embedder, tenant):
    subject, _version = _applied(tenant, [("I live in Porto", "Nice"), ("I sail", "Fun")])
    spans = [(subject.pk, 1, 4), (987654, 1, 2)]
    written = evidence_write_spans(spans, embed_texts(span_texts(spans)))
    assert written == {(subject.pk, 1, 4): 2, (987654, 1, 2): 0}  # an erased subject writes nothing
    bulk = stored_hits(runtime.configured_index(), Scope(subject.tenant_id, subject.pk))
    assert indexing.index_messages.apply(args=(subject.pk, 1, 4)).get() == 2  # same keys: upserted
    again = stored_hits(runtime.configured_index(), Scope(subject.tenant_id, subject.pk))
    assert [(h.start_seq, h.text) for h in bulk] == [(h.start_seq, h.text) for h in again]


def test_a_failed_batch_falls_back_to_one_task_per_span(recall_settings, embedder, tenant, monkeypatch):
    failing = CountingEmbedder(embedder, fail=True)
    monkeypatch.setattr(runtime, "configured_embedder", lambda: failing)
    sent = []
    monkeypatch.setattr(indexing, "send", lambda task, *args, **kw: sent.append((task.name, args)))
    subject, version = _applied(tenant, [("I play the cello", "Lovely")])
    with indexing.batched_indexing(size=1):
        _announce(subject, version)  # never raises into the commit that applied the chunk
    assert sent == [("workers.index_messages", (subject.pk, 1, 2))]
    assert Chunk.objects.get(pk=version.chunk_id).indexed_at is None  # the reconcile's to confirm


def test_outside_a_batch_each_span_is_its_own_task(recall_settings, tenant, monkeypatch):
    sent = []
    monkeypatch.setattr(indexing, "send", lambda task, *args, **kw: sent.append((task.name, args)))
    subject, version = _applied(tenant, [("I play the cello", "Lovely")])
    _announce(subject, version)
    assert sent == [("workers.index_messages", (subject.pk, 1, 2))]
