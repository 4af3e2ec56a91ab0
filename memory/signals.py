"""Hooks for follow-up work, sent only after the writing transaction commits.

Receivers (connected by other apps, e.g. ``workers`` for evidence indexing and
``memory.recall`` for vectors/caches) get plain ids, never model instances:

- ``version_applied(sender, subject_id:int, version:int, chunk_id:int|None)``
  after a new tree version was committed.
- ``subject_erased(sender, tenant_id:int, subject_id:int, external_id:str)``
  after a subject was erased; receivers must delete vectors and caches for it.
  ``external_id`` is passed so external stores keyed by it can be purged; it is
  never persisted by the store after erasure.
- ``ops_pending_review(sender, subject_id:int, op_ids:list[int])`` when ops were
  held for review.
- ``review_decided(sender, subject_id:int, decision:str, approved:int, rejected:int, declined:int,
  version:int|None)`` after a moderator decided held ops of one subject (``decision`` is
  ``"approved"`` or ``"declined"``; ``rejected`` counts approved ops the re-gate refused;
  ``version`` is the version an approval produced, which also sends ``version_applied``).
- ``chunk_failed(sender, chunk_id:int)`` after a chunk was given up for good (out of attempts or
  not retryable); ``workers`` sends the ``ingest.failed`` webhook event.
- ``chunks_ready(sender, tenant_id:int|None)`` after chunks became ready for the
  MemListener (ingest, flush, re-queue); ``workers`` answers by requesting a dispatch, so
  the services never import the workers.
"""

from __future__ import annotations

from django.dispatch import Signal

version_applied = Signal()
subject_erased = Signal()
ops_pending_review = Signal()
review_decided = Signal()
chunks_ready = Signal()
chunk_failed = Signal()
