"""A chunk's numbered units and candidate leaves, and the sentence rules that pick among them.

:class:`UserSentence`, :class:`Candidate` and :class:`Candidates` are what a pointing context holds
(``serving.facts.FactStep`` fills them); :func:`is_self_disclosure` and :func:`is_retraction` are the
extractive engine's sentence rules; :func:`retraction_targets` finds the filled leaves a retraction
names; :func:`leaf_text` is what a leaf is embedded as.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .text import STOPWORDS, content_stems, fold, words

FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "we're",
                          "we've", "our", "ours", "us", "im", "ive"})  # fmt: skip
# Explicit self-retractions only (issue 23): "I no longer ...", "I don't ... anymore", "I'm not ...
# any more", "forget that I ...", "please forget ...", "I quit my job", "we broke up", "I stopped
# ...ing", "that plan is off". "I used to ..." (a past fact), "I won't give up", "don't forget to",
# "never stop", "I can't stop" and "gave up sugar" (a diet fact) are not.
_SELF = r"(?:i|we|i'm|im|i am|we're|we are|i've|we've|i have|we have)"
_RETRACTIONS = (
    rf"(?:^|\b{_SELF}\s+(?:\w+ly\s+|just\s+|really\s+|now\s+)?)no longer\b",
    r"(?:^|\b(?:i|we)\s+)(?:really\s+|just\s+)?(?:don't|do not|dont|didn't|did not)\s+"
    r"(?!think|know|feel|care|get|understand|remember|want to talk|mind|"
    r"have (?:as much |the |enough |much |any )?(?:free )?(?:time|energy))\w+\b[^.!?;]{0,50}?\bany ?more\b",
    r"(?:^|\b(?:i'm|im|i am|we're|we are)\s+)not\s+(?!sure|certain|able to tell|gonna lie|going to lie|"
    r"(?:very |that |as |so |too )?(?:good|bad|great) at)"
    r"[^.!?;]{1,50}?\bany ?more\b",
    r"(?:^|[.!,;:]\s*|\bplease\s+(?:just\s+)?|\b(?:can|could|would) you\s+(?:please\s+)?|\byou can\s+)"
    r"forget\s+(?!about it\b|it\b)(?:that\b|about\b|what i\b|i\b|i've\b|i'm\b|my\b|the\b|everything\b)",
    r"\bplease\s+(?:just\s+)?forget\b(?!\s+(?:about\s+)?it\b)",
    r"\b(?:i|we)\s+(?:just\s+|finally\s+|recently\s+|actually\s+)?(?:quit|left|resigned from)\s+"
    r"(?:my|our|the)\s+(?:\w+\s+)?(?:job|role|position|post|work|company|gig|career)\b",
    r"\b(?:we|i)\s+(?:just\s+|finally\s+|recently\s+|actually\s+)?(?:broke up|split up|separated|"
    r"got divorced|divorced)\b",
    r"\b(?:i|we)(?:\s+have|'ve)?\s+(?:just\s+|finally\s+|recently\s+|actually\s+)?stopped\s+"
    r"(?!by\b)\w+ing\b",
    r"\b(?:that|the|my|our)\s+plans?\s+(?:is|are)\s+off\b",
)
_RETRACTION = re.compile("|".join(f"(?:{r})" for r in _RETRACTIONS), re.IGNORECASE)
_REQUEST = re.compile(r"^(can|could|would|will) you\b|^(please|tell me|help me|show me|remind me)\b", re.I)


@dataclass(frozen=True, slots=True)
class UserSentence:
    id: int  # 1-based, in chunk order
    text: str  # what the model is shown: a sentence, or one clause of it
    turn: int  # index of the turn in the chunk
    source: str = ""  # the whole sentence ``text`` was cut from ("" = ``text`` itself)
    ts: datetime | None = None  # when its message was sent, when known

    @property
    def origin(self) -> str:
        """The user's sentence this unit stands for: what an op built from it cites."""
        return self.source or self.text


@dataclass(frozen=True, slots=True)
class Candidate:
    id: int  # 1-based id shown to the model
    path: str
    score: float
    value: str | None  # current value, None when the leaf is empty


@dataclass(frozen=True, slots=True)
class Candidates:
    leaves: tuple[Candidate, ...]
    best_leaf: Mapping[int, tuple[str, float]]  # sentence id -> (path, score) of its best passing leaf
    # sentence id -> its passing leaves, best first (at most ``per_sentence``)
    ranked: Mapping[int, tuple[tuple[str, float], ...]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.leaves


def is_self_disclosure(text: str) -> bool:
    """A first-person statement with content: a fact the subject tells about themself."""
    stripped = text.strip()
    if not stripped or stripped.endswith("?") or _REQUEST.search(stripped):
        return False
    tokens = [fold(w) for w in words(stripped)]
    if not tokens:
        return False
    if not any(t in FIRST_PERSON for t in tokens) and not _elided_subject(tokens):
        return False
    return len(content_stems(stripped)) >= 1


_ELIDED_VERBS = frozenset(
    "been started got went had just finally gonna going trying working thinking feeling lost made took "
    "bought found tried finished joined learned learnt moved visited met spent love loved hate need want "
    "planning hoping looking getting taking doing having".split()
)


def _elided_subject(tokens: list[str]) -> bool:
    """A chat statement with the "I" left out: "Started hitting the gym last week"."""
    first = tokens[0]
    return first in _ELIDED_VERBS or (first.endswith("ed") and len(first) > 4 and first not in STOPWORDS)


def is_retraction(text: str) -> bool:
    """An explicit self-retraction (see ``_RETRACTIONS``; a question is none)."""
    clean = " ".join(text.replace("\u2019", "'").split())
    if not clean or clean.endswith("?"):
        return False
    return bool(_RETRACTION.search(clean))


def leaf_text(path: str, description: str) -> str:
    """What a leaf is embedded as: its path in words, then its description."""
    return f"{path.replace('/', ' ').replace('_', ' ')}: {description}"


def salient(text: str) -> set[str]:
    """Content stems without retraction words, for matching a retraction to a stored clause."""
    noise = {"forget", "mention", "plan", "off", "anymore", "longer", "stop", "quit", "please", "that"}
    return {s for s in content_stems(text) if s not in noise and s not in STOPWORDS}


def retraction_targets(sentences: Sequence[UserSentence], tree: Mapping[str, str]) -> list[str]:
    """Filled leaves whose value shares a salient word with a retraction sentence of the chunk
    ("forget the half marathon" -> the leaf that mentions it), so a DELETE can name them."""
    out: list[str] = []
    for sentence in sentences:
        if not is_retraction(sentence.text):
            continue
        names = salient(sentence.text)
        for path, value in tree.items():
            if path not in out and names & content_stems(value):
                out.append(path)
    return out
