"""Search a subject's memory (``POST /v1/subjects/<id>/search``, the MCP tool ``search_memories``).

- **leaves** of the visible head tree (under ``prefix``), scored ``COSINE_WEIGHT * cosine + (1 -
  COSINE_WEIGHT) * word overlap``; ``since``/``until`` keep those whose value was set in the range.
- **evidence**: one hybrid search, filtered by message time; it counts as the ``special`` tier
  (``query.EVIDENCE_TIER``): without it ``withheld``; an index or embedder failure ``unavailable``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable
from datetime import datetime

from django.db.models import Max

from memory import selectors
from memory.engine.answer import cosine, overlap, path_words
from memory.engine.text import content_stems
from memory.models import OpRecord, Subject
from memory.recall.index import IndexUnavailable, Scope
from memory.services import ServiceError, new_error_id
from memory.services.query import EVIDENCE_TIER, MAX_QUERY_CHARS, _embed_cached, _rendered
from serving.embedder import EmbedderUnavailable

logger = logging.getLogger(__name__)

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
COSINE_WEIGHT = 0.7
#: A loose floor (a search ranks, it does not answer): with MiniLM an unrelated leaf sharing no word
#: scores under 0.1 (cosine -0.05..0.15), an on-topic one 0.19 and up (cosine 0.27..0.65).
MIN_LEAF_SCORE = 0.15


def _ms(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp() * 1000)


def leaf_set_at(subject: Subject, paths: Iterable[str]) -> dict[str, datetime]:
    """When each path's current value was set: its newest applied op (one grouped query)."""
    rows = (
        OpRecord.objects.filter(subject=subject, status=OpRecord.Status.APPLIED, path__in=list(paths))
        .order_by()
        .values("path")
        .annotate(at=Max("created_at"))
    )
    return {row["path"]: row["at"] for row in rows}


def _score_leaves(query: str, leaves: dict[str, str], notices: list[str]) -> list[tuple[str, float]]:
    """(path, score) of every leaf, best first (cosine + word overlap; overlap alone without embedder)."""
    from memory.recall import runtime

    if not leaves:
        return []
    stems = content_stems(query)
    overlaps = {path: overlap(stems, value, path) for path, value in leaves.items()}
    try:
        texts = [f"{path_words(path)}: {value}" for path, value in leaves.items()]
        rows = _embed_cached(runtime.configured_embedder(), [query, *texts])
        cosines = {path: cosine(rows[0], row) for path, row in zip(leaves, rows[1:], strict=True)}
        weight = COSINE_WEIGHT
    except EmbedderUnavailable as exc:
        logger.warning("search without cosine (embedder unavailable): %s", exc)
        notices.append("embedder unavailable: leaves ranked by word overlap only")
        cosines, weight = {}, 0.0
    scored = [(path, weight * cosines.get(path, 0.0) + (1 - weight) * overlaps[path]) for path in leaves]
    return sorted(scored, key=lambda s: (-s[1], s[0]))


def _evidence(subject: Subject, query: str, since, until, limit: int, notices: list[str]) -> tuple[str, list]:
    from memory.recall import runtime
    from memory.recall.search import search_many

    scope = Scope(
        tenant_id=subject.tenant_id, subject_id=subject.pk, min_ts_ms=_ms(since), max_ts_ms=_ms(until)
    )
    try:
        (hits,) = search_many(
            runtime.configured_index(), runtime.configured_embedder(), scope, [query], limit=limit
        )
    except (IndexUnavailable, EmbedderUnavailable) as exc:
        error_id = new_error_id()  # the cause may name the Milvus URI or a model path
        logger.warning("evidence search unavailable for subject %s (error %s): %s", subject.pk, error_id, exc)
        notices.append(f"evidence search unavailable ({type(exc).__name__}, error id {error_id})")
        return "unavailable", []
    return "ok", [
        {"id": hit.pk, "source": hit.source(), "text": hit.text, "score": round(float(hit.score), 6)}
        for hit in hits
    ]


def memories_search(
    *,
    subject: Subject,
    query: str,
    tiers: Collection[str] = selectors.PUBLIC_TIERS,
    prefix: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = DEFAULT_LIMIT,
) -> dict:
    """Ranked leaves and evidence of ``subject`` for ``query`` (see the module docstring)."""
    started = time.perf_counter()
    query = (query or "").strip()
    if not query or len(query) > MAX_QUERY_CHARS:
        raise ServiceError(f"query must hold 1 to {MAX_QUERY_CHARS} characters.", field="query")
    if not 1 <= limit <= MAX_LIMIT:
        raise ServiceError(f"limit must be between 1 and {MAX_LIMIT}.", field="limit")
    if since is not None and until is not None and since > until:
        raise ServiceError("since is after until.", field="since")
    notices: list[str] = []
    schema = selectors.subject_schema(subject)
    visible, _ = _rendered(subject, schema, tiers)
    leaves = {path: value for path, value in visible.items() if path.startswith(prefix)}
    set_at = leaf_set_at(subject, leaves) if leaves else {}
    if since is not None or until is not None:
        leaves = {
            path: value
            for path, value in leaves.items()
            if path in set_at
            and (since is None or set_at[path] >= since)
            and (until is None or set_at[path] <= until)
        }
    leaf_hits = [
        {
            "path": path,
            "tier": getattr(schema.leaf(path), "tier", None),
            "value": leaves[path],
            "score": round(score, 4),
            "set_at": set_at[path].isoformat() if path in set_at else None,
        }
        for path, score in _score_leaves(query, leaves, notices)[:limit]
        if score >= MIN_LEAF_SCORE
    ]
    timings = {"leaves_ms": (time.perf_counter() - started) * 1000}
    if EVIDENCE_TIER in tiers:
        evidence_status, evidence = _evidence(subject, query, since, until, limit, notices)
        timings["evidence_ms"] = (time.perf_counter() - started) * 1000 - timings["leaves_ms"]
    else:
        evidence_status, evidence = "withheld", []
        notices.append(
            f"evidence withheld: raw dialogue counts as the {EVIDENCE_TIER!r} tier and is searched only "
            "for keys with the read_special scope"
        )
    timings["total_ms"] = (time.perf_counter() - started) * 1000
    return {
        "subject": subject.external_id,
        "query": query,
        "version": subject.head_version,
        "leaves": leaf_hits,
        "evidence": evidence,
        "evidence_status": evidence_status,
        "notices": notices,
        "timings_ms": {k: round(v, 3) for k, v in timings.items()},
    }
