"""The extractive engine (kind ``extractive``): rules instead of a language model, the floor every
model must beat.

It reads the pointing context of each prompt (``serving.facts.PointingContext``) and writes pointer
items (:mod:`memory.engine.pointing`), handed over as they are (``Generation.items``: no JSON to
parse back); the listener maps them to ops like any model's pointers, and the store gates and
audits them. Deterministic, no generative model, milliseconds a chunk; every value it writes is
a trimmed copy of the user's words, so it is grounded by construction.

- From the fact pipeline's kept, placed clauses (:func:`fact_pointers`, the product's): each
  becomes a short dated third-person fact (:func:`state_fact`) filed under its best candidate leaf
  with room for it; an explicit self-retraction deletes the filled leaf it names.
- For a context built without it (:func:`extractive_pointers`, whole sentences by rule):

  - each self-disclosing user sentence (:func:`memory.engine.candidates.is_self_disclosure`) goes
    to its best candidate leaf as :func:`memory.engine.clauses.third_person` of the sentence;
  - a retraction ("please forget the half marathon", "I no longer ...") names the filled candidate
    leaf whose value shares the most salient words with it, as a DELETE (the pointer mapping then
    removes just the named clauses);
  - the clause goes to the sentence's best candidate leaf that is still free in this chunk and has
    room for it without dropping an older clause; when none has room, to its best free leaf (whose
    oldest clause then goes): one item per leaf, so facts spread over the fitting leaves instead
    of pushing each other out;
  - nothing self-disclosing: ``NO_OP``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from serving.spacy_pipeline import import_spacy_without_torch

import_spacy_without_torch()  # before the rewrite imports lemminflect, and so spaCy

from memory.engine.candidates import (  # noqa: E402
    Candidates,
    UserSentence,
    is_retraction,
    is_self_disclosure,
    salient,
)
from memory.engine.chatter import is_small_talk  # noqa: E402
from memory.engine.clauses import (  # noqa: E402
    SEPARATOR,
    anchored,
    clauses_of,
    duplicate_leaf,
    merge_clauses,
    no_state,
    third_person,
    trim,
)
from memory.engine.dates import DatePhrase, date_phrases, is_counterfactual, with_dates  # noqa: E402
from memory.engine.facts import VAGUE_FLOOR  # noqa: E402
from memory.engine.grounding import proper_nouns  # noqa: E402
from memory.engine.rewrite import rewrite  # noqa: E402
from memory.engine.text import content_stems, number_tokens  # noqa: E402
from serving.engines.base import Generation, InProcessEngine, Prompt  # noqa: E402
from serving.facts import PlacedFact  # noqa: E402

EXTRACTIVE_MODEL_ID = "extractive/2"


class ExtractiveEngine(InProcessEngine):
    model_id = EXTRACTIVE_MODEL_ID

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        out = []
        for prompt in prompts:
            start = time.perf_counter()
            ctx = prompt.pointing
            if ctx is None:
                out.append(
                    Generation(error="the extractive engine needs the pointing pipeline", retryable=False)
                )
                continue
            if ctx.facts:
                items = fact_pointers(
                    ctx.sentences, ctx.facts, ctx.candidates, ctx.tree, ctx.budgets, ctx.singles
                )
            else:
                items = extractive_pointers(ctx.sentences, ctx.candidates, ctx.budgets)
            out.append(
                Generation(
                    text=json.dumps({"ops": items}, ensure_ascii=False),  # for recordings only
                    items=tuple(items),
                    model_id=self.model_id,
                    latency_ms=(time.perf_counter() - start) * 1000,
                )
            )
        return out


__all__ = [
    "EXTRACTIVE_MODEL_ID",
    "ExtractiveEngine",
    "extractive_pointers",
    "fact_pointers",
    "state_fact",
]

# A sentence that talks to the other person ("your support means a lot") is about them, not a fact
# of the subject's own (measured: dropping these raised precision at equal coverage).
_ADDRESSED = re.compile(r"\b(you|your|you're|yours|you've|you'll)\b", re.IGNORECASE)
#: A clause weighing less (:func:`_weight`) says too little to file.
_MIN_WEIGHT = 3


def extractive_pointers(
    sentences: Sequence[UserSentence], candidates: Candidates, budgets: Mapping[str, int]
) -> list[dict]:
    """Pointer items for one chunk (see the module docstring)."""
    ids = {c.path: c.id for c in candidates.leaves}
    values = {c.path: c.value for c in candidates.leaves if c.value is not None}
    chosen: dict[str, tuple[float, dict]] = {}
    for sentence in sentences:
        leaf = _retraction_leaf(sentence.text, candidates) if is_retraction(sentence.text) else None
        if leaf is not None:
            chosen[leaf.path] = (
                float("inf"),
                {"op": "DELETE", "sentence": sentence.id, "leaf": leaf.id, "value": None},
            )
            continue
        if not is_self_disclosure(sentence.text) or _ADDRESSED.search(sentence.text):
            continue
        ranked = candidates.ranked.get(sentence.id) or (
            (candidates.best_leaf[sentence.id],) if sentence.id in candidates.best_leaf else ()
        )
        placed = _place(sentence.text, ranked, ids, budgets, values, chosen)
        if placed is None:
            continue
        path, score, clause = placed
        item = {"op": "ADD", "sentence": sentence.id, "leaf": ids[path], "value": clause}
        chosen[path] = (score, item)
        values[path] = merge_clauses(values.get(path), clause, budgets.get(path, 80))
    items = [item for _, item in sorted(chosen.values(), key=lambda t: t[1]["sentence"])]
    return items or [{"op": "NO_OP", "sentence": None, "leaf": None, "value": None}]


def _place(text, ranked, ids, budgets, values, chosen):
    """(path, score, clause) for one sentence: its best leaf that is free in this chunk and keeps
    every clause it holds; else its best free leaf (the oldest clause then goes); None if none."""
    fallback = None
    for path, score in ranked:
        if path not in ids or path in chosen:
            continue
        budget = budgets.get(path, 80)
        clause = trim(third_person(text), budget)
        if _weight(clause) < _MIN_WEIGHT:
            return None
        held = clauses_of(values.get(path))
        if len(SEPARATOR.join([*held, clause])) <= budget:
            return path, score, clause
        if fallback is None:
            fallback = (path, score, clause)
    return fallback


def _weight(clause: str) -> int:
    """Content words plus numbers and names: "Has been vegetarian for ten years" weighs 3, and a
    self-introduction ("Maya") counts as a whole fact."""
    names = proper_nouns(clause) or ([clause] if clause[:1].isupper() and " " not in clause.strip() else [])
    return (
        len(content_stems(clause))
        + len(number_tokens(clause))
        + (3 if names and len(clause.split()) <= 3 else 0)
    )


def fact_pointers(
    units: Sequence[UserSentence],
    facts: Mapping[int, PlacedFact],
    candidates: Candidates,
    tree: Mapping[str, str],
    budgets: Mapping[str, int],
    singles: Collection[str] = (),
) -> list[dict]:
    """Pointer items of the fact pipeline for one chunk (``facts``: kept clause id -> its
    placement, with ``leaves`` best first, from ``serving.facts``).

    Each kept clause becomes a short dated third-person fact (:func:`state_fact`) filed under its
    best candidate leaf, never a next one: a full leaf takes it only as :func:`_filed` allows (a
    second-best leaf with room filed "They roast marshmallows" under ``occupation/employer``); a
    fact with no date, number or name the classifier is unsure of (``memory.engine.facts.VAGUE_FLOOR``),
    small talk that slipped through, a fact that still speaks to the other person ("Is proud of you
    for ...", "Loves your stories": about them, not the subject) and a fact the subject's tree
    already holds under any leaf are dropped; an explicit self-retraction deletes the filled leaf it
    names.
    Several facts may go to one leaf (the pointer mapping folds them in order)."""
    ids = {c.path: c.id for c in candidates.leaves}
    values = dict(tree)
    items: list[dict] = []
    for unit in units:
        deleted = None
        retracting = is_retraction(unit.text) or is_retraction(unit.origin)
        if retracting:  # "I quit my job to paint full time": delete, then file the rest
            deleted = _retraction_leaf(unit.origin, candidates)
            if deleted is not None:
                items.append({"op": "DELETE", "sentence": unit.id, "leaf": deleted.id, "value": None})
                values.pop(deleted.path, None)
        placed = facts.get(unit.id)
        if placed is None or (retracting and _TAKING_BACK.search(unit.text)):
            continue  # "please forget that I mentioned X" is never itself a fact
        fact = state_fact(unit.text, unit.ts, unit.origin, verb=placed.verb, joined=placed.joined)
        if (
            not fact
            or (placed.verdict.p_keep < VAGUE_FLOOR and not (placed.concrete or anchored(fact)))
            or is_small_talk(fact)
            or _ADDRESSED.search(fact)
            or duplicate_leaf(fact, values) is not None
        ):
            continue
        ranked = [p for p, _score in placed.leaves if p in ids]
        if deleted is not None:
            ranked = [p for p in ranked if p != deleted.path]
        merged = _filed(fact, ranked[0], values, budgets, singles) if ranked else None
        if merged is None:
            continue
        items.append({"op": "ADD", "sentence": unit.id, "leaf": ids[ranked[0]], "value": fact})
        values[ranked[0]] = merged
    return items or [{"op": "NO_OP", "sentence": None, "leaf": None, "value": None}]


_UNBOUNDED = 1 << 30


def _filed(
    fact: str,
    path: str,
    values: Mapping[str, str],
    budgets: Mapping[str, int],
    singles: Collection[str],
) -> str | None:
    """The value of the leaf ``path`` with ``fact`` merged in (:func:`~memory.engine.clauses.merge_clauses`),
    or None when the leaf does not take it. A leaf with room takes any fact (a single-state leaf
    replaces its value with a new state, so it always takes one; what one is doing or wanted,
    :func:`~memory.engine.clauses.no_state`, is weighed as on any leaf); a clause the fact restates
    or supersedes goes either way: that is an update, not a lack of room. A full leaf takes a fact
    with a date, number or name (:func:`memory.engine.clauses.anchored`: what questions ask for),
    which pushes out an unanchored clause first, and a vague fact only where it pushes out nothing
    dated or named and is not itself the clause that would go first
    (:func:`~memory.engine.clauses.merge_clauses` ``contested``): a vague fact never costs the tree
    a specific one, nor a vague one that says more."""
    old, budget = values.get(path), budgets.get(path, 80)
    if path in singles and not no_state(fact):  # a state replaces; what one does joins the rest
        return merge_clauses(old, fact, budget, single=True)
    if not old or anchored(fact):
        return merge_clauses(old, fact, budget)
    merged = merge_clauses(old, fact, budget, contested=True)
    if merged == old:
        return None  # it would have been the first to go
    unbounded = merge_clauses(old, fact, _UNBOUNDED)
    if merged == unbounded:
        return merged
    kept = set(clauses_of(merged))
    pushed_out = [c for c in clauses_of(unbounded) if c not in kept]
    return None if any(anchored(c) for c in pushed_out) else merged


def state_fact(
    clause: str,
    ts: datetime | None = None,
    sentence: str | None = None,
    *,
    verb: str = "",
    joined: Sequence[str] = (),
) -> str:
    """One clause as the fact the tree keeps: relative dates made absolute against the message's
    time (``sentence``, the clause's whole sentence, decides the tense), then a short third-person
    rewrite of the user's own words that keeps the clause's main ``verb`` (``joined``: the verbs
    joined to it, :func:`memory.engine.rewrite.rewrite`)."""
    # rewrite first: its word budget must not cut a "(week before 8 May 2023)" in half
    lead = (
        date_phrases(clause, ts, context=sentence) if ts is not None and not is_counterfactual(clause) else []
    )
    if lead and _LEADS.fullmatch(clause[: lead[0].start]) and lead[0].phrase.lower() != "just":
        # "(Just) two years ago I ran a marathon" -> "Ran a marathon (2024)"; a leading "Just" is no date
        rest = rewrite(clause[lead[0].end :].lstrip(" ,"), verb=verb, joined=joined)
        fact = f"{rest} ({lead[0].absolute})" if rest else ""
    else:
        fact = with_dates(rewrite(clause, verb=verb, joined=joined), ts, context=sentence or clause)
        if _anchors(fact, lead) < _anchors(clause, lead, said=True):
            # the word budget cut off a date, a name or a number: a longer fact keeps it
            longer = with_dates(
                rewrite(clause, max_words=ANCHORED_MAX_WORDS, verb=verb, joined=joined),
                ts,
                context=sentence or clause,
            )
            fact = longer if _anchors(longer, lead) > _anchors(fact, lead) else fact
    just = (
        lead[0] if len(lead) == 1 and lead[0].phrase.lower() == "just" else None
    )  # "just ... last week": the week
    if fact and just is not None and f"({just.absolute})" not in fact:
        fact = f"{fact} ({just.absolute})"  # "I just moved to Lisbon": the rewrite drops "just"
    # "I'm Maya." -> "Is Maya" -> "Maya": a self-introduction is the name itself
    return fact[3:] if _INTRODUCED.fullmatch(fact) else fact


#: What may come before a sentence's opening date: "Just yesterday I joined a church".
_LEADS = re.compile(r"(?i)(?:(?:just|only)\s+)?")


#: Words a fact may take when the usual 12 would cut off its date, a name or a number ("Had a quiet
#: weekend after they went camping with their fam (two weekends before 17 July 2023)", "Will always
#: remember their camping trip (2022) when they saw the Perseid meteor shower"): these anchors are
#: what a question about the fact asks for.
ANCHORED_MAX_WORDS = 18


def _anchors(text: str, lead: Sequence[DatePhrase], *, said: bool = False) -> int:
    """Dates, names and numbers of ``text``: the relative dates of ``lead`` (as said when ``said``,
    else as written out), proper nouns and numbers (a written-out date's own numbers left out)."""
    dates = sum((p.phrase if said else f"({p.absolute})") in text for p in lead)
    from_dates = set() if said else {n for p in lead for n in number_tokens(p.absolute)}
    return dates + len(set(proper_nouns(text))) + len(number_tokens(text) - from_dates)


_TAKING_BACK = re.compile(r"\b(?:forget|no longer|any ?more|is off|called off)\b", re.IGNORECASE)
_INTRODUCED = re.compile(r"Is (?:[A-Z][\w'-]*)(?: [A-Z][\w'-]*){0,2}")


def _retraction_leaf(sentence: str, candidates: Candidates):
    """The filled candidate leaf whose value shares the most salient words with the retraction."""
    names = salient(sentence)
    hits = [
        (len(names & content_stems(c.value or "")), c.score, c)
        for c in candidates.leaves
        if c.value is not None
    ]
    hits = [h for h in hits if h[0] > 0]
    return max(hits, key=lambda h: (h[0], h[1]))[2] if hits else None
