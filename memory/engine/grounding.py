"""Grounding: is a value supported by the user's words (or by what the leaf already held)?

The gate's ``UNGROUNDED`` check calls :func:`check_grounding` so that what reaches a tree is
traceable to the user. A value is *grounded* in its sources (the sentence it cites or the chunk's
user turns, plus the leaf's old value) when every **number** in it appears in a source ("ten" ==
"10", "1,000" == "1000"), every **proper noun** does (accent- and case-insensitive; a capitalised
word that does not start the value or a clause, or an all-caps word like "LGBTQ"), and at least
``min_support`` of its **content words** (non-stopwords, lightly stemmed) do; a value with no content
word passes that part. Deliberately literal: a model that copies or trims the user's clause passes,
one that paraphrases beyond light stemming or invents does not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .text import content_stems, fold, folded_words, number_tokens

DEFAULT_MIN_SUPPORT = 0.5
_CLAUSE_MARKS = frozenset('.;:!?("')
_WORD = re.compile(r"[^\W_]+(?:['\u2019\-][^\W_]+)*")


@dataclass(frozen=True, slots=True)
class Grounding:
    ok: bool
    support: float
    missing_numbers: tuple[str, ...] = ()
    missing_names: tuple[str, ...] = ()
    missing_words: tuple[str, ...] = ()

    @property
    def detail(self) -> str:
        if self.ok:
            return f"grounded (support {self.support:.2f})"
        parts = []
        if self.missing_numbers:
            parts.append("numbers not in the source: " + ", ".join(self.missing_numbers))
        if self.missing_names:
            parts.append("names not in the source: " + ", ".join(self.missing_names))
        if not parts:
            parts.append(
                f"only {self.support:.0%} of its content words are in the source "
                f"(missing: {', '.join(self.missing_words[:6])})"
            )
        return "; ".join(parts)


def proper_nouns(value: str) -> list[str]:
    """Capitalised words that are not clause-initial, and all-caps words, in order."""
    found = []
    for match in _WORD.finditer(value):
        word = match.group(0)
        if word.isalpha():  # the common case: all letters, hence no digit (none is both)
            if not word[0].isupper():
                continue
            letters: str | list[str] = word
        else:
            if any(ch.isdigit() for ch in word):
                continue
            letters = [ch for ch in word if ch.isalpha()]
            if not letters or not letters[0].isupper():
                continue
        if word == "I" or word.startswith(("I'", "I\u2019")):
            continue
        all_caps = len(letters) >= 2 and all(ch.isupper() for ch in letters)
        if all_caps or not _clause_initial(value[: match.start()]):
            found.append(word)
    return found


def _clause_initial(prefix: str) -> bool:
    """Does ``prefix`` end a clause: empty (or one newline), or a mark of ``.;:!?("`` then whitespace?"""
    if prefix in ("", "\n"):
        return True
    rest = prefix.rstrip()
    return bool(rest) and rest[-1] in _CLAUSE_MARKS


@lru_cache(maxsize=4096)
def _profile(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(numbers, folded words, content stems) of one source text; a chunk's turns are judged
    against many values (every op of the chunk, every sample of a training prompt)."""
    folded = folded_words(text)  # tokenised and folded once for the three parts
    tokens = set(folded)
    tokens.update([f[:-2] for f in folded if f.endswith("'s")])  # == tokens_folded([text])
    return (
        frozenset(number_tokens(text, folded)),
        frozenset(tokens),
        frozenset(content_stems(text, folded)),
    )


def check_grounding(
    value: str,
    sources: Sequence[str],
    old_value: str | None = None,
    *,
    min_support: float = DEFAULT_MIN_SUPPORT,
) -> Grounding:
    """Judge ``value`` against ``sources`` (+ ``old_value``); see the module docstring."""
    texts = [s for s in sources if s] + ([old_value] if old_value else [])
    profiles = [_profile(t) for t in texts]
    source_numbers = set().union(*(p[0] for p in profiles))
    folded = folded_words(value)  # tokenised and folded once for the numbers and the content words
    missing_numbers = tuple(sorted(n for n in number_tokens(value, folded) if n not in source_numbers))

    source_words = set().union(*(p[1] for p in profiles))
    missing_names = []
    for name in proper_nouns(value):
        f = fold(name)
        base = f[:-2] if f.endswith("'s") else f
        if f not in source_words and base not in source_words:
            missing_names.append(name)

    value_stems = content_stems(value, folded)
    source_stems = set().union(*(p[2] for p in profiles))
    if value_stems:
        missing_words = tuple(sorted(value_stems - source_stems))
        support = 1 - len(missing_words) / len(value_stems)
    else:
        missing_words, support = (), 1.0
    ok = not missing_numbers and not missing_names and support >= min_support and bool(folded)
    return Grounding(ok, round(support, 4), missing_numbers, tuple(missing_names), missing_words)
