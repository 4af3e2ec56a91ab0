"""Evidence embedded ahead (``batched_indexing``'s ``expect``, a backfill's look-ahead): the expected
spans' units are embedded before the spans are applied, nothing is written until they are, and what
is written is what indexing them afterwards writes; a span whose messages changed is embedded again."""

import pytest

from memory.models import Chunk, Message
from memory.recall import runtime
from memory.recall.index import Scope
from tests.memory.recall.conftest import stored_hits
from tests.memory.recall.test_bulk_indexing import _announce, _applied, _count, counting  # noqa: F401
from workers import indexing

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_expected_spans_are_embedded_ahead_and_written_when_applied(counting, tenant):  # noqa: F811
    runtime.configured_index()
    a, va = _applied(tenant, [("I play chess on Sundays", "Nice"), ("my dog is Rex", "Cute")])
    b, vb = _applied(tenant, [("I live in Porto", "Lovely city")])
    counting.calls.clear()
    with indexing.batched_indexing(size=16) as batch:
        indexing.index_spans_expected([(a.pk, 1, 4), (b.pk, 1, 2)])
        batch._pool.submit(lambda: None).result()  # the embedding ahead has run
        assert len(counting.calls) == 1 and len(counting.calls[0]) == 3
        assert (_count(a), _count(b)) == (0, 0)  # nothing written before the spans are applied
        _announce(a, va)
        _announce(b, vb)
    assert len(counting.calls) == 1  # applied spans took the vectors embedded ahead
    assert (_count(a), _count(b)) == (2, 1) and batch.indexed == 2
    assert Chunk.objects.filter(pk__in=[va.chunk_id, vb.chunk_id], indexed_at__isnull=False).count() == 2


def test_a_span_whose_messages_changed_is_embedded_again(counting, tenant):  # noqa: F811
    runtime.configured_index()
    subject, version = _applied(tenant, [("I cycle to work", "Good for you")])
    counting.calls.clear()
    with indexing.batched_indexing(size=16):
        indexing.index_spans_expected([(subject.pk, 1, 2)])
        Message.objects.filter(subject=subject, seq=1).update(content="I walk to work")
        _announce(subject, version)
    assert [len(c) for c in counting.calls] == [1, 1]
    hits = stored_hits(runtime.configured_index(), Scope(subject.tenant_id, subject.pk))
    assert [h.text for h in hits] == ["user: I walk to work\nassistant: Good for you"]


def test_expect_outside_a_batch_does_nothing(counting, tenant):  # noqa: F811
    subject = _applied(tenant, [("I swim", "Cool")])[0]
    counting.calls.clear()
    indexing.index_spans_expected([(subject.pk, 1, 2)])
    assert counting.calls == []
