"""Candidate leaves for one chunk, chosen before any model call.

The listener embeds the subject's own sentences of the chunk and every leaf of the schema
(``path`` + description, once per schema version) and hands the cosine matrix here. This module
decides, deterministically:

- which sentences are numbered for the model (:func:`user_sentences`: every sentence of the
  subject's turns, ids from 1), and which ones disclose something about the subject
  (:func:`is_self_disclosure`: first person, a statement, at least one content word);
- which leaves become the chunk's candidates (:func:`select_candidates`): per sentence its
  ``per_sentence`` best leaves at or above ``threshold``; then the ``k`` best of those by score,
  plus every filled leaf scoring at or above ``filled_threshold`` (so an UPDATE can find the
  leaf it changes), in score order;
- when no leaf passes, the chunk needs no model call at all (``Candidates.empty``).

Thresholds and ``k`` are measured on LoCoMo dev chunks (``docs/MEMLISTENER.md``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .text import STOPWORDS, content_stems, fold, split_sentences, words

__all__ = [
    "UserSentence",
    "Candidate",
    "Candidates",
    "CandidateSettings",
    "user_sentences",
    "is_self_disclosure",
    "is_retraction",
    "select_candidates",
]

FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "we're",
                          "we've", "our", "ours", "us", "im", "ive"})  # fmt: skip
_RETRACTION = re.compile(
    r"\b(forget|no longer|not any ?more|anymore|is off|plan is off|called off|cancel+ed|"
    r"stopped|quit|gave up|give up|not .{0,20} any ?more|used to)\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(r"^(can|could|would|will) you\b|^(please|tell me|help me|show me|remind me)\b", re.I)


@dataclass(frozen=True, slots=True)
class UserSentence:
    id: int  # 1-based, in chunk order
    text: str
    turn: int  # index of the turn in the chunk


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

    @property
    def empty(self) -> bool:
        return not self.leaves

    def path_of(self, candidate_id: int) -> str | None:
        for c in self.leaves:
            if c.id == candidate_id:
                return c.path
        return None


@dataclass(frozen=True, slots=True)
class CandidateSettings:
    k: int = 8
    per_sentence: int = 3
    threshold: float = 0.30
    filled_threshold: float = 0.30


def user_sentences(turns: Sequence[Mapping[str, str]], role: str = "user") -> list[UserSentence]:
    """Every sentence of the ``role`` turns, numbered from 1 in order."""
    out: list[UserSentence] = []
    for i, turn in enumerate(turns):
        if turn.get("role") != role:
            continue
        for sentence in split_sentences(turn.get("content") or ""):
            out.append(UserSentence(len(out) + 1, sentence, i))
    return out


def is_self_disclosure(text: str) -> bool:
    """A first-person statement with content: a fact the subject tells about themself."""
    stripped = text.strip()
    if not stripped or stripped.endswith("?") or _REQUEST.search(stripped):
        return False
    tokens = [fold(w) for w in words(stripped)]
    if not any(t in FIRST_PERSON for t in tokens):
        return False
    return len(content_stems(stripped)) >= 1


def is_retraction(text: str) -> bool:
    """The sentence takes something back: "forget that...", "no longer", "that plan is off"."""
    return bool(_RETRACTION.search(text))


def select_candidates(
    sentences: Sequence[UserSentence],
    paths: Sequence[str],
    scores: Sequence[Sequence[float]],
    tree: Mapping[str, str],
    settings: CandidateSettings = CandidateSettings(),
    *,
    eligible: Sequence[bool] | None = None,
) -> Candidates:
    """Candidates from ``scores[i][j]`` = similarity of sentence ``i`` and leaf ``paths[j]``.

    ``eligible[i]`` (default all) says which sentences may nominate leaves."""
    best_per_leaf: dict[str, float] = {}
    best_leaf: dict[int, tuple[str, float]] = {}
    for i, sentence in enumerate(sentences):
        if eligible is not None and not eligible[i]:
            continue
        row = scores[i]
        ranked = sorted(range(len(paths)), key=lambda j: (-row[j], paths[j]))[: settings.per_sentence]
        for rank, j in enumerate(ranked):
            if row[j] < settings.threshold:
                break
            if rank == 0:
                best_leaf[sentence.id] = (paths[j], float(row[j]))
            best_per_leaf[paths[j]] = max(best_per_leaf.get(paths[j], -1.0), float(row[j]))
    chosen = sorted(best_per_leaf.items(), key=lambda kv: (-kv[1], kv[0]))[: settings.k]
    chosen_paths = {p for p, _ in chosen}
    if chosen:  # filled leaves that match the chunk, so an UPDATE/DELETE can name them
        for j, path in enumerate(paths):
            if path in tree and path not in chosen_paths:
                score = max((float(scores[i][j]) for i in range(len(sentences))), default=-1.0)
                if score >= settings.filled_threshold:
                    chosen.append((path, score))
                    chosen_paths.add(path)
    chosen.sort(key=lambda kv: (-kv[1], kv[0]))
    leaves = tuple(
        Candidate(n, path, round(score, 4), tree.get(path)) for n, (path, score) in enumerate(chosen, 1)
    )
    return Candidates(leaves, best_leaf)


def leaf_text(path: str, description: str) -> str:
    """What a leaf is embedded as: its path in words, then its description."""
    return f"{path.replace('/', ' ').replace('_', ' ')}: {description}"


def salient(text: str) -> set[str]:
    """Content stems without retraction words, for matching a retraction to a stored clause."""
    noise = {"forget", "mention", "plan", "off", "anymore", "longer", "stop", "quit", "please", "that"}
    return {s for s in content_stems(text) if s not in noise and s not in STOPWORDS}
