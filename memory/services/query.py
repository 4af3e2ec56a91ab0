"""Query services: the memory context for a question (`context_build`: fast, deep or auto) and an
answer over it (`answer_build`: extractive by default, or one responder-model call); docs/ARCHITECTURE.md,
"The path of one query". Raw dialogue may hold a special-category fact verbatim, so evidence counts
as the ``special`` tier (``EVIDENCE_TIER``): without it deep mode stays fast (``withheld``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

from django.db.models import Max

from memory import conf, selectors
from memory.engine.answer import extractive_answer, passage_texts, passages, subject_names, without_names
from memory.engine.render import Rendered, render, token_counter_name
from memory.models import Chunk, Subject
from memory.recall.agentic import agentic_recall
from memory.recall.index import IndexUnavailable, Scope
from memory.recall.rerank import RerankerUnavailable
from memory.recall.router import route
from memory.services import ServiceError, new_error_id
from memory.services.results import AnswerResult, ContextResult
from memory.signals import subject_erased
from serving.embedder import EmbedderUnavailable

logger = logging.getLogger(__name__)

MODES = ("fast", "deep", "auto")
MAX_QUERY_CHARS = 2000
DEFAULT_TOKEN_BUDGET = 4000
MAX_TOKEN_BUDGET = 32000
#: Raw-dialogue evidence is unclassified text, so it is visible only to callers that may see this tier.
EVIDENCE_TIER = "special"

ANSWER_PROMPT_VERSION = "answer-v1"
EXTRACTIVE_ANSWER_VERSION = "extractive-answer-v1"
ANSWER_RULES = (
    "You are a personal assistant with long-term memory of the user. Answer the user's question using "
    "the memory profile (the user's current state) and, when given, the conversation evidence (past "
    "dialogue, newest facts win on conflict). If neither holds the answer, say you do not know. "
    "Answer briefly.\n"
)


class ModelUnavailable(ServiceError):
    code = "model_unavailable"
    http_status = 503


def _validate(query: object, mode: object, token_budget: object) -> tuple[str, str, int]:
    if not isinstance(query, str) or not query.strip():
        raise ServiceError("query must be a non-empty string.", field="query")
    if len(query) > MAX_QUERY_CHARS:
        raise ServiceError(f"query is longer than {MAX_QUERY_CHARS} characters.", field="query")
    if mode not in MODES:
        raise ServiceError(f"mode must be one of {', '.join(MODES)}.", field="mode")
    if token_budget is None:
        token_budget = DEFAULT_TOKEN_BUDGET
    if (
        isinstance(token_budget, bool)
        or not isinstance(token_budget, int)
        or not 1 <= token_budget <= MAX_TOKEN_BUDGET
    ):
        raise ServiceError(f"token_budget must be an integer in 1..{MAX_TOKEN_BUDGET}.", field="token_budget")
    return query.strip(), mode, token_budget


def evidence_cutoff(subject: Subject, version: int) -> int:
    """Last message seq covered by tree version `version` (-1 when none): evidence beyond it is hidden."""
    if version <= 0:
        return -1
    got = Chunk.objects.filter(
        subject=subject, status=Chunk.Status.APPLIED, produced_version__number__lte=version
    ).aggregate(m=Max("end_seq"))["m"]
    return -1 if got is None else int(got)


# -- rendered-tree cache ---------------------------------------------------------------------
# Rendering is most of a fast-mode read. TreeVersion rows are immutable, so an entry keyed by the
# head version row (pk and creation time: test databases reuse pks), schema, tiers and token counter
# never goes stale. Only head reads are cached. ``subject_erased`` drops this process's entries;
# other processes' become unreachable (the key needs the head row) and age out after
# RENDER_CACHE_TTL_S.
RENDER_CACHE_MAX = 4096
RENDER_CACHE_TTL_S = 300.0


class _Lru:
    """A thread-safe mapping of at most ``size`` entries, least recently used out first, each kept
    ``ttl_s`` seconds (None: until pushed out)."""

    def __init__(self, size: int, ttl_s: float | None = None) -> None:
        self.size, self.ttl_s, self.lock = size, ttl_s, threading.Lock()
        self.items: OrderedDict[tuple, tuple[float, Any]] = OrderedDict()

    def get(self, key: tuple) -> Any:
        with self.lock:
            hit = self.items.get(key)
            if hit is None or hit[0] <= time.monotonic():
                return None
            self.items.move_to_end(key)
            return hit[1]

    def put(self, key: tuple, value: Any) -> None:
        expires = time.monotonic() + self.ttl_s if self.ttl_s is not None else float("inf")
        with self.lock:
            self.items[key] = (expires, value)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


_render_cache = _Lru(RENDER_CACHE_MAX, RENDER_CACHE_TTL_S)


def _visible_rendered(tree, schema, tiers) -> tuple[Mapping[str, str], Rendered]:
    visible = selectors.tree_visible(tree, schema, tiers=tiers)
    return MappingProxyType(visible.to_dict()), render(visible, schema, tiers=tiers)


def _rendered(subject: Subject, schema, tiers) -> tuple[Mapping[str, str], Rendered]:
    """(visible leaves, rendering) of the subject's head version, cached (read-only mapping)."""
    tiers_key = tuple(sorted(set(tiers)))
    head = subject.head if subject.head_id is not None else None
    key = (
        subject.pk,
        subject.head_id,
        head.created_at if head is not None else None,
        subject.schema_id,
        subject.schema_version,
        tiers_key,
        token_counter_name(),
    )
    hit = _render_cache.get(key)
    if hit is None:
        hit = _visible_rendered(selectors.tree_current(subject), schema, tiers_key)
        _render_cache.put(key, hit)
    return hit


def render_cache_clear(subject_id: int | None = None) -> None:
    """Drop cached renderings (of one subject, or all)."""
    with _render_cache.lock:
        for key in [k for k in _render_cache.items if subject_id is None or k[0] == subject_id]:
            del _render_cache.items[key]


def _on_subject_erased(sender, subject_id: int, **kwargs) -> None:
    render_cache_clear(subject_id)


subject_erased.connect(_on_subject_erased, dispatch_uid="memory.services.query.render_cache")


def context_build(
    *,
    subject: Subject,
    query: str,
    mode: str = "auto",
    as_of: int | datetime | None = None,
    token_budget: int | None = None,
    tiers: Collection[str] = selectors.PUBLIC_TIERS,
) -> ContextResult:
    return _context(subject, query, mode, as_of, token_budget, tiers)[0]


def _context(subject: Subject, query, mode, as_of, token_budget, tiers) -> tuple[ContextResult, Mapping]:
    """`context_build`'s result and the visible leaves it rendered (path -> value)."""
    started = time.perf_counter()
    query, mode, budget = _validate(query, mode, token_budget)
    schema = selectors.subject_schema(subject)
    if as_of is None:
        number = subject.head_version
        visible, rendered = _rendered(subject, schema, tiers)
    else:
        try:
            # An older version: no value that was special when written (selectors.special_in_history).
            number, tree = selectors.tree_at_visible(subject, as_of, tiers=tiers)
        except LookupError as exc:
            raise ServiceError(str(exc), field="as_of", code="not_found") from exc
        visible, rendered = _visible_rendered(tree, schema, tiers)
    timings = {"tree_ms": (time.perf_counter() - started) * 1000}

    if mode == "auto":
        decision = route(query, visible, threshold=conf.get().recall.router_threshold)
        router = decision.to_dict()
        mode_used = decision.mode
        logger.info("router subject=%s version=%s -> %s", subject.pk, number, mode_used)
    else:
        router = {"mode": mode, "reason": "mode requested by the caller", "score": None}
        mode_used = mode

    notices: list[str] = []
    if rendered.token_count > budget:
        notices.append(f"tree context ({rendered.token_count} tokens) exceeds token_budget {budget}")
    evidence: list[dict] = []
    recall: dict | None = None
    if mode_used == "deep" and EVIDENCE_TIER not in tiers:
        recall = {
            "status": "withheld",
            "fallback": "fast",
            "detail": f"evidence is raw dialogue and counts as the {EVIDENCE_TIER!r} tier",
        }
        notices.append(
            "evidence withheld: raw dialogue may hold special-category data and is returned only to keys "
            "with the read_special scope; answered in fast mode (tree only)"
        )
        mode_used = "fast"
    elif mode_used == "deep":
        recall, evidence, mode_used = _deep(subject, query, visible, number, as_of, budget, rendered)
        notices.extend(recall.pop("notices"))
        timings.update(recall.pop("timings_ms", {}))
    timings["total_ms"] = (time.perf_counter() - started) * 1000
    result = ContextResult(
        subject=subject.external_id,
        query=query,
        mode=mode,
        mode_used=mode_used,
        version=number,
        router=router,
        context={"text": rendered.text, "paths": list(rendered.paths), "tokens": rendered.token_count},
        evidence=evidence,
        recall=recall,
        token_budget=budget,
        tokens=rendered.token_count + sum(e["tokens"] for e in evidence),
        notices=notices,
        timings_ms={k: round(v, 3) for k, v in timings.items()},
    )
    return result, visible


def _deep(
    subject, query, tree: Mapping[str, str], number: int, as_of, budget: int, rendered
) -> tuple[dict, list[dict], str]:
    from memory.recall import runtime

    notices: list[str] = []
    cutoff = evidence_cutoff(subject, number) if as_of is not None else None
    scope = Scope(tenant_id=subject.tenant_id, subject_id=subject.pk, max_seq=cutoff)
    engine, why = runtime.responder_engine()
    try:
        reranker = runtime.configured_reranker()
        result = agentic_recall(
            query,
            tree,
            scope=scope,
            index=runtime.configured_index(),
            embedder=runtime.configured_embedder(),
            engine=engine,
            reranker=reranker,
            token_budget=max(0, budget - rendered.token_count),
            config=runtime.recall_config(),
        )
    except (IndexUnavailable, EmbedderUnavailable, RerankerUnavailable) as exc:
        # The cause names the Milvus URI or a model path: logged under an id, never in the body.
        error_id = new_error_id()
        logger.warning("deep recall unavailable for subject %s (error %s): %s", subject.pk, error_id, exc)
        detail = f"{type(exc).__name__} (error id {error_id})"
        notices.append(f"evidence recall unavailable ({detail}); answered in fast mode (tree only)")
        return {"status": "unavailable", "fallback": "fast", "detail": detail, "notices": notices}, [], "fast"
    expansion = result.expansion
    if expansion["status"] != "ok":
        detail = expansion["detail"]
        if why:  # no responder engine; the runtime logged why (its text may name a model path)
            detail = "no expansion model available; original query only"
        elif expansion["status"] == "unavailable":  # the engine's own error text: logged, shown by id
            error_id = new_error_id()
            logger.warning("query expansion unavailable (error %s): %s", error_id, detail)
            detail = f"expansion model unavailable (error id {error_id}); original query only"
        expansion = {**expansion, "detail": detail}
        notices.append(f"query expansion skipped: {detail}")
    evidence = [ev.to_dict() for ev in result.evidence]
    info = {
        "status": "ok",
        "queries": result.queries,
        "expansion": expansion,
        "reranked": result.reranked,
        "candidates": result.candidates,
        "evidence_cutoff_seq": cutoff,
        "notices": notices,
        "timings_ms": {f"recall_{k}": v for k, v in result.timings_ms.items()},
    }
    return info, evidence, "deep"


def answer_prompt(query: str, context: Mapping):
    from serving.engines.base import Prompt

    parts = [f"Memory profile:\n{context['context']['text'] or '(empty)'}"]
    if context["evidence"]:
        lines = [
            f"[{i}] ({e['source'].get('ts') or 'time unknown'}) {e['text']}"
            for i, e in enumerate(context["evidence"], 1)
        ]
        parts.append("Conversation evidence:\n" + "\n".join(lines))
    parts.append(f"Question: {query}\nAnswer:")
    return Prompt(static=ANSWER_RULES, dynamic="\n\n".join(parts), prompt_version=ANSWER_PROMPT_VERSION)


def answer_build(
    *,
    subject: Subject,
    query: str,
    mode: str = "auto",
    as_of: int | datetime | None = None,
    token_budget: int | None = None,
    tiers: Collection[str] = selectors.PUBLIC_TIERS,
) -> AnswerResult:
    """The context of `context_build` and an answer over it, in the configured answer mode."""
    ctx, leaves = _context(subject, query, mode, as_of, token_budget, tiers)
    if conf.get().answer.mode == "extractive":
        return extractive_build(ctx, leaves)
    return model_build(ctx)


# Passage vectors of extractive answers: a subject's leaf clauses and evidence sentences recur from one
# question to the next, so each text is embedded once per process (per embedder), LRU-bounded.
EMBED_CACHE_MAX = 20000
_embed_cache = _Lru(EMBED_CACHE_MAX)


def _embed_cached(embedder, texts: list[str]) -> list[list[float]]:
    kind = type(embedder)
    key = (f"{kind.__module__}.{kind.__qualname__}", str(getattr(embedder, "path", "")))
    known = {t: _embed_cache.get((*key, t)) for t in dict.fromkeys(texts)}
    if missing := [t for t, row in known.items() if row is None]:
        for text, row in zip(missing, embedder.embed(missing), strict=True):
            known[text] = [float(x) for x in row]
            _embed_cache.put((*key, text), known[text])
    return [known[t] for t in texts]


def extractive_build(ctx: ContextResult, leaves: Mapping[str, str]) -> AnswerResult:
    """Quote the supporting leaf clauses and evidence sentences of `ctx`, cited; no model call (without
    the embedder the choice is lexical only, and a notice says so)."""
    from memory.recall import runtime

    t0 = time.perf_counter()
    items = passages(leaves, ctx.evidence)
    names = subject_names(leaves, ctx.evidence)
    query_vector, vectors = None, None
    notices = list(ctx.notices)
    if items:
        try:
            question = without_names(ctx.query, names)
            rows = _embed_cached(runtime.configured_embedder(), [question, *passage_texts(items)])
            query_vector, vectors = rows[0], rows[1:]
        except EmbedderUnavailable as exc:
            logger.warning("extractive answer without cosine (embedder unavailable): %s", exc)
            notices.append("embedder unavailable: the answer's passages were chosen by word overlap only")
    got = extractive_answer(ctx.query, items, query_vector=query_vector, vectors=vectors, names=names)
    timings = {**ctx.timings_ms, "answer_ms": round((time.perf_counter() - t0) * 1000, 3)}
    return AnswerResult(
        **{**ctx.to_dict(), "notices": notices, "timings_ms": timings},
        answer=got.text,
        model={
            "model_id": "extractive",
            "prompt_version": EXTRACTIVE_ANSWER_VERSION,
            "prompt_tokens": None,
            "completion_tokens": None,
        },
        citations=got.citations,
    )


def model_build(ctx: ContextResult) -> AnswerResult:
    """One responder-model call on `[query, tree, evidence]` (answer mode ``model``)."""
    from memory.recall import runtime

    engine, why = runtime.responder_engine()
    if engine is None:
        raise ModelUnavailable(why or "no responder model configured")
    t0 = time.perf_counter()
    try:
        gen = engine.generate([answer_prompt(ctx.query, ctx)], None)[0]
    except Exception as exc:  # noqa: BLE001 - engine-wide failure
        raise ModelUnavailable(f"responder model failed: {exc}") from exc
    if gen.error:
        raise ModelUnavailable(f"responder model failed: {gen.error}")
    ctx.timings_ms["answer_ms"] = round((time.perf_counter() - t0) * 1000, 3)
    return AnswerResult(
        **ctx.to_dict(),
        answer=gen.text.strip(),
        model={
            "model_id": gen.model_id,
            "prompt_version": ANSWER_PROMPT_VERSION,
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": gen.completion_tokens,
        },
    )
