"""The word budget of :mod:`memory.engine.rewrite`: a long clause cut to a fact that still reads
whole.

:func:`shorten` cuts trailing tails first (subordinate and adverbial ones, then a coordination, then a
prepositional phrase), never inside a fixed pair, a name or quoted title set off by commas, an
enumeration, two adjectives of one noun, a verb and its particle, or before the clause's main verb;
a clause of up to half again the budget with no fitting cut stays whole, and only a longer one loses
words from the end. :func:`tidy` takes off edge punctuation and, after a cut, a dangling function
word ("... patience and").
"""

from __future__ import annotations

import re

from lemminflect import getAllLemmas  # pure Python, a dependency

from .text import STOPWORDS, fold, without_dangling_end

__all__ = ["shorten", "tidy"]

# Where a long fact may be cut, best first: subordinate/adverbial tails, then coordination, then a
# trailing prepositional phrase; (pattern, words that must stay before the cut).
_TAILS = (
    (
        re.compile(
            r",\s+(?:which|who|where|when|while|since|because|especially|even|as|although|though|but|so|"
            r"and|like|plus|if|or)\b"
            r"|\s+(?:because|(?:ever\s+)?since|when|while|although|though|which|after|before|until|so that|as soon as|"
            r"whenever|if|cause|'cause|especially|considering|even though|just like|like when)\b"
            r"|\s+[-\u2013\u2014]+\s+|(?<=\w)-\s+|,\s+",
            re.IGNORECASE,
        ),
        3,
    ),
    (
        re.compile(
            r"\s+(?:and|or|but|so|in hopes? of|in order to|to help|to get|to make|to see|to find out|to check)\s+",
            re.IGNORECASE,
        ),
        3,
    ),
    (
        re.compile(
            r"\s+(?:in|at|for|with|on|during|about|from|to|of|into|by|over|through|around|like|than|that)\s+",
            re.IGNORECASE,
        ),
        4,
    ),
)
# A comma inside an enumeration ("roast marshmallows, tell stories and sing", "coconut milk, sugar,
# and salt"): the items are the fact, so a cut there is no tail cut (the "and" before the last item
# still is, as a coordination).
_ONE_WORD_AFTER_DET = re.compile(r"\b(?:a|an|the|my|their|his|her|our|your|this|that|such)\s+[\w'-]+$", re.I)
_LIST_GOES_ON = re.compile(
    r",\s+[^,.;:!?]{1,40}?(?:,\s+[^,.;:!?]{1,40}?)*,?\s+(?:and|or)\s+\w", re.IGNORECASE
)

# Fixed pairs that read as one phrase: a coordination cut inside one leaves half an idiom ("through
# the good" from "through the good and the bad").
_FIXED_PAIR = re.compile(
    r"\b(?:(?:the\s+)?good\s+and\s+(?:the\s+)?bad|(?:the\s+)?ups\s+and\s+downs|(?:the\s+)?highs\s+and\s+"
    r"(?:the\s+)?lows|pros\s+and\s+cons|back\s+and\s+forth|rock\s+and\s+roll|black\s+and\s+white|"
    r"thick\s+and\s+thin|trial\s+and\s+error|sooner\s+or\s+later|more\s+or\s+less|on\s+and\s+off|"
    r"over\s+and\s+over|again\s+and\s+again|day\s+and\s+night|here\s+and\s+there|now\s+and\s+then)\b",
    re.IGNORECASE,
)

# A name set off by commas ("One of the residents, Laura, wrote us"; "Our group, 'Connected
# Activists', meets weekly"): a cut before the second comma would keep a subject without its verb.
_APPOSITIVE = re.compile(
    r"(?-i:,\s+[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?\s*,)"
    r"|,\s+(?P<q>['\"\u2018\u201c])[^'\"\u2019\u201d,]{1,60}['\"\u2019\u201d]\s*,"
)


def _words_of(text: str) -> list[str]:
    return text.split()


def shorten(text: str, max_words: int, verb: str = "") -> tuple[str, bool]:
    """Cut tails, then words, until ``text`` has at most ``max_words`` words; (text, cut).

    A subordinate tail that leaves a fitting fact is cut first (the latest such); else the latest
    fitting coordination or prepositional cut; else the last subordinate tail, and try again. When
    that cut falls inside an enumeration, or no cut is left, a clause of up to half again
    ``max_words`` stays whole (a fragment such as "Thinks the process is such" or "Likes to go out
    dancing, listen to music" reads worse than a longer fact); only a longer one loses words from
    the end."""
    cut_any = False
    while len(_words_of(text)) > max_words:
        said = re.search(rf"(?<![\w'])(?:{re.escape(verb)})(?![\w'])", text, re.IGNORECASE) if verb else None
        after_verb = said.end() if said else 0  # no cut keeps a subject without its verb
        pairs = [(m.start(), m.end()) for m in _FIXED_PAIR.finditer(text)]  # no cut inside one
        pairs += [(-1, m.end()) for m in _APPOSITIVE.finditer(text)]  # nor before its closing comma
        tiers = [
            [
                m.start()
                for m in pattern.finditer(text)
                if len(_words_of(text[: m.start()])) >= least
                and m.start() >= after_verb
                and not _in_list(text, m)
                and not any(start < m.start() < end for start, end in pairs)
                and not (m.group(0)[:1].isspace() and _PHRASAL_HEAD.search(text, 0, m.start()))
                and not (
                    _PARTICLE_PREPOSITION.match(m.group(0)) and _PHRASAL_PARTICLE.search(text, 0, m.start())
                )
            ]
            for pattern, least in _TAILS
        ]
        first = [p for p in tiers[0] if len(_words_of(text[:p])) <= max_words]
        later = [
            p for p in tiers[1] + [p for p in tiers[2] if not _half_conjunct(text[:p])]
            if len(_words_of(text[:p])) <= max_words and not _dangles(text[:p]) and not _splits_adjectives(text, p)
        ]  # fmt: skip
        tokens = _words_of(text)
        if first or later or tiers[0]:
            at = max(first or later or tiers[0])
            lists = _enumerations(text)
            if any(start < at < end for start, end in lists):
                # a list without its last item promises more: whole, up to half again; else a cut before it
                if 2 * len(tokens) <= 3 * max_words:
                    return text, cut_any
                outside = [
                    [p for p in t if not any(a < p < b for a, b in lists)] for t in (first, later, tiers[0])
                ]
                at = max(outside[0] or outside[1] or outside[2] or [at])
            text, cut_any = text[:at].rstrip(" ,;"), True
            continue
        if 2 * len(tokens) <= 3 * max_words:
            return text, cut_any
        if said is not None and len(_words_of(text[:after_verb])) >= max_words:
            # the verb comes late ("The help I got from ... was huge for me in those years"): a cut
            # after it, up to half again the budget, rather than a subject without its verb
            late = [p for p in tiers[1] + tiers[2] if 2 * len(_words_of(text[:p])) <= 3 * max_words]
            late = [p for p in late if not _dangles(text[:p])]
            if late:
                return text[: max(late)].rstrip(" ,;"), True
        n = max_words
        while n < len(tokens) and _joined(tokens[n - 1], tokens[n]):
            n += 1
        return " ".join(tokens[:n]), True
    return text, cut_any


# A verb whose particle or preposition is part of it ("look after", "gone through", "deal with",
# "looked up to"): a cut before the particle leaves "looking" or "who've gone" promising what never
# comes.
_PHRASAL_VERBS = (
    r"\b(?:look|looks|looked|looking|take|takes|took|taking|taken|go|goes|went|going|gone|been|get|gets|got|"
    r"getting|come|comes|came|coming|deal|deals|dealt|dealing|care|cares|cared|caring|run|runs|ran|running|"
    r"carry|carried|carrying|pass|passed|passing|turn|turned|turning|put|putting|make|made|making)"
)
_PHRASAL_HEAD = re.compile(_PHRASAL_VERBS + "$", re.IGNORECASE)
# ... and with its particle, the verb takes a preposition too: "looked up to", "came up with"
_PHRASAL_PARTICLE = re.compile(
    _PHRASAL_VERBS + r"\s+(?:up|out|forward|down|along|back|away|in)$", re.IGNORECASE
)
_PARTICLE_PREPOSITION = re.compile(r"\s+(?:to|with|for|on|at|of|into|from|about|against)\b", re.IGNORECASE)

_HALF_PHRASE = re.compile(
    r"\b(?:in hopes?|in order|so as|as well|such|because|a (?:few|couple|ton|lot|bunch|bit)|on (?:their|the|my|our) way"
    r"|(?:all|many|different|these|those|some|a|the|this|that) (?:kinds?|sorts?|types?)"
    r"|surrounded|filled|covered|packed|accompanied|followed)$"
    r"|,\s*(?:both|either|neither)$",
    re.IGNORECASE,
)


def _dangles(kept: str) -> bool:
    """Would a cut keeping ``kept`` end on a word that promises more ("... would be", "in hopes")?"""
    tokens = kept.rstrip(" ,;").split()
    return without_dangling_end(tokens) != tokens or _HALF_PHRASE.search(kept.rstrip(" ,;")) is not None


def _splits_adjectives(text: str, at: int) -> bool:
    """Would a cut at ``at`` before "and"/"or" keep a determiner and one word whose noun comes after
    the conjunction ("a loving and accepting home": "... a loving")?"""
    after = text[at:].split(maxsplit=3)
    if len(after) < 3 or fold(after[0]) not in ("and", "or") or fold(after[2]) in STOPWORDS:
        return False  # "... their military and wanted to ...": no noun comes after the pair
    return _adjective_pair(text, at, after[1])


def _adjective_pair(text: str, at: int, following: str) -> bool:
    """Do the determiner and one word before ``at`` and the word ``following`` read as two
    adjectives of one noun still to come ("a safe, loving home"), not a whole noun phrase ("the
    park, then ...")?"""
    m = _ONE_WORD_AFTER_DET.search(text, 0, at)
    return m is not None and _adjectival(m.group(0).split()[-1]) and _adjectival(following)


def _adjectival(word: str) -> bool:
    low = fold(word.strip(",;:"))
    return "ADJ" in getAllLemmas(low) or low.endswith(("ing", "ed"))


def _in_list(text: str, cut: re.Match[str]) -> bool:
    """Is ``cut`` a bare comma between two items of an enumeration, or between two adjectives of one
    noun ("a safe, loving home": a cut would keep "a safe")?"""
    if cut.group(0).strip() != ",":
        return False
    if _LIST_GOES_ON.match(text, cut.start()) is not None:
        return True
    following = text[cut.end() :].split(maxsplit=1)
    return bool(following) and _adjective_pair(text, cut.start(), following[0])


def _enumerations(text: str) -> list[tuple[int, int]]:
    """Spans from an enumeration's first comma to its last conjunction ("dancing, listen to music,
    and hang out"): a cut inside one keeps a list without its last item ("Likes to go out dancing,
    listen to music")."""
    spans = [
        (m.start(), m.end()) for c in re.finditer(",", text) if (m := _LIST_GOES_ON.match(text, c.start()))
    ]
    # "..., and they talked for hours": a clause of its own after the last comma, not a last item
    return [(start, end) for start, end in spans if not _OWN_SUBJECT.match(text, end - 1)]


_OWN_SUBJECT = re.compile(r"(?:i|we|they|he|she|you|it)\b", re.IGNORECASE)


_LAST_CONJUNCTION = re.compile(r"\s(?:and|or|but)\s+((?:\S+\s+){0,1}\S+)$", re.IGNORECASE)


def _half_conjunct(kept: str) -> bool:
    """Would a prepositional cut keep only a word or two after "and"/"or"/"but" ("... around the
    campfire and even went")? Then it leaves half a coordination; the coordination cut reads better."""
    return _LAST_CONJUNCTION.search(kept.rstrip(" ,;")) is not None


def _joined(a: str, b: str) -> bool:
    """Two adjacent tokens of one name or number ("New York", "3 500")."""
    a, b = a.rstrip(",.;:!?"), b.rstrip(",.;:!?")
    if a[-1:].isdigit() and b[:1].isdigit():
        return True
    return a[:1].isupper() and b[:1].isupper() and a.isalpha() and b.replace("'s", "").isalpha()


def tidy(text: str, cut: bool) -> str:
    """Whitespace and edge punctuation; after a cut, no dangling function word at the end."""
    text = " ".join(text.split()).strip(" ,;:-\u2013\u2014'")
    if text.count('"') % 2:  # an unbalanced quote at an edge (a cut name keeps its quotes)
        text = text.strip('"')
    tokens = text.split(" ")
    text = " ".join(without_dangling_end(tokens) if cut else tokens).rstrip(" ,;:-\u2013\u2014.!?")
    return re.sub(r'\.(["\u201d])$', r"\1", text)  # 'called "Finding Freedom."' ends at the title
