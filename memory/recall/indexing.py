"""Writing a subject's messages into the evidence index (deterministic keys: re-running a span
upserts the same rows), and removing them. An erasure before or during the upsert leaves no row.
"""

from __future__ import annotations

import logging

from memory.models import Message, Subject

from .units import UnitTurn, pair_units

logger = logging.getLogger(__name__)


def _turns(subject_id: int, start_seq: int, end_seq: int) -> list[UnitTurn]:
    rows = (
        Message.objects.filter(subject_id=subject_id, seq__gte=start_seq, seq__lte=end_seq)
        .order_by("seq")
        .values_list("seq", "role", "content", "ts", "session_id")
    )
    return [
        UnitTurn(str(seq), role, content, seq, int(ts.timestamp() * 1000) if ts else 0, session or "")
        for seq, role, content, ts, session in rows
    ]


def evidence_index_span(*, subject_id: int, start_seq: int, end_seq: int, index=None, embedder=None) -> int:
    """Embed and upsert the pair units of messages start_seq..end_seq; returns rows written (0 if erased)."""
    from memory.recall import runtime

    from .index import EvidenceRow

    subject = Subject.objects.filter(pk=subject_id).only("id", "tenant_id").first()
    if subject is None:
        logger.info("index span skipped: subject %s no longer exists", subject_id)
        return 0
    units = pair_units(_turns(subject_id, start_seq, end_seq))
    if not units:
        return 0
    embedder = embedder or runtime.configured_embedder()
    index = index or runtime.configured_index()
    vectors = embedder.embed([u.text for u in units])
    rows = [
        EvidenceRow(subject.tenant_id, subject.pk, u.start_seq, u.end_seq, u.text, vector, u.ts_ms, u.session)
        for u, vector in zip(units, vectors, strict=True)
    ]
    # Erasure wins every race: erased while embedding, nothing is written; erased during the upsert
    # (its purge may have run before the rows landed), they are deleted again.
    if not _exists(subject_id):
        logger.info("index span dropped: subject %s erased while it was embedded", subject_id)
        return 0
    written = index.upsert(rows)
    if not _exists(subject_id):
        index.delete_subject(subject.tenant_id, subject_id)
        logger.info("index span withdrawn: subject %s erased during its upsert", subject_id)
        return 0
    return written


def _exists(subject_id: int) -> bool:
    return Subject.objects.filter(pk=subject_id).exists()


def evidence_erase(*, tenant_id: int, subject_id: int) -> int:
    """Delete every evidence row of the subject (after erasure)."""
    from memory.recall import runtime

    return runtime.configured_index().delete_subject(tenant_id, subject_id)
