"""The fast/deep router, from the query and the tree only (never answers): deep when max(cue, gap) >=
``ROUTER_THRESHOLD``; ``cue`` is episodic, temporal or causal wording (strong 1.0, weak 0.5), ``gap``
1 - the share of the query's content words found in the tree's non-empty leaves.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[a-z0-9]+")

STRONG_CUES: tuple[str, ...] = (
    r"\bwhy\b",
    r"\bwhen\b",
    r"\blast time\b",
    r"\bfirst time\b",
    r"\bhow long (ago|have|has|did)\b",
    r"\bwhat (did|have) (i|we|you) (say|said|tell|told|mention|talk)",
    r"\b(yesterday|last (week|month|year|night|weekend))\b",
    r"\b(what|which) (date|day|year|month)\b",
    r"\b(reason|because)\b",
    r"\b\d{4}\b",
    r"\bago\b",
)
WEAK_CUES: tuple[str, ...] = (
    r"\bremember\b",
    r"\brecall\b",
    r"\bmention(ed)?\b",
    r"\b(before|after|earlier|previously|since|used to)\b",
    r"\bdid (i|we|you)\b",
    r"\bhow (many|often)\b",
    r"\bchanged?\b",
)

STOP_WORDS = frozenset(
    """a an the and or but if of to in on at for with about from by as is are was were be been being am do does
    did doing have has had having i me my mine myself we our ours you your yours he she it they them their his
    her its this that these those what which who whom whose how where there here can could should would will
    shall may might must not no yes so than too very just also any some all each every more most other such
    into over under again then once up down out off tell know think like get got please let us one ever""".split()
)


@dataclass(frozen=True)
class RouteDecision:
    mode: str  # "fast" | "deep"
    score: float
    threshold: float
    reason: str
    signals: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "score": round(self.score, 4),
            "threshold": self.threshold,
            "reason": self.reason,
            "signals": self.signals,
        }


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1}


def tree_words(leaves: Iterable[tuple[str, str]]) -> set[str]:
    words: set[str] = set()
    for path, value in leaves:
        words |= content_words(path.replace("/", " ").replace("_", " "))
        words |= content_words(value)
    return words


def cue_signal(query: str) -> tuple[float, list[str]]:
    q = query.lower()
    for weight, cues in ((1.0, STRONG_CUES), (0.5, WEAK_CUES)):
        if matched := [m.group(0) for p in cues if (m := re.search(p, q))]:
            return weight, matched
    return 0.0, []


def relevant_paths(query: str, tree: Mapping[str, str], *, limit: int = 12) -> list[str]:
    """Non-empty leaves sharing content words with the query, best overlap first."""
    qw = content_words(query)
    scored = []
    for path, value in tree.items():
        if not value:
            continue
        if n := len(qw & tree_words([(path, value)])):
            scored.append((-n, path))
    return [p for _, p in sorted(scored)[:limit]]


def route(query: str, tree: Mapping[str, str], *, threshold: float = 0.5) -> RouteDecision:
    leaves = [(p, v) for p, v in tree.items() if v]
    cue, matched = cue_signal(query)
    qw = content_words(query)
    tw = tree_words(leaves)
    covered = sorted(qw & tw)
    overlap = (len(covered) / len(qw)) if qw else 1.0
    gap = 1.0 - overlap if leaves else 1.0
    score = max(cue, gap)
    mode = "deep" if score >= threshold else "fast"
    if mode == "deep":
        reason = (
            f"episodic/temporal/causal cue {matched!r}"
            if cue >= gap
            else f"tree covers {len(covered)}/{len(qw)} query words"
            if leaves
            else "tree is empty"
        )
    else:
        reason = f"tree covers {len(covered)}/{len(qw)} query words and no strong cue"
    decision = RouteDecision(
        mode=mode,
        score=score,
        threshold=threshold,
        reason=reason,
        signals={
            "cue": cue,
            "cues_matched": matched,
            "overlap": round(overlap, 4),
            "gap": round(gap, 4),
            "query_words": len(qw),
            "covered_words": covered[:20],
            "leaves": len(leaves),
        },
    )
    logger.info("router decision mode=%s score=%.3f threshold=%.2f reason=%s", mode, score, threshold, reason)
    return decision
