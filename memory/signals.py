"""Hooks for follow-up work, sent only after the writing transaction commits, with plain ids only.

- ``version_applied(subject_id, version, chunk_id|None)``: a new tree version was committed.
- ``subject_erased(tenant_id, subject_id, external_id)``: receivers delete the subject's vectors and
  caches; ``external_id`` is for stores keyed by it and is never persisted after erasure.
- ``ops_pending_review(subject_id, op_ids)``: ops were held for review.
- ``review_decided(subject_id, decision, approved, rejected, declined, version|None)``: a moderator
  decided held ops of one subject (``decision`` ``"approved"`` or ``"declined"``; ``rejected``: approved
  ops the re-gate refused; ``version``: what an approval wrote, also sent as ``version_applied``).
- ``chunk_failed(chunk_id)``: a chunk was given up for good (``workers`` sends ``ingest.failed``).
- ``chunks_ready(tenant_id|None)``: chunks became ready for the MemListener; ``workers`` requests a
  dispatch, so the services never import the workers.
"""

from __future__ import annotations

from django.dispatch import Signal

version_applied = Signal()
subject_erased = Signal()
ops_pending_review = Signal()
review_decided = Signal()
chunks_ready = Signal()
chunk_failed = Signal()
