"""Step 1 of the listener pipeline: cut a chat turn into clauses worth classifying.

:func:`segment` works on character spans of the turn, so every :class:`Clause` keeps the exact
source text it came from (``content[clause.start:clause.end]``):

- sentences end at ``.``/``!``/``?``/``…`` followed by a space, and at newlines (an abbreviation
  such as "Dr." or a lone initial does not end one; "3.5" is one number);
- a sentence is cut into clauses at ``"; "``, ``" - "`` (and dashes; not before "a"/"an", which
  names what was just said: "I'm working on a new project - a thriller set in Ohio"), ``", so"``, ``", but"``,
  ``", because"``, ``", plus"``, ``", and I/my/we"``, ``" and I"`` after a statement of the speaker's
  own (not "My husband and I ..."), at a comma splice before a subject pronoun or "his/her/their name is"
  (``"Just started aerial yoga, it's great"``: the statement keeps its own subject, the reaction
  goes alone), before what someone else says of it (``", the physio says ..."``) and before a
  trailing ``", how about you?"``;
  a piece too short to stand alone (under three words or without a content word) stays attached;
- tag questions are stripped so the statement survives ("…, right?", "…, you know?",
  "… - pretty cool, huh?");
- vocatives go ("Gina, …", "…, Mel!"): the speakers' ``names`` (or a prefix of one, "Mel" for
  "Melanie"), and a leading single capitalised word followed by a comma that is not a common word;
- interjection and evaluative openers go ("Wow,", "Oh nice,", "Great!", "Hey Mel!", "Thanks!",
  "Bad news:"),
  and a clause made only of small talk is dropped ("Good to see you!", "That's so cool!", "Bye!",
  "ttyl", "How have you been?");
- emoji and emoticons are removed from the clause text;
- a clause not in English is dropped (under a third of its lower-case words English): the rules
  that follow read English.

Questions are kept with their ``?`` (the classifier decides what to do with them). Regular
expressions and lemminflect's word list, no parsing: a turn takes well under a millisecond.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from .text import STOPWORDS, content_stems, fold, folded_words, words

__all__ = ["Clause", "segment", "strip_emoji"]


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of a turn; ``content[start:end]`` is its source text."""

    text: str  # the clause as said, cleaned: opener/vocative/tag question removed, first person kept
    sentence: str  # the whole source sentence it came from
    turn: int  # index of the turn in the chunk (passed in)
    start: int  # character span in the turn's content
    end: int


_ABBREVIATIONS = frozenset(
    {"dr", "mr", "mrs", "ms", "st", "e.g", "i.e", "etc", "vs", "approx", "jr", "sr", "no"}
)
_INITIALS = re.compile(r"(?:[a-z]\.)*[a-z]")  # "J." or "J.K." before a surname
_PICTOGRAPHS = r"[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D\u20E3\u2300-\u23FF]+"
# An emoji before a capital ends a sentence too, as chat writes it: "Inspiring 💪 I emailed ..."
_SENTENCE_END = re.compile(rf"[.!?\u2026]+[\"'\u2019\u201d)\]]*(?=\s)|\n|{_PICTOGRAPHS}(?=\s+[A-Z])")

_EMOJI = re.compile(
    _PICTOGRAPHS + r"|(?<![\w:/])(?:[:;=][-'^]?[)(\]\[DPpOo3/\\|*]+|<3+|\^_?\^|[xX]D)(?![\w/])"
)

# A clause break inside a sentence; the connective word itself ("so", "but") is not kept.
_CUT = re.compile(
    r";\s+"
    r"|\s+(?:-{1,2}|\u2013|\u2014)\s+(?!an?\s)|(?<=\w)(?:--|\u2014)(?=\s*(?!an?\s)\w)"
    r"|(?<=[a-z])-\s+(?=(?!an?\s)\w)"
    r"|,\s+(?:so|but|because|'cause|cause|plus)\s+"
    r"|,\s+and\s+(?=(?:I|I'm|I've|I'd|I'll|my|we|we're|we've|our)\b)"
    r"|,\s+(?=(?:it|he|she|they)(?:['\u2019](?:s|re|ll|d|ve))?\s|(?:his|her|their)\s+name\s+is\b)"
    # what someone else says of it goes alone: "my knee hurts, the physio says no running"
    r"|,\s+(?=(?:the|my|our)\s+(?:\w+\s+)?(?:says|said|thinks|thought|told me|recommends|suggested)\b)"
    r"|,\s+(?=(?:and\s+)?(?:how|what)\s+about\s+you\b|and\s+you\s*\?|you\s*\?)",
    re.IGNORECASE,
)
# A comma splice of two first-person statements ("I run every morning, I've been training for ...");
# cut only when the left side has its own subject (I, we, they, he, she) and is not a subordinate clause
# ("When I was young, I played piano" stays whole).
_FIRST = r"(?:I|I'm|I've|I'd|I'll|we|we're|we've|we'd|we'll)"
# Also two statements joined by a bare "and I" ("I'm from a small town and I want to move"); not a
# pair as the subject ("My sister and I run", "He and I are friends": no subject on the left of it).
_SPLICE = re.compile(
    rf",\s+(?={_FIRST}\s)|\s+and\s+(?=(?:I|I'm|I've|I'd|I'll)\s(?!(?:are|were|have|both|all)\b))"
)
_LEFT_SUBJECT = re.compile(rf"\b(?:{_FIRST}|(?:they|he|she)(?:['\u2019](?:s|re|ve|ll|d))?)\s", re.IGNORECASE)
_SUBORDINATE = re.compile(
    r"^\W*(?:when|whenever|if|because|since|although|though|even|while|as|once|until|till|after|before|"
    r"unless|whether|now that|so that|ever since)\b",
    re.IGNORECASE,
)

# Tag questions at the end of a statement: "..., right?", "... - pretty cool, huh?".
_TAG = re.compile(
    r"(?:\s*,|\s+[-\u2013\u2014]+)\s*(?:"
    r"(?:right|huh|eh|yeah|no|ya know|you know|innit|isn't it|don't you think|am i right|"
    r"wouldn't you say|don't you|didn't i)"
    r"|(?:(?:pretty|so|really|super)\s+)?(?:cool|neat|awesome|great|amazing|fun|crazy|wild)"
    r"(?:\s*,\s*(?:huh|right|eh|no))?"
    r")\s*\?+[!?]*\s*$",
    re.IGNORECASE,
)

_INTERJECTION = (
    r"o+h+|o+o+h+|a+w+|wo+w+|wh?oa+h?|yay+|woo+hoo+|omg|oh my (?:god|gosh)|gosh|geez|"
    r"hey+|hiya|hi+|hello|heya|yo|yeah+|yes+|yep|yup|ya|sure(?: thing)?|ok|okay|alright|all right|"
    r"ha(?:ha)+|hah|lol|lmao|hmm+|um+|uh+|ah+|aha|great|awesome|amazing|cool|nice|sweet|lovely|"
    r"wonderful|fantastic|perfect|good|thanks(?: a (?:lot|ton|bunch))?|thank you(?: so much)?|thx|"
    r"congrats|congratulations|no way|exactly|totally|absolutely|definitely|true|indeed|right|well|"
    r"gotcha|got it|sounds good|of course|for sure|same|bye|goodbye|cheers|dude|man|girl|"
    r"appreciated|agreed|nope|no|yum+|oof|yea+h?|mm+|nah|phew|whew|oops|ugh|dang|bummer|woo+|hola|likewise|"
    r"yikes|meh|eh|huh|aha+|ah+h|hehe+|lmao|rofl|guess what|you know what|fun fact|"
    r"(?:good|bad|great|big|exciting|sad|happy|some) news|quick update"
)
_GREETING = (
    r"hey+|hi+|hello|heya|hiya|yo|thanks|thank you|bye|congrats|congratulations|woah|wow|yeah|yep|sorry"
)
_NAME = r"(?-i:[A-Z][a-z'\u2019-]+)"
_OPENER = re.compile(
    rf"^(?:(?:(?:{_GREETING})\s+{_NAME}\s*(?:[,!.\u2026]+|\s+-+)\s*)"
    rf"|(?:(?:{_INTERJECTION})(?:\s+(?:nice|cool|wow|great|man|dude|so much|again|then|thing|too|there))*"
    r"\s*(?:[,!.:\u2026]+|\s+-+)\s*))+",
    re.IGNORECASE,
)
# An evaluation put before the speaker's statement: "Good thing I run ...", "Lucky for me, I ...".
_EVALUATIVE_LEAD = re.compile(
    rf"^(?:(?:the\s+)?(?:good|best|funny|lucky|crazy|weird)\s+thing(?:\s+is)?|lucky\s+for\s+(?:me|us))"
    rf"\s*,?\s+(?={_FIRST}\s)",
    re.IGNORECASE,
)
_GREETING_NAME = re.compile(rf"^(?:{_GREETING})\s+({_NAME})\b", re.IGNORECASE)
_LEAD_VOCATIVE = re.compile(rf"^({_NAME})\s*(?:,|!+|\.(?=\s))\s*")
_TRAIL_VOCATIVE = re.compile(r",\s*([A-Za-z][\w'\u2019-]*)\s*([.!?\u2026]*)\s*$")
_APPOSITION = re.compile(r"\s*(?:my|our)\s+[\w'-]+(?:\s+[\w'-]+){0,2}\s*(?:,|[.!]*\s*$)", re.IGNORECASE)
_COMMON_VOCATIVES = frozenset({"dude", "man", "girl", "buddy", "friend", "pal", "mate", "bro", "sis", "guys"})
_NOT_VOCATIVE = frozenset(
    """
yesterday today tonight tomorrow now then sometimes recently lately lastly also anyway anyways
besides however plus still though well meanwhile otherwise yes yeah no nope sure ok okay so and but
honestly seriously personally luckily unfortunately fortunately basically actually currently
monday tuesday wednesday thursday friday saturday sunday january february march april may june july
august september october november december spring summer autumn fall winter afterwards later
again first second finally initially originally eventually overall usually normally mostly
yet instead sadly thankfully hopefully luckily sure guess everyone everybody somehow together maybe
perhaps remember enjoy besides definitely otherwise
""".split()
)

# Words a sentence after a vocative starts with ("Larry, I ...", "Sam, that's ...").
_SENTENCE_START = STOPWORDS | frozenset(
    "glad thanks thank sounds good great nice congrats sorry wow hope welcome long awesome cool love "
    "happy what's how's where's".split()
)
_SMALL_TALK = frozenset(
    """
hey hi hello heya hiya yo bye goodbye ttyl ttys cya see seeya ya later soon talk chat chatting catch
care take good great nice awesome amazing cool sweet lovely wonderful fantastic fun glad happy hear
hearing that's that it's it its this is was so really very super pretty such a an wow oh omg thanks
thank much for sharing how how's what's what up are have been doing going morning evening night day
hope too as well again sounds sound looks look looking totally definitely yes yeah yep sure ok okay
haha lol congrats congratulations exciting incredible impressive beautiful gorgeous stunning cute
adorable love it's the and all you your you're me same here luck best of wishing cheers welcome no
problem worries anytime course true right exactly agree agreed absolutely indeed know get got
appreciate appreciated kind words means lot totally gotcha there thing things news idea ideas cheers
rock on keep up work cool wild crazy neat interesting fascinating inspiring powerful tough rough sad
sorry woah whoa aw aww ooh yay woohoo hugs xoxo sounds stuff now for to in touch yourself intense epic
insane hilarious scary special magical unreal surreal emotional
""".split()
)


def strip_emoji(text: str) -> str:
    """``text`` without emoji and emoticons, whitespace normalised."""
    return " ".join(_EMOJI.sub(" ", text).split())


def _only_small_talk(text: str, names: Collection[str] = ()) -> bool:
    """True when every word of ``text`` is greeting/evaluation small talk or a speaker's name (a piece
    ``segment`` drops; a whole value's small talk is :func:`memory.engine.chatter.is_small_talk`)."""
    folded = folded_words(text)
    if not folded:
        return True
    named = {fold(n) for n in names}
    return all(w in _SMALL_TALK or w in named or _is_name_prefix(w, named) for w in folded)


def _not_english(text: str) -> bool:
    """Of four or more lower-case words (names aside), is under a third English: a stopword or a word
    lemminflect knows? The rules read English; "Me encanta pasar tiempo con mi familia" would only
    be swapped into nonsense ("Them encanta pasar tiempo ...")."""
    low = [w for w in words(text) if w.islower()]
    if len(low) < 4:
        return False
    # imported here: the engine package (gate -> chatter -> segment) stays importable with the
    # serving extras alone, as the vLLM test's virtualenv has them
    from lemminflect import getAllLemmas  # pure Python, a base dependency

    english = sum(fold(w) in STOPWORDS or bool(getAllLemmas(fold(w))) for w in low)
    return english * 3 < len(low)


def _is_name_prefix(word: str, named: set[str]) -> bool:
    return len(word) >= 3 and any(n.startswith(word) for n in named)


def _sentence_spans(content: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, whitespace trimmed."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(content):
        if m.group(0).startswith("."):
            before = content[pos : m.start()].rsplit(None, 1)
            last = before[-1].lower().lstrip("(\"'") if before else ""
            if m.group(0) == "." and (last in _ABBREVIATIONS or _INITIALS.fullmatch(last)):
                continue
        spans.append((pos, m.end()))
        pos = m.end()
    spans.append((pos, len(content)))
    return [t for t in (_trim(content, s, e) for s, e in spans) if t[0] < t[1]]


def _trim(content: str, start: int, end: int, chars: str = " \t\r\n") -> tuple[int, int]:
    while start < end and content[start] in chars:
        start += 1
    while end > start and content[end - 1] in chars:
        end -= 1
    return start, end


def _strip_edges(content: str, start: int, end: int, names: set[str]) -> tuple[int, int, str]:
    """Narrow a span past emoji, openers and vocatives at its start and tag questions, vocatives and
    emoji at its end; also the ``"?"`` a stripped trailing vocative took with it ("..., Mel?")."""
    mark = ""
    for _ in range(4):  # openers, vocatives and emoji can alternate ("Wow, Mel! 😊 Great, ...")
        before = (start, end)
        start, end = _trim(content, start, end, " \t\r\n,;:-\u2013\u2014\"'(*~")
        text = content[start:end]
        m = _EMOJI.match(text)
        if m:
            start += m.end()
            continue
        m = _GREETING_NAME.match(text)
        if m and _vocative(m.group(1), names) and text[m.end() :].strip(" ,!.") == "":
            return end, end, ""  # "Hey Mel" alone
        m = _OPENER.match(text) or _EVALUATIVE_LEAD.match(text)
        if m:
            start += m.end()
            continue
        m = _LEAD_VOCATIVE.match(text)
        if m and _vocative(m.group(1), names, text[m.end() :]):
            start += m.end()
            continue
        if (start, end) == before:
            break
    for _ in range(4):
        before = (start, end)
        start, end = _trim(content, start, end)
        text = content[start:end]
        m = re.search(r"(?:\s*(?:" + _EMOJI.pattern + r"))+\s*$", text)
        if m and m.start() > 0:
            end = start + m.start()
            continue
        m = _TAG.search(text)
        if m and m.start() > 0:
            end, mark = start + m.start(), ""  # a statement with a tag question is a statement
            continue
        m = _TRAIL_VOCATIVE.search(text)
        if m and m.start() > 0 and (fold(m.group(1)) in _COMMON_VOCATIVES or _known_name(m.group(1), names)):
            end, mark = start + m.start(), "?" if "?" in m.group(2) else mark
            continue
        if (start, end) == before:
            break
    text = content[start:end]
    if (text.count('"') % 2 and content[end : end + 1] == '"') or (
        "\u201c" in text and "\u201d" not in text and content[end : end + 1] == "\u201d"
    ):
        end += 1  # a title or quotation the clause opens keeps its closing mark: 'I watched "Up"'
    elif text.count('"') % 2 and start > 0 and content[start - 1] == '"':
        start -= 1  # and one it closes, its opening mark: '"Up" is my favourite film'
    return start, end, mark


def _known_name(word: str, names: set[str]) -> bool:
    f = fold(word)
    return f in names or _is_name_prefix(f, names)


def _vocative(word: str, names: set[str], after: str = "") -> bool:
    """A capitalised word used to address someone: a speaker's name, else an uncommon word followed
    by the start of a sentence ("Larry, I ..."; not a list such as "Shawarma, falafel and ...")."""
    f = fold(word)
    if _known_name(word, names):
        return True
    if f in STOPWORDS or f in _NOT_VOCATIVE or f in _SMALL_TALK or f.endswith("ly"):
        return False
    if _APPOSITION.match(after):
        return False  # "Luna, my cat, sleeps all day", "Oscar, my guinea pig.": who the name is
    following = folded_words(after[:40])
    return not after.strip() or (bool(following) and following[0] in _SENTENCE_START)


_QUOTE = re.compile(r"\"[^\"\n]+\"|\u201c[^\u201d\n]+\u201d")


def _stands_alone(text: str) -> bool:
    said = words(text)
    # "I'm married" is a clause of two words: the speaker's contracted subject and verb are one
    enough = len(said) >= 3 or (len(said) == 2 and fold(said[0]) in _CONTRACTED_FIRST)
    return text.rstrip().endswith("?") or (enough and bool(content_stems(text)))


_CONTRACTED_FIRST = frozenset({"i'm", "i've", "we're", "we've", "im", "ive"})


def _pieces(content: str, start: int, end: int, quoted: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Clause spans of one sentence span; short pieces merged into a neighbour."""
    raw: list[tuple[int, int]] = []
    pos = start
    cuts = [(m.start(), m.end(), False) for m in _CUT.finditer(content, start, end)]
    cuts += [(m.start(), m.end(), True) for m in _SPLICE.finditer(content, start, end)]
    for cut_start, cut_end, splice in sorted(cuts):
        left = content[pos:cut_start]
        if cut_start < pos or (splice and (not _LEFT_SUBJECT.search(left) or _SUBORDINATE.match(left))):
            continue
        if any(q_start < cut_start < q_end for q_start, q_end in quoted):  # the turn's quotations
            continue  # a quotation is someone's words, not a clause of the speaker's
        raw.append((pos, cut_start))
        pos = cut_end
    raw.append((pos, end))
    merged: list[tuple[int, int]] = []
    carry: int | None = None  # start of a short leading piece waiting for the next one
    for s, e in raw:
        if carry is not None:
            s, carry = carry, None
        if not content[s:e].strip():
            continue
        if _stands_alone(content[s:e]):
            merged.append((s, e))
        elif merged and _only_small_talk(content[s:e]):
            continue  # "Just started aerial yoga, it's great": the reaction is not the fact's
        elif merged and not content[merged[-1][0] : merged[-1][1]].rstrip().endswith("?"):
            merged[-1] = (merged[-1][0], e)
        else:
            carry = s
    if carry is not None:
        merged.append((carry, end))
    return merged


def _clean(text: str, mark: str = "") -> str:
    out = strip_emoji(text).strip(" ,;:-\u2013\u2014")
    return out + mark if mark and not out.endswith(mark) else out


def segment(content: str, *, turn: int = 0, names: Collection[str] = ()) -> list[Clause]:
    """Clauses of one turn in order (see the module docstring)."""
    named = {fold(part) for name in names for part in name.split()}
    out: list[Clause] = []
    quoted = [m.span() for m in _QUOTE.finditer(content)]  # a closing mark may lie past a piece's end
    for s_start, s_end in _sentence_spans(content):
        sentence = " ".join(content[s_start:s_end].split())
        head, tail, mark = _strip_edges(content, s_start, s_end, named)
        if head >= tail:
            continue
        pieces = _pieces(content, head, tail, quoted)
        for i, (p_start, p_end) in enumerate(pieces):
            c_start, c_end, own_mark = _strip_edges(content, p_start, p_end, named)
            if c_start >= c_end:
                continue
            text = _clean(content[c_start:c_end], own_mark or (mark if i == len(pieces) - 1 else ""))
            if not words(text) or _only_small_talk(text, named) or _not_english(text):
                continue
            out.append(Clause(text=text, sentence=sentence, turn=turn, start=c_start, end=c_end))
    return out
