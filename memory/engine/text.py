"""Plain-text helpers shared by grounding, candidate retrieval and the extractive listener.

Everything here is deterministic and stdlib-only:

- :func:`split_sentences` cuts a chat turn into sentences (``.``/``!``/``?``/``;``/newlines and
  emoji-free dashes), keeping common abbreviations ("Dr.", "e.g.") and decimals ("3.5") whole;
- :func:`words` yields word tokens (letters of any script, digits, inner apostrophes/hyphens);
- :func:`fold` lower-cases and strips accents, so "Tomás" and "tomas" compare equal;
- :func:`stem` is a light suffix stripper ("running" -> "run", "hiking" -> "hik", "cats" ->
  "cat"), used only to compare word sets, never to write text;
- :func:`number_tokens` normalises numbers written as digits or as small number words
  ("ten" -> "10", "1,000" -> "1000", "5km" -> "5");
- :data:`STOPWORDS` is a small English function-word list (pronouns, auxiliaries, determiners,
  prepositions, fillers), so "content words" are what is left.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = [
    "QUOTATION",
    "STOPWORDS",
    "without_dangling_end",
    "NUMBER_WORDS",
    "split_sentences",
    "words",
    "fold",
    "stem",
    "content_stems",
    "number_tokens",
    "folded_words",
]

#: A quotation in straight or curly double quotes: a title or a saying, whose words are its own.
QUOTATION = re.compile(r'"[^"]+"|\u201c[^\u201d]+\u201d')

STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each few for from further had hadn't has hasn't have haven't having he he'd he'll
he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't
it it's its itself just let's me more most mustn't my myself no nor not of off on once only or other
ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some
such than that that's the their theirs them themselves then there there's these they they'd they'll
they're they've this those through to too under until up very was wasn't we we'd we'll we're we've
were weren't what what's when when's where where's which while who who's whom why why's with won't
would wouldn't you you'd you'll you're you've your yours yourself yourselves
im ive id ill dont doesnt didnt cant wont isnt wasnt arent
really actually pretty quite lot lots much many thing things stuff something anything everything
yeah yes oh ok okay hey hi hello wow well like just so um uh hmm haha lol thanks thank
will shall may might must get got gets getting go goes going gone went make made makes making
been being also still even ever now recently lately currently today yesterday tomorrow
user person someone
""".split()
)

NUMBER_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "thirteen": "13",
    "fourteen": "14",
    "fifteen": "15",
    "sixteen": "16",
    "seventeen": "17",
    "eighteen": "18",
    "nineteen": "19",
    "twenty": "20",
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "seventy": "70",
    "eighty": "80",
    "ninety": "90",
    "hundred": "100",
    "thousand": "1000",
    "first": "1st",
    "second": "2nd",
    "third": "3rd",
}

_SKIP = STOPWORDS | NUMBER_WORDS.keys()
_ABBREVIATIONS = ("dr", "mr", "mrs", "ms", "st", "e.g", "i.e", "etc", "vs", "approx", "jr", "sr", "no")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+|\s+[-\u2013\u2014]\s+(?=[A-Z])")
_WORD = re.compile(r"[^\W_]+(?:['\u2019\-][^\W_]+)*", re.UNICODE)
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
_SUFFIXES = ("ingly", "edly", "ings", "ing", "ied", "ies", "ed", "es", "ly", "s")
_SUFFIXES_BY_END = {end: tuple(x for x in _SUFFIXES if x[-1] == end) for end in {x[-1] for x in _SUFFIXES}}


def fold(text: str) -> str:
    """Case-fold and strip accents ("Tomás" -> "tomas"); apostrophes become ASCII."""
    if text.isascii():  # fast path, same result: NFKD is the identity and casefold is lower on ASCII
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.replace("\u2019", "'"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def split_sentences(text: str) -> list[str]:
    """Sentences of one turn, whitespace-normalised, in order; empty pieces dropped."""
    pieces: list[str] = []
    for raw in _SENTENCE_END.split(text.strip()):
        piece = " ".join(raw.split())
        if not piece:
            continue
        # Re-join a split after an abbreviation or a lone initial ("Dr. Lee", "J. Smith").
        if pieces:
            last_word = pieces[-1].rsplit(" ", 1)[-1].rstrip(".").lower()
            if pieces[-1].endswith(".") and (last_word in _ABBREVIATIONS or len(last_word) == 1):
                pieces[-1] = f"{pieces[-1]} {piece}"
                continue
        pieces.append(piece)
    return pieces


def words(text: str) -> list[str]:
    """Word tokens in order, original case kept."""
    return _WORD.findall(text)


def stem(word: str) -> str:
    """A light, deterministic suffix stripper for comparing word sets (not for display)."""
    return _stem_folded(fold(word))


def _stem_folded(w: str) -> str:
    """:func:`stem` of an already folded word."""
    w = w.replace("'", "")
    # only the suffixes ending in the word's last letter can match, tried in ``_SUFFIXES`` order
    for suffix in _SUFFIXES_BY_END.get(w[-1:], ()):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if suffix in ("ied", "ies"):
                w += "y"
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":  # running -> runn -> run
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def folded_words(text: str) -> list[str]:
    """``[fold(w) for w in words(text)]``; an ASCII text is lower-cased once instead (same result:
    lower-casing ASCII moves no word boundary, and :func:`fold` of ASCII is ``lower``)."""
    if text.isascii():
        return _WORD.findall(text.lower())
    return [fold(w) for w in _WORD.findall(text)]


def content_stems(text: str, folded: list[str] | None = None) -> set[str]:
    """Stems of the content words of ``text`` (stopwords and numbers left out).

    ``folded``: ``folded_words(text)`` when the caller already has it."""
    out = set()
    seen: set[str] = set()  # a word repeated in ``text`` is judged once (same result)
    for f in folded_words(text) if folded is None else folded:
        if f in seen:
            continue
        seen.add(f)
        if (
            f in _SKIP  # a stopword or a number word
            or ("'" in f and f.replace("'", "") in STOPWORDS)
            # no character is both alphabetic and a digit, so an all-letter word skips the scan
            or (not f.isalpha() and any(ch.isdigit() for ch in f))
        ):
            continue
        # fold of an ASCII folded word is itself, so its stem skips the second fold (same result)
        out.add(_stem_folded(f) if f.isascii() else stem(f))
    return out


def number_tokens(text: str, folded: list[str] | None = None) -> set[str]:
    """Numbers in ``text``, normalised: digits without thousands separators, number words as digits.

    ``folded``: ``folded_words(text)`` when the caller already has it."""
    found = {m.group(0).replace(",", "") for m in _DIGITS.finditer(text)}
    for f in folded_words(text) if folded is None else folded:
        if f in NUMBER_WORDS:
            found.add(NUMBER_WORDS[f])
    return found


def tokens_folded(texts: Iterable[str]) -> set[str]:
    """Every word of ``texts``, folded, with and without a trailing possessive ``'s``."""
    out = set()
    for text in texts:
        for f in folded_words(text):
            out.add(f)
            if f.endswith("'s"):
                out.add(f[:-2])
    return out


#: Words a cut text must not end on: they promise the word that was cut off ("... patience and").
#: Object pronouns ("them", "it", "these", "those") may end a fact ("Has been with them").
_DANGLING = frozenset(
    "and or but so the a an to of with for in on at by from as their they that which who because "
    "when while is was were are be been has have had very this its each every some any "
    "than then how what where there would could should will can may might must do does did "
    "they're they've they'll they'd it's he's she's we're there's "
    "isn't aren't wasn't weren't hasn't haven't hadn't don't doesn't didn't won't can't".split()
)


def without_dangling_end(tokens: list[str]) -> list[str]:
    """``tokens`` (words of a cut text) without the :data:`_DANGLING` words at their end; never empty
    when ``tokens`` is not."""
    end = len(tokens)
    while end > 1 and fold(tokens[end - 1].strip(",;:")) in _DANGLING:
        end -= 1
    return tokens[:end]
