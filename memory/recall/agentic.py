"""Agentic recall (docs/ARCHITECTURE.md, "The path of one query", step 4): the model's 2-3 queries
and the original run as hybrid searches, fused by rank, reranked, kept within the token budget.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memory.engine.render import count_tokens
from serving.embedder import Embedder

from .index import EvidenceIndex, Hit, Scope
from .rerank import Reranker
from .router import relevant_paths
from .rows import Span
from .search import Strategy, rrf_fuse, search_many

EXPANSION_PROMPT_VERSION = "expand-v1"
EXPANSION_RULES = (
    "You help search a user's past conversations. Given the user's question and what the user's memory "
    "profile already says, write {n} short, different search queries (keywords or a short sentence each) "
    "that would find the conversation turns holding the answer: name the likely people, events, places, "
    "times and synonyms. Do not answer the question. Reply with JSON only: "
    '{{"queries": ["...", "..."]}}\n'
)
MAX_EXPANSION_CHARS = 300


def expansion_schema(n: int) -> dict:
    return {
        "type": "object",
        "properties": {
            "queries": {
                "type": "array",
                "items": {"type": "string", "minLength": 2, "maxLength": MAX_EXPANSION_CHARS},
                "minItems": 1,
                "maxItems": n,
            }
        },
        "required": ["queries"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class RecallConfig:
    expansions: int = 3
    per_query_k: int = 8
    rerank_candidates: int = 20
    strategy: Strategy = "batch"  # see search.search_many


@dataclass
class Evidence(Span):
    """A span kept for the answer: ``score`` is the reranker's when there is one, else the fused one."""

    fused_score: float
    rerank_score: float | None
    queries: list[str]
    tokens: int

    def to_dict(self) -> dict:
        return {
            "id": self.pk,
            "source": self.source(),
            "text": self.text,
            "score": round(self.score, 6),
            "fused_score": round(self.fused_score, 6),
            "rerank_score": None if self.rerank_score is None else round(self.rerank_score, 6),
            "queries": self.queries,
            "tokens": self.tokens,
        }


@dataclass
class RecallResult:
    evidence: list[Evidence]
    queries: list[str]
    expansion: dict
    reranked: bool
    tokens: int
    candidates: int
    timings_ms: dict = field(default_factory=dict)


def _parse_expansions(text: str, original: str, n: int) -> list[str]:
    raw: list = []
    if match := re.search(r"\{.*\}", text, flags=re.S):
        try:
            obj = json.loads(match.group(0))
            raw = obj.get("queries", []) if isinstance(obj, dict) else []
        except json.JSONDecodeError:
            raw = []
    seen = {original.strip().lower()}
    out = []
    for q in raw:
        if not isinstance(q, str):
            continue
        q = " ".join(q.split())[:MAX_EXPANSION_CHARS]
        if len(q) >= 2 and q.lower() not in seen:
            seen.add(q.lower())
            out.append(q)
    return out[:n]


def _original_only(status: str, detail: str) -> tuple[list[str], dict]:
    return [], {"status": status, "detail": f"{detail}; original query only"}


def expand_queries(engine, query: str, tree: Mapping[str, str], *, n: int = 3) -> tuple[list[str], dict]:
    """Ask the model for up to `n` search queries. Never raises; the status says what happened."""
    if engine is None:
        return _original_only("unavailable", "no expansion model configured")
    from serving.engines.base import EngineError, Prompt

    paths = relevant_paths(query, tree)
    memory = "\n".join(f"- {p}: {tree[p]}" for p in paths) or "(nothing relevant)"
    prompt = Prompt(
        static=EXPANSION_RULES.format(n=n),
        dynamic=f"Memory profile (relevant leaves):\n{memory}\n\nQuestion: {query}\nJSON:",
        prompt_version=EXPANSION_PROMPT_VERSION,
    )
    try:
        gen = engine.generate([prompt], expansion_schema(n))[0]
    except EngineError as exc:
        return _original_only("unavailable", f"expansion model unavailable ({exc})")
    except Exception as exc:  # noqa: BLE001 - any engine failure degrades to the original query
        return _original_only("unavailable", f"expansion failed ({type(exc).__name__}: {exc})")
    if gen.error:
        return _original_only("unavailable", f"expansion model error ({gen.error})")
    queries = _parse_expansions(gen.text, query, n)
    if not queries:
        return _original_only("unreadable", "expansion output had no usable queries")
    return queries, {
        "status": "ok",
        "detail": f"{len(queries)} expanded queries",
        "model_id": gen.model_id,
        "tree_paths": paths,
    }


def fuse_under_budget(evidence: Sequence[Evidence], token_budget: int | None) -> tuple[list[Evidence], int]:
    kept, used = [], 0
    for ev in evidence:
        if token_budget is not None and used + ev.tokens > token_budget:
            continue
        kept.append(ev)
        used += ev.tokens
    return kept, used


def agentic_recall(
    query: str,
    tree: Mapping[str, str],
    *,
    scope: Scope,
    index: EvidenceIndex,
    embedder: Embedder,
    engine=None,
    reranker: Reranker | None = None,
    token_budget: int | None = None,
    config: RecallConfig = RecallConfig(),
) -> RecallResult:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    expanded, expansion = expand_queries(engine, query, tree, n=config.expansions)
    timings["expansion_ms"] = (time.perf_counter() - t0) * 1000
    queries = [query, *expanded]

    t1 = time.perf_counter()
    rankings = search_many(
        index, embedder, scope, queries, limit=config.per_query_k, method="hybrid", strategy=config.strategy
    )
    fused: list[Hit] = rrf_fuse(rankings)
    timings["search_ms"] = (time.perf_counter() - t1) * 1000

    candidates = fused[: config.rerank_candidates]
    rerank_scores: list[float | None] = [None] * len(candidates)
    t2 = time.perf_counter()
    if reranker is not None and candidates:
        rerank_scores = list(reranker.score(query, [h.text for h in candidates]))
    timings["rerank_ms"] = (time.perf_counter() - t2) * 1000

    evidence = [
        Evidence(
            pk=h.pk,
            start_seq=h.start_seq,
            end_seq=h.end_seq,
            ts_ms=h.ts_ms,
            session=h.session,
            text=h.text,
            score=rs if rs is not None else h.score,
            fused_score=h.score,
            rerank_score=rs,
            queries=list(h.queries),
            tokens=count_tokens(h.text),
        )
        for h, rs in zip(candidates, rerank_scores, strict=True)
    ]
    if reranker is not None:
        evidence.sort(key=lambda e: (-e.score, e.start_seq))
    kept, used = fuse_under_budget(evidence, token_budget)
    timings["total_ms"] = (time.perf_counter() - t0) * 1000
    return RecallResult(
        evidence=kept,
        queries=queries,
        expansion=expansion,
        reranked=reranker is not None,
        tokens=used,
        candidates=len(fused),
        timings_ms={k: round(v, 3) for k, v in timings.items()},
    )
