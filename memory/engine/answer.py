"""Extractive answers: quote the leaf values and evidence sentences that support a question, cited.

No model call, deterministic, pure Python. The caller (``memory.services.query``) hands in the visible
leaves (path -> value), the deep-recall evidence and, optionally, MiniLM vectors of the question and of
each passage. A passage is a clause of a leaf value (cited by its path) or a sentence of an evidence
unit (cited ``evidence N``, its rank in the answer prompt); each scores ``COSINE_WEIGHT * cosine +
LEXICAL_WEIGHT * overlap`` and the best one, with any close runner-up that is not a near-duplicate of
it, is quoted -- or :data:`NOTHING` when none scores ``min_score``. The answer is made of the passages
only: it never writes a negation the context does not hold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from .clauses import SEPARATOR
from .text import content_stems, split_sentences

NOTHING = "The memory holds no information on that."
COSINE_WEIGHT = 0.6
LEXICAL_WEIGHT = 0.4
MIN_SCORE = 0.2  # below it the best passage is not taken as support (a leaf needs cosine >= 0.25 alone)
RUNNER_UP = 0.85  # a second passage is quoted when it scores at least this share of the best one
RUNNER_UP_COSINE = 0.5  # ... and shares a word with the question that is no proper name, or is this close
LEAF_BONUS = 0.05  # the tree is the subject's current state: a tie goes to the leaf
OTHER_SPEAKER_PENALTY = 0.1  # evidence lines of the other speaker support less than the subject's own
DATE_BONUS = 0.1  # a "when" question: a passage that carries a date (evidence's own, or in the value)
MAX_QUOTE_WORDS = 40

_ROLE = re.compile(r"^(user|assistant):\s*", re.IGNORECASE)
_WHEN = re.compile(r"\b(when|what (date|day|year|month|time)|how long ago)\b", re.IGNORECASE)
_DATED = re.compile(
    r"\b(1[89]\d\d|20\d\d)\b|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}\b"
    r"|\b\d{1,2} (jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
    re.IGNORECASE,
)
NAME_PREFIX = "identity/name/"  # leaves naming the subject: their words say whom a question is about
_VOCATIVE = re.compile(r",\s*([A-Z][a-z]+)\s*[!.?]")  # "..., Maya!" / "Yep, Caroline."
MIN_STEMS = 2  # an evidence sentence needs this many content words besides names ("Yep, Caroline" has 1)
_QUESTION_WORDS = frozenset({"what", "when", "where", "who", "why", "how", "which", "whom", "whose", "doe"})


@dataclass(frozen=True, slots=True)
class Passage:
    """One quotable piece of the context. ``cite``: a leaf path or ``evidence N``."""

    text: str
    cite: str
    kind: str  # "leaf" | "evidence"
    role: str = ""  # evidence: "user" (the subject) or "assistant" (the other speaker)
    date: str = ""  # evidence: the unit's date, "2 Mar 2026"


@dataclass(frozen=True, slots=True)
class Support:
    passage: Passage
    score: float
    cosine: float
    overlap: float


@dataclass(frozen=True, slots=True)
class ExtractiveAnswer:
    text: str
    supports: tuple[Support, ...]

    @property
    def citations(self) -> list[dict[str, object]]:
        """One entry per quoted passage: kind, cite (leaf path or ``evidence N``), quote, score."""
        return [
            {
                "kind": s.passage.kind,
                "cite": s.passage.cite,
                "quote": s.passage.text,
                "score": round(s.score, 4),
            }
            for s in self.supports
        ]


def _date(ts: object) -> str:
    if not isinstance(ts, str) or not ts:
        return ""
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ""
    return f"{when.day} {when:%b %Y}"


def passages(leaves: Mapping[str, str], evidence: Sequence[Mapping[str, object]] = ()) -> list[Passage]:
    """The context as passages: leaf clauses (schema order as given), then evidence sentences."""
    out: list[Passage] = []
    for path, value in leaves.items():
        for clause in str(value or "").split(SEPARATOR):
            if clause.strip():
                out.append(Passage(clause.strip(), path, "leaf"))
    for rank, ev in enumerate(evidence, 1):
        source = ev.get("source")
        date = _date(source.get("ts")) if isinstance(source, Mapping) else ""
        for line in str(ev.get("text") or "").splitlines():
            m = _ROLE.match(line)
            role = m.group(1).lower() if m else ""
            body = line[m.end() :] if m else line
            for sentence in split_sentences(body):
                # a question asserts nothing ("Are there other ways you'd like to stay active?")
                asserts = not sentence.rstrip().endswith("?")
                if asserts and len(content_stems(_uncapitalised(sentence))) >= MIN_STEMS:
                    out.append(Passage(sentence, f"evidence {rank}", "evidence", role=role, date=date))
    return out


def _uncapitalised(text: str) -> str:
    """``text`` without its capitalised words but the first: what is left of it besides names."""
    return " ".join(w for i, w in enumerate(text.split()) if i == 0 or not w[:1].isupper())


def subject_names(leaves: Mapping[str, str], evidence: Sequence[Mapping[str, object]] = ()) -> set[str]:
    """The subject's own names, lower case: the words of the ``identity/name/*`` leaves, and the names
    the other speaker calls the subject by in the evidence ("Welcome to Lisbon, Maya!")."""
    names = {w.lower() for p, v in leaves.items() if p.startswith(NAME_PREFIX) for w in re.findall(r"\w+", v)}
    for ev in evidence:
        for line in str(ev.get("text") or "").splitlines():
            if line.lower().startswith("assistant:"):
                names.update(m.lower() for m in _VOCATIVE.findall(line))
    return names


def without_names(query: str, names: Collection[str]) -> str:
    """``query`` without the subject's names (and their possessive): "What does Maya do?" asks what
    the subject does; the name would pull the name leaf and every sentence that greets them."""
    if not names:
        return query
    pattern = r"\b(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?:'s)?\b"
    return " ".join(re.sub(pattern, " ", query, flags=re.IGNORECASE).split())


def path_words(path: str) -> str:
    """``identity/occupation/current_role`` -> ``identity occupation current role``."""
    return " ".join(path.replace("_", " ").split("/"))


def passage_texts(items: Sequence[Passage]) -> list[str]:
    """What to embed per passage: a leaf clause with its path words, an evidence sentence as is."""
    return [f"{path_words(p.cite)}: {p.text}" if p.kind == "leaf" else p.text for p in items]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _query_stems(query: str) -> set[str]:
    return {s for s in content_stems(query) if s not in _QUESTION_WORDS}


def overlap(query_stems: set[str], text: str, path: str = "") -> float:
    """The share of ``query_stems`` that ``text``, or the words of its leaf ``path``, holds."""
    if not query_stems:
        return 0.0
    return len(query_stems & (content_stems(text) | content_stems(path_words(path)))) / len(query_stems)


def _overlap(query_stems: set[str], passage: Passage) -> float:
    return overlap(query_stems, passage.text, passage.cite if passage.kind == "leaf" else "")


def _same(a: Passage, b: Passage) -> bool:
    """Near-duplicates (a leaf clause and the sentence it came from): content stems Jaccard >= 0.6."""
    sa, sb = content_stems(a.text), content_stems(b.text)
    return a.text == b.text or bool(sa and sb and len(sa & sb) / len(sa | sb) >= 0.6)


def _quote(passage: Passage, *, dated: bool) -> str:
    words = passage.text.split()
    text = " ".join(words[:MAX_QUOTE_WORDS]) + (" …" if len(words) > MAX_QUOTE_WORDS else "")
    text = text.rstrip(" .;,")
    if passage.kind == "leaf":
        return f"{text[:1].upper()}{text[1:]} [{passage.cite}]"
    who = "the other speaker" if passage.role == "assistant" else "the user"
    when = f", {passage.date}" if passage.date and dated else ""
    return f'"{text}" ({who}{when}) [{passage.cite}]'


def extractive_answer(
    query: str,
    items: Sequence[Passage],
    *,
    query_vector: Sequence[float] | None = None,
    vectors: Sequence[Sequence[float]] | None = None,
    names: Collection[str] = (),
    min_score: float = MIN_SCORE,
    max_supports: int = 2,
) -> ExtractiveAnswer:
    """The best-supported passages for ``query``, quoted and cited; :data:`NOTHING` when none is.

    Without ``vectors`` (one per passage) and ``query_vector`` the score is the overlap alone.
    ``names`` (:func:`subject_names`) are left out of the question's words (embed
    :func:`without_names` of the question for ``query_vector``)."""
    if vectors is not None and len(vectors) != len(items):
        raise ValueError(f"{len(vectors)} vectors for {len(items)} passages")
    stems = _query_stems(without_names(query, names))
    # the question's words that are no proper names ("Caroline", "LGBTQ"): a runner-up must share one
    plain_stems = _query_stems(_uncapitalised(query))
    use_cos = query_vector is not None and vectors is not None
    when = bool(_WHEN.search(query))
    scored: list[Support] = []
    for i, p in enumerate(items):
        overlap = _overlap(stems, p)
        cos = cosine(query_vector, vectors[i]) if use_cos and query_vector is not None and vectors else 0.0
        score = COSINE_WEIGHT * cos + LEXICAL_WEIGHT * overlap if use_cos else overlap
        if p.kind == "leaf":
            score += LEAF_BONUS
        elif p.role == "assistant":
            score -= OTHER_SPEAKER_PENALTY
        if when and (p.date or _DATED.search(p.text)):
            score += DATE_BONUS
        scored.append(Support(p, score, cos, overlap))
    # Stable order on ties: the context's own order (leaves first, then evidence by rank).
    ranked = sorted(scored, key=lambda s: -s.score)
    if not ranked or ranked[0].score < min_score:
        return ExtractiveAnswer(NOTHING, ())
    best = ranked[0].score
    chosen = [ranked[0]]
    for s in ranked[1:]:
        if len(chosen) >= max_supports or s.score < RUNNER_UP * best:
            break
        if any(_same(s.passage, c.passage) for c in chosen):
            continue
        if s.cosine < RUNNER_UP_COSINE and not _overlap(plain_stems, s.passage):
            continue  # "Sounds great, Caroline!" meets the question by the name only
        chosen.append(s)
    text = "; ".join(_quote(s.passage, dated=when) for s in chosen) + "."
    return ExtractiveAnswer(text, tuple(chosen))
