"""Step 4 of the listener pipeline: one clause as a short third-person fact.

:func:`rewrite` only removes or swaps words of the clause, so the fact stays grounded in what the
user said ("Oh, and I've actually been running a lot lately!" -> "Has been running a lot lately"):

- discourse openers go ("Oh, and", "By the way,", "Yeah,", "Honestly,"), so do trailing small
  talk (", lol", "haha", "!!!"), emoji and the final ``.!?``;
- filler adverbs and hedges go ("really", "just", "actually", "totally", "kind of", "so" before
  an adjective), and "I think"/"I guess" before another subject;
- a leading adverbial before the speaker's subject goes behind the statement ("Off the court, I'm
  looking into endorsements" -> "Is looking into endorsements off the court"), and a participial
  discourse marker goes ("Speaking of trips, my wife and I left" -> "Their wife and they left");
- a leading "I" is dropped and its verb takes the third person ("I work" -> "Works", "I'm a
  nurse" -> "Is a nurse", "I've been" -> "Has been", "I'd love to" -> "Would love to", "I don't"
  -> "Doesn't", "I went" -> "Went"); with ``name`` the fact starts with it ("Maya is a nurse",
  "My dog" -> "Maya's dog"); other first-person words become "they/them/their/theirs";
- over ``max_words`` (:mod:`memory.engine.shorten`), trailing subordinate/adverbial tails go first
  (", which was awesome", "because ...", "when I was ..."; never at a comma of an enumeration: "roast
  marshmallows, tell stories and ..." is one fact), then words from the end, never inside a number
  or a name.

Verbs are inflected with ``lemminflect`` (pure Python, a dependency).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lemminflect import getAllLemmas, getInflection  # pure Python, a dependency

from .segment import strip_emoji
from .shorten import shorten, tidy
from .text import QUOTATION, STOPWORDS, content_stems, fold, number_tokens

__all__ = ["rewrite", "third_person_verb", "FIRST_PERSON_WORDS"]

FIRST_PERSON_WORDS = frozenset({"i", "me", "my", "mine", "myself", "we", "our", "ours", "us", "ourselves"})

_OPENER = re.compile(
    r"^(?:(?:oh+ (?:yeah|yes|wow|man|well|and)|oh+|and|also|so|well|yeah|yes|yep|yup|haha+|ha|lol|wow|hey|"
    r"honestly|actually|anyway|anyways|"
    r"but|plus|by the way|btw|fun fact|guess what|to be honest|tbh|of course|you know what|you know|"
    r"i mean|right|ok|okay|alright|sure|speaking of which|funny enough|funnily enough|besides|"
    r"oh my god|omg|gosh|man|dude|um+|uh+|hmm+|ah+|aw+|ooh+|nope|no|yay|cool|nice|great|awesome|"
    r"totally|definitely|absolutely|seriously|literally|basically|truthfully|frankly|personally|"
    r"unfortunately|fortunately|luckily|sadly|thankfully|happily|surprisingly|interestingly|"
    r"bad news|good news|big news|update|news|who knows|fyi|however|anyhow|nonetheless|nevertheless)"
    r"(?:\s*[,!.:\u2026-]+\s*|\s+(?=and\b|also\b|so\b|by\b|btw\b|i\b|i'm\b|i've\b|my\b|we\b|we're\b|we've\b|our\b)))+",
    re.IGNORECASE,
)
# A hedge goes before a statement of its own ("I think it's great"); "I believe (that) helping
# matters" is a belief, and stays one, without its "that".
_STATEMENT_START = (
    r"(?:i|i'm|i've|i'd|i'll|it|it's|its|that|this|they|they're|we|we're|my|our|the|there|he|she)\b"
)
_HEDGE = re.compile(
    r"^(?:i\s+(?:think|guess|believe|feel like|suppose|reckon|bet)|i(?:'d|\s+would)\s+(?:have\s+to\s+)?say|"
    r"i have to say|i gotta say|"
    r"i must say|i can tell you|i'll tell you|(?:i\s+)?(?:just\s+)?want(?:ed)?\s+to\s+(?:tell|let)\s+(?:you|ya|u)"
    r"(?:\s+know)?|i\s+(?:have|had|got)\s+to\s+tell\s+(?:you|ya|u)|gotta\s+tell\s+(?:you|ya|u))"
    rf"(?:\s+that|,)?\s+(?={_STATEMENT_START})",
    re.IGNORECASE,
)
_BELIEF_THAT = re.compile(
    rf"^(i\s+(?:think|believe|guess|suppose|reckon))\s+that\s+(?!{_STATEMENT_START}"
    r"|(?:is|was|has|had|sounds|seems|looks|makes|means|will|would|can|could|should|must|might)\b)",
    re.IGNORECASE,
)  # "that" a pronoun stays: "I think that is right"
_OUR_LAST_CHAT = r"our last (?:chat|talk|conversation)"  # the chat's own time, never the fact's
_TRAILING_TALK = re.compile(
    r"(?:[\s,]*(?:-+\s*)?(?<![\w'])(?:lol|lmao|haha+|hehe+|hah|xd|tbh|yum+|yay+|woo+hoo+|phew|though|too|as well|haha+\w*|you know|ya know|(?:oh\s+)?yeah|"
    r"(?:don't|doesn't|isn't|aren't|wasn't|weren't|didn't|won't|can't)\s+(?:they|it|you|we|he|she|i))\b"
    r"|\s*,\s*right\b)+"
    r"[\s.!?]*$"
    r"|[\s,]*\.\.\.+\s*$"
    r"|\s*(?:,|-+|\u2013|\u2014)\s*(?:i\s+)?can(?:'|no)?t\s+wait\b[\s.!]*$"  # "... show next month - can't wait!"
    r"|\s*(?:-+|\u2013|\u2014)\s*(?:(?:so|really|super|pretty)\s+)*"  # "... opener is next week - so excited!"
    r"(?:excited|stoked|pumped|thrilled|nervous|happy|proud|grateful)[\s.!]*$"
    r"|,?\s+since (?:(?:we|i|you|they) (?:last )?(?:spoke|talked|chatted|caught up)(?: last)?"  # "they": swapped
    rf"|{_OUR_LAST_CHAT}|their last (?:chat|talk|conversation))[\s.!]*$"
    r"|,?\s+(?:after that|afterwards|since then)[\s.!]*$"  # the chat's then, not a date
    r"|,\s*(?:speaking of(?: which)?|by the way|btw|anyways?)[\s.!]*$"  # "..., speaking of."
    r"|\s*(?:-+|\u2013|\u2014)\s*(?:come see|check (?:it|them) out|wish me luck|see for yourself)[\s.!]*$",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"\b(?:really|just|actually|totally|literally|basically|definitely|honestly|seriously|truly|"
    r"kinda|sorta|super|also|even(?!\s+(?:though|if|when|as|so|more|less|better|worse|after|before)\b))\s+(?=\w)",
    re.IGNORECASE,
)
_KIND_OF = re.compile(
    r"(?<!\ba)(?<!\bthe)(?<!\bwhat)(?<!\bthis)(?<!\bthat)(?<!\bsome)(?<!\bany)(?<!\bsame)(?<!\bone)"
    r"(?<!\bwhich)(?<!\bnew)(?<!\bevery)(?<!\bdifferent)(?<!\bthese)(?<!\bthose)(?<!\bmy)"
    r"(?<!\btheir)(?<!\byour)(?<!\bour)\s+(?:kind|sort)\s+of\s+(?=\w)",
    re.IGNORECASE,
)
# Spoken contractions written out, before the pronoun swap ("I'm gonna" -> "Is going to").
_SPOKEN = re.compile(r"\b(gonna|wanna)\b", re.IGNORECASE)
_SPOKEN_OUT = {"gonna": "going to", "wanna": "want to"}
# "so" as an intensifier ("so happy"), not as a conjunction or in "so much/many/far/that".
_SO = re.compile(
    r"\bso\s+(?!(?:much|many|far|that|long|i|i'm|i've|i'd|i'll|we|they|he|she|it|you|my|the|a|an|"
    r"on|and|to|when|if|then|yeah|what)\b)(?=[a-z])",
    re.IGNORECASE,
)

_BE_HAVE = {"am": "is", "'m": "is", "have": "has", "do": "does", "don't": "doesn't", "haven't": "hasn't",
            "dont": "doesn't", "are": "is", "aren't": "isn't", "was": "was", "wasn't": "wasn't",
            "were": "was", "weren't": "wasn't"}  # fmt: skip
_KEEP_AFTER_I = frozenset(
    "can can't cannot could couldn't will won't would wouldn't should shouldn't must might may did didn't "
    "was wasn't had hadn't used never also always often usually sometimes still recently finally even "
    "already now once mostly currently gonna wanna gotta ought".split()
)
_ADVERBS = frozenset(
    "also always often usually sometimes still recently finally even already now once mostly currently "
    "never rarely seldom generally normally typically occasionally probably only".split()
)
_IRREGULAR_PAST = frozenset(
    "went took won made got had saw met ran began bought brought came did felt found gave kept knew left lost "
    "paid put read said sent sold spent taught thought told wrote drove ate flew grew heard held built caught "
    "chose fell fought forgot hung hurt let led meant rode rose sang sat slept spoke stood swam threw woke "
    "wore became broke understood lay wound ground bore bound fed shot struck stuck swore tore wept dug "
    "drew rang sank shook slid spun stole stung swung".split()
)
# Same spelling in the present and the past: "I set up meetings" is a past event more often than not.
_PAST_OR_PRESENT = frozenset(
    "set put read cut hit let quit spread cost hurt shut bet cast upset split burst".split()
)
_PARTICIPLE = frozenset("been gone done seen had made taken given known got gotten".split())
_SUBJECT = re.compile(r"^(i am|i have|i will|i would|i'm|im|i've|ive|i'd|i'll|i|we're|we've|we'd|we'll|we)(?![\w'])",
                      re.IGNORECASE)  # fmt: skip
_TOGETHER = re.compile(
    # "We're best friends"; not "..., which is great as we all need friends for our pets"
    r"\b(?:each other|one another)\b|^(?:\w+\s+){0,2}?(?<!our )(?<!my )(?<!with )(?<!their )friends\b"
    # "We met in college"; not "We got to meet some people", "We're putting together a show"
    r"|^(?!.*\bput(?:s|ting)?\b).*\btogether\b|\b(?:met|meet)\b(?!\s+(?:some|a|an|the|lots|many|new|other|people|up)\b)"
    r"|^(?:were|are|been|became|become)\s+(?:\w+\s+){0,2}?\w*(?:mates|partners|neighbou?rs|colleagues|siblings|"
    r"cousins|twins|buddies|members|parents|kids)\b",  # "We were teammates": a pair's fact, said plural
    re.IGNORECASE,
)
_WE_ALL = re.compile(r"^(?:all|both)\s+(?=\w)", re.IGNORECASE)
_LEAD_FORMS = {"i'm": "is", "im": "is", "i am": "is", "i've": "has", "ive": "has", "i have": "has",
               "i'll": "will", "i will": "will", "i would": "would",
               "we": "they", "we're": "they're", "we've": "they've", "we'd": "they'd", "we'll": "they'll"}  # fmt: skip
_SWAP = {"i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themself",
         "i'm": "they're", "im": "they're", "i've": "they've", "ive": "they've", "i'd": "they'd",
         "i'll": "they'll", "we": "they", "we're": "they're", "we've": "they've", "we'd": "they'd",
         "we'll": "they'll", "our": "their", "ours": "theirs", "us": "them", "ourselves": "themselves"}  # fmt: skip
_PRONOUN = re.compile(
    r"(?<![\w'-])(?:i am|i was|i'm|im|i've|ive|i'd|i'll|i|me|my|mine|myself|we're|we've|we'd|we'll|we|"
    r"our|ours|us|ourselves)(?![\w'-])",  # not inside a compound: "me-time" is a word of its own
    re.IGNORECASE,
)
_EVALUATIVE_WORDS = (
    r"(?:awesome|amazing|great|cool|fun|exciting|nice|wonderful|fantastic|incredible|lovely|sweet|powerful|"
    r"special|enlightening|inspiring|emotional|beautiful|magical|unforgettable|memorable|relaxing|peaceful|"
    r"therapeutic|rewarding|fulfilling|moving|touching|eye-opening|empowering|uplifting|intense|surreal|"
    r"meaningful|epic|motivating|encouraging|heartwarming|refreshing|humbling|satisfying|a blast)"
)
# ", which was awesome", "and it was so powerful", " - it was inspiring and emotional", "that's cool": an evaluation
# of what the clause already said, not a fact of its own.
_EVALUATIVE_TAIL = re.compile(
    r"(?:,?\s+|\s+-+\s*)(?:which|and\s+it|it|that)\s*(?:is|was|'s|has been)\s+"
    r"(?:(?:so|really|pretty|super|very|truly|just|such)\s+)*"
    rf"{_EVALUATIVE_WORDS}(?:\s+(?:and|but)\s+(?:(?:so|really|very)\s+)*{_EVALUATIVE_WORDS})?"
    r"[\s.!]*$",
    re.IGNORECASE,
)


def third_person_verb(word: str) -> str:
    """The third-person singular of a verb said after "I" ("run" -> "runs", "am" -> "is"); other
    words (past forms, modals, adverbs, nouns) are returned unchanged."""
    head, dash, last = word.rpartition("-")
    if dash and head and last.isalpha():  # "color-code" -> "color-codes"
        return f"{head}-{third_person_verb(last)}"
    low = fold(word)
    if low in _BE_HAVE:
        out = _BE_HAVE[low]
    elif (
        low in _KEEP_AFTER_I
        or low in _PAST_OR_PRESENT
        or low in _IRREGULAR_PAST
        or not low.isalpha()
        or not low.isascii()
    ):
        return word
    else:
        if low not in getAllLemmas(low, upos="VERB").get("VERB", ()):
            return word
        forms = getInflection(low, tag="VBZ")
        out = forms[0] if forms else low + "s"
    return out.capitalize() if word[:1].isupper() else out


def _lead(text: str) -> tuple[str, bool]:
    """Drop a leading first-person subject; (rest, dropped) with the verb in the third person."""
    m = _SUBJECT.match(text)
    if not m:
        if re.match(r"been\s+\w", text, re.IGNORECASE):  # "Been running longer": an "I've" left off
            return f"Has b{text[1:]}", True
        return text, False
    form = fold(m.group(1))
    rest = text[m.end() :].lstrip()
    if form in ("we", "we're", "we've", "we'd", "we'll"):
        rest = _WE_ALL.sub("", rest)  # "We all made our own pots": each of them did, the person too
        if _TOGETHER.search(rest):  # "We've known each other since college": a pair, not the person
            return f"{_LEAD_FORMS[form]} {rest}", False
        # "We went biking" is the person's doing as much as "I went biking": said the same way
        form = {"we": "i", "we're": "i'm", "we've": "i've", "we'd": "i'd", "we'll": "i'll"}[form]
    if form in _LEAD_FORMS:
        return f"{_LEAD_FORMS[form]} {rest}".strip(), True
    tokens = rest.split(" ")
    if form == "i'd":
        k = 0
        while k < len(tokens) - 1 and fold(tokens[k]) in _ADVERBS:
            k += 1
        nxt = fold(tokens[k]) if tokens else ""
        had = nxt in _PARTICIPLE or (nxt.endswith("ed") and nxt not in ("need", "feed", "seed", "bleed"))
        return f"{'had' if had else 'would'} {rest}".strip(), True
    # "I" + optional adverbs + verb
    k = _verb_at(tokens)
    tokens = _emphatic_do(tokens, k)
    k = _verb_at(tokens)
    if tokens and tokens[0]:
        if fold(tokens[k]) in _PAST_OR_PRESENT and _HABITUAL.search(" ".join(tokens[k + 1 :])):
            tokens[k] = tokens[k] + "s"  # "I read a book every week": present, as the habit says
        else:
            tokens[k] = third_person_verb(tokens[k])
        if k + 2 < len(tokens) and fold(tokens[k + 1]) in ("and", "or") and tokens[k + 2].isalpha():
            tokens[k + 2] = third_person_verb(tokens[k + 2])  # "I practice and train" -> "... and trains"
    return " ".join(tokens), True


# "I'm retired and I love to gamble": the second "I" of a fact whose first was dropped goes too
_AND_I = re.compile(
    r"(?<=\b(?:and|but) )I(?:(?P<form>'m| am|'ve|'d|'ll)|(?P<adverbs>(?: \w+ly| (?:also|still|always|often|now))*) "
    r"(?P<verb>[a-z]+))\b"
)
_AND_I_FORMS = {"'m": "is", " am": "is", "'ve": "has", "'d": "would", "'ll": "will"}


# "I do love ...", "I did enjoy ...": the stress goes, the verb takes the tense ("Loves", "Enjoyed")
_STRESSABLE = frozenset(
    "love like enjoy miss hope wish think believe feel want need know agree appreciate care hate prefer "
    "remember admire respect adore".split()
)
# A habit said with a verb whose past and present are written alike ("read", "put", "set")
_HABITUAL = re.compile(
    r"(?i)\b(?:every|each)\s+(?:day|night|morning|week|weekend|month|year)\b|\b(?:daily|weekly)\b"
)


def _emphatic_do(tokens: list[str], k: int) -> list[str]:
    """``tokens`` without a stressing "do"/"did" at ``k`` before a stance verb (adverbs between
    stay): "do really love" -> "really loves"; "did enjoy" -> "enjoyed"."""
    aux = fold(tokens[k]) if k < len(tokens) else ""
    if aux not in ("do", "did"):
        return tokens
    j = k + 1
    while j < len(tokens) - 1 and (fold(tokens[j]) in _ADVERBS or _adverb_ly(tokens[j])):
        j += 1
    verb = fold(tokens[j]) if j < len(tokens) else ""
    if verb not in _STRESSABLE:
        return tokens
    if aux == "did":
        forms = getInflection(verb, tag="VBD")
        tokens = [*tokens[:j], forms[0] if forms else verb + "ed", *tokens[j + 1 :]]
    return tokens[:k] + tokens[k + 1 :]  # a present verb: the caller puts it in the third person


def _verb_at(tokens: list[str]) -> int:
    """Where the verb is after a subject that went: past its adverbs ("always", "finally")."""
    k = 0
    while k < len(tokens) - 1 and (fold(tokens[k]) in _ADVERBS or _adverb_ly(tokens[k])):
        k += 1
    return k


def _and_i(m: re.Match[str]) -> str:
    if m.group("form"):
        return _AND_I_FORMS[m.group("form")]
    verb = third_person_verb(m.group("verb"))
    if verb == m.group("verb") and verb not in _IRREGULAR_PAST and not verb.endswith("ed"):
        return m.group(0)  # not a present or past verb: left as said ("and I too ...")
    return f"{m.group('adverbs').lstrip()} {verb}".lstrip()


def _third_person_joined(text: str, joined: Sequence[str]) -> str:
    """``text`` with each ``joined`` verb in the third person where it follows "and"/"or" or a comma
    (an adverb between allowed: "and only listen")."""
    tokens = text.split(" ")

    def joins(i: int) -> bool:
        while i > 1 and fold(tokens[i - 1]) in _ADVERBS:
            i -= 1
        return tokens[i - 1].endswith(",") or fold(tokens[i - 1]) in ("and", "or")

    for verb in joined:
        at = next(
            (i for i in range(1, len(tokens)) if fold(tokens[i].strip(",;")) == fold(verb) and joins(i)), None
        )
        if at is not None:
            word = tokens[at].strip(",;")
            tokens[at] = tokens[at].replace(word, third_person_verb(word), 1)
    return " ".join(tokens)


# A leading adverbial before the speaker's subject ("Off the court, I'm ...", "After the game, we
# ..."): moved behind the statement, so the rewrite keeps the statement and the word budget cuts
# the adverbial first; a participial discourse marker ("Speaking of trips, my wife and I ...") goes.
_SPEAKER_STARTS = r"(?:I|I'm|I've|I'd|I'll|my|we|we're|we've|our)\b"
_FRONT = re.compile(
    rf"^(?P<lead>[^,;:!?]{{2,60}}?),\s+(?P<rest>{_SPEAKER_STARTS}.*)$",
    re.IGNORECASE | re.DOTALL,
)


_SINCE_WE_TALKED = (
    r"since (?:(?:we|i|you) (?:last )?(?:spoke|talked|chatted|caught up|met|saw each other)(?: last)?"
    rf"|{_OUR_LAST_CHAT})"
)
_CATCH_UP = re.compile(
    rf"(?:{_SINCE_WE_TALKED}|since (?:then|last time)"
    r"|in the meantime|meanwhile|on (?:another|a different|a side|that|a related) note"
    r"|(?:besides|other than|apart from|aside from) (?:that|this|all that)|after that|afterwards|then)\W*$",
    re.IGNORECASE,
)


# A lead that is a main clause of its own: "The sound of that river was so soothing, I felt ...";
# not a "when/after ..." clause, which says when the fact holds ("When I was a kid, I loved comics")
_SAYS = re.compile(
    r"(?i)^(?!(?:after|when|whenever|before|while|because|since|if|as|until|once|though|although|even)\b)"
    r".*(?:\b(?:is|was|are|were|has|have|had)\b|\b(?:it|that|there|he|she|this|they|we|you)'(?:s|re)\b)"
)

# ... however short, when it only judges what the other speaker said: "That's cool, I love Star Wars"
_JUDGED = re.compile(
    rf"(?i)^(?:that|it|this)(?:'s|\s+is|\s+was|\s+sounds)\s+(?:(?:so|really|very|pretty|super)\s+)*{_EVALUATIVE_WORDS}$"
)

# The same without a comma, for a few words only: "For me I love ...", "Now I'm ..."
_BARE_FRONT = re.compile(
    r"^(?P<lead>for me|personally|honestly|now|lately|recently|currently|these days|nowadays)\s+"
    r"(?P<rest>(?:I|I'm|I've|I'd|I'll|we|we're|we've)\s.*)$",
    re.IGNORECASE | re.DOTALL,
)
_SAID_FOR_ME = frozenset({"for me", "personally", "honestly"})
# How often, before the subject: said after it, where the dropped "I" leaves it first
_HOW_OFTEN = re.compile(
    r"^(?P<lead>sometimes|usually|often|always|occasionally|normally|generally|mostly|never|rarely|seldom)\s+"
    r"(?P<rest>(?:I|I'm|I've|we|we're|we've)\s.*)$",
    re.IGNORECASE | re.DOTALL,
)
_JOINING = frozenset({"and", "but", "so", "plus", "then"})
# The chat's own time said without a comma ("Since we last spoke I went to ..."): it goes.
_BARE_CATCH_UP = re.compile(
    rf"^(?:{_SINCE_WE_TALKED}|in the meantime|meanwhile)\s+(?P<rest>{_SPEAKER_STARTS}.*)$",
    re.IGNORECASE | re.DOTALL,
)
# An answer to "how are you?" before the news ("I'm doing well, I just had a picnic ..."): it goes.
_DOING_WELL = re.compile(
    r"^(?:i'm|i am|we're|we are)\s+(?:doing\s+)?(?:(?:really|pretty|very|so|quite)\s+)?"
    r"(?:well|good|great|fine|ok|okay|alright|all right)$",
    re.IGNORECASE,
)


def _front_adjunct(text: str) -> str:
    if (caught_up := _BARE_CATCH_UP.match(text)) is not None:
        return caught_up.group("rest")
    if (often := _HOW_OFTEN.match(text)) is not None:  # "Sometimes I bring work home"
        subject, _, rest = often.group("rest").partition(" ")
        return f"{subject} {often.group('lead').lower()} {rest}"
    bare = _BARE_FRONT.match(text)
    if bare is not None:
        lead, rest = bare.group("lead").lower(), bare.group("rest").rstrip(" .!?")
        return rest if lead in _SAID_FOR_ME else f"{rest} {lead}"
    lead, comma, rest = text.partition(", ")
    if comma and _DOING_WELL.match(lead.strip()):
        return rest  # "I'm doing well, just got back from ...": the news, whoever says it
    m = _FRONT.match(text)
    if m is None or _SUBJECT.match(m.group("lead")) or fold(m.group("lead").split()[0]) in FIRST_PERSON_WORDS:
        return text  # "I went home, I was tired" and "My kids, my husband and I ..." stay as said
    lead, rest = m.group("lead").strip(), m.group("rest").rstrip(" .!?")
    if _CATCH_UP.match(lead):
        return rest  # "Since we last talked," "On another note,": the chat's time and turns, not the fact's
    if (len(lead.split()) >= 4 and _SAYS.search(lead)) or _JUDGED.match(lead):
        return rest  # "The sound of that river was so soothing, I felt ...": a clause of its own
    words = lead.split()
    if len(words) > 1 and fold(words[0]) in _JOINING:
        words = words[1:]  # "And after college," joined the sentence to the one before
        lead = " ".join(words)
    first = fold(words[0])
    if first in ("was", "is", "were", "has", "been"):
        return rest  # "(Last week) was wild, I got noticed ...": its date said as the subject
    if first.endswith("ing") and not any(w[:1].isupper() or w[:1].isdigit() for w in words[1:]):
        return rest  # "Speaking of trips," "Looking back,": a discourse marker, nothing to keep
    opener = first in STOPWORDS or first.endswith(("ing", "ly"))
    if len(words) == 1 and not opener:
        return text  # one capitalised word may be a name or a place: leave it to the rest
    if opener or (words[0][1:].islower() and "'" not in words[0]):
        # capitalised only to open the sentence ("Besides writing," "It's Seattle,"), not "Maria's party,"
        lead = f"{words[0].lower()} {' '.join(words[1:])}".strip()
    return f"{rest} {lead}"


def _adverb_ly(token: str) -> bool:
    """An -ly adverb before the verb ("I completely agree"); "I apply"/"I rely" are verbs."""
    low = fold(token)
    return low.endswith("ly") and len(low) > 5 and low not in ("apply", "reply", "supply", "multiply")


def _swap(text: str) -> str:
    quoted = [q.span() for q in QUOTATION.finditer(text)]

    def repl(m: re.Match[str]) -> str:
        if any(start < m.start() < end for start, end in quoted):
            return m.group(0)  # a title's own words: "Under My Thumb", "My Way"
        word = fold(m.group(0))
        if word == "i am":
            out = "they are"
        elif word == "i was":
            out = "they were"
        elif m.group(0) == "US":
            return "US"  # the country, not "us"
        elif m.group(0) == "I" and _numeral_i(text, m):
            return "I"  # "World War I", "Henry I,": a numeral, not the speaker
        else:
            out = _SWAP[word]
        return out.capitalize() if m.start() == 0 and m.group(0)[:1].isupper() else out

    swapped = _PRONOUN.sub(repl, text)
    # "Me and my teammates were thrilled": the object form said as a subject is "They and ..."
    return f"They{swapped[4:]}" if swapped.startswith("Them and ") else swapped


# A capital "I" after "War", or after a capitalised word inside the text with nothing but punctuation after it
_AFTER_NAME = re.compile(r"\S [A-Z][a-z]+ $")
_THEN_NOTHING = re.compile(r"\s*(?:[,.;:!?)]|$)")


def _numeral_i(text: str, m: re.Match[str]) -> bool:
    before = text[: m.start()]
    return before.endswith("War ") or bool(
        _AFTER_NAME.search(before) and _THEN_NOTHING.match(text[m.end() :])
    )


# "My wife and I left ..." swaps to "Their wife and they left ...": said with "they" first
_AND_THEY = re.compile(r"^(?P<others>(?:[\w'-]+ ){1,5}?)and they (?=[a-z])")


def _only_verb(word: str) -> bool:
    lemmas = getAllLemmas(fold(word))
    return bool(lemmas.keys() & {"VERB", "AUX"}) and "NOUN" not in lemmas


def _they_first(text: str) -> str:
    if text.startswith("They and "):  # "Me and my mom made dinner": the others end at the verb
        words = text.split(" ")[2:]
        at = next((j for j in range(1, min(len(words), 6)) if _only_verb(words[j])), None)
        done = _done_with(" ".join(words[:at]), " ".join(words[at:])) if at else None
        return done or text
    m = _AND_THEY.match(text)
    if m is None or any(_only_verb(w) for w in m.group("others").split()):
        return text  # "Their laptop crashed and they lost ...": two clauses, not two people
    if "VERB" in getAllLemmas(fold(m.group("others").split()[0])):
        return text  # "Works at a hospital and they take the bus": the subject left off is theirs
    others = m.group("others").strip()
    if fold(others.split()[0]) in STOPWORDS:  # "Their wife", "Some friends"; a name keeps its capital
        others = others[:1].lower() + others[1:]
    return _done_with(others, text[m.end() :]) or f"They and {others} {text[m.end() :]}"


def _done_with(others: str, rest: str) -> str | None:
    """ "Max and I went camping" -> "Went camping with Max": the person's own doing, said as the
    tree says every fact; "together" becomes the "with". None when ``rest`` is not one verb
    phrase ("My brother and I cook and I bake")."""
    tokens = rest.split(" ")
    k = _verb_at(tokens)
    if re.search(r"\bthey\b", rest, re.IGNORECASE) or not getAllLemmas(fold(tokens[k])).keys() & {
        "VERB",
        "AUX",
    }:
        return None
    tokens[k] = third_person_verb(tokens[k])
    said = " ".join(tokens)
    together = re.search(r"\btogether\b", said)
    if together:
        said = f"{said[: together.start()]}with {others}{said[together.end() :]}"
    else:  # before the time it happened: "Went camping with friends last weekend"
        when = _TRAILING_WHEN.search(said)
        cut = when.start() if when else len(said)
        said = f"{said[:cut]} with {others}{said[cut:]}"
    return said[:1].upper() + said[1:]


_TRAILING_WHEN = re.compile(
    r"\s+(?:(?:last|this|next|every)\s+\w+|yesterday|today|tonight|recently|lately|(?:a|an|one|two|three|"
    r"\d+|a few|a couple of)\s+\w+\s+ago|in\s+(?:\d{4}|(?:Jan|Febr)uary|March|April|May|June|July|August|(?:Septem|Octo|Novem|Decem)ber)"
    r"|on\s+[A-Z][a-z]+day)$"
)


# "I'm lucky to have my husband and kids": the fact is what they have, the luck is how they feel
_GLAD_TO = re.compile(
    r"^(?P<be>[Ii]s|[Ww]as) (?:so |really |very |super |truly |just )?(?:lucky|grateful|thankful|blessed|glad|happy|"
    r"fortunate) (?:to (?P<verb>have|be)|(?:that )?they (?P<they>have|had)) (?=\w)"
)
_GLAD_FACT = {("is", "have"): "has ", ("was", "have"): "had ", ("is", "be"): "is ", ("was", "be"): "was ",
              "have": "has ", "had": "had "}  # fmt: skip


def _glad_to(text: str) -> str:
    m = _GLAD_TO.match(text)
    if m is None:
        return text
    said = m.group("they") or (m.group("be").lower(), m.group("verb"))
    return _GLAD_FACT[said] + text[m.end() :]


def rewrite(
    clause: str, *, name: str | None = None, max_words: int = 12, verb: str = "", joined: Sequence[str] = ()
) -> str:
    """A short third-person fact from one clause (see the module docstring); "" when nothing with
    content is left. ``verb``: the clause's main verb as written, when a parser read it; no tail cut
    goes before it ("The help I got from friends, family and mentors was huge" is no "The help they
    got from friends, family"). ``joined``: present verbs a parser read as joined to a leading
    "I"/"we"'s verb, said in the third person with it ("I play the piano and sing" -> "Plays the
    piano and sings")."""
    text = strip_emoji(clause.replace("\u2019", "'").replace("\u2018", "'"))
    for _ in range(3):
        before = text
        text = _OPENER.sub("", text)
        text = _HEDGE.sub("", _BELIEF_THAT.sub(r"\1 ", text))
        text = _TRAILING_TALK.sub("", text).rstrip(" .!?,;")
        if text == before:
            break
    text = _EVALUATIVE_TAIL.sub("", text)
    text = _KIND_OF.sub(" ", _FILLER.sub("", text))
    text = _SPOKEN.sub(lambda m: _SPOKEN_OUT[m.group(1).lower()], text)
    text = _SO.sub("", text)
    text = " ".join(text.split()).strip(" ,;:-")
    fronted = _front_adjunct(text)
    text, dropped = _lead(fronted)
    if dropped and joined:
        text = _third_person_joined(text, joined)
    if dropped and re.match(r"i\b|i'|im\b|ive\b", fold(fronted)):
        text = _AND_I.sub(_and_i, text)
    possessive = False
    if name and not dropped and re.match(r"my\b", text, re.IGNORECASE):
        text, possessive = text[2:].lstrip(), True
    text = _swap(text)
    text, cut = shorten(text, max_words - (1 if (name and (dropped or possessive)) else 0), verb)
    if (
        cut
    ):  # ", which is awesome considering ...": the cut leaves the evaluation or the chat's time at the end
        text = _TRAILING_TALK.sub("", _EVALUATIVE_TAIL.sub("", text))
    text = _glad_to(_they_first(tidy(text, cut)))
    if not text or not (content_stems(text) or number_tokens(text)):
        return ""
    if name and possessive:
        return f"{name}'s {text}"
    if name and dropped:
        return f"{name} {text[:1].lower()}{text[1:]}"
    return text[:1].upper() + text[1:]
