"""Small talk: values with no lasting content, which no engine may file as a memory.

:func:`small_talk_reason` says why a value is small talk (``None`` when it may be a fact);
:func:`is_small_talk` is its boolean. The gate refuses such ADD/UPDATE values from the listener
and from models (reason ``SMALL_TALK``), whatever engine wrote them. Deterministic and
conservative: a value is flagged only when it is, as a whole, one of

- ``question``: ends with "?" or is a tag question such as "how about you";
- ``greeting``: a greeting or farewell ("Hey there", "ttyl, Bye!", "Talk soon");
- ``thanks``: thanks or congratulations ("Thanks so much", "Congrats on the new job!");
- ``backchannel``: an acknowledgement ("I hear ya", "Sounds good", "Same here", "Me too");
- ``addressed``: about the other speaker, not the subject ("You're so sweet", "Your kids are adorable",
  "Hope you have fun", "Good for you");
- ``compliment``: an evaluation of the chat ("Great pic", "What a beautiful photo");
- ``caption``: an image description in the BLIP style ("a photo of a dog sitting on a couch");
- ``platitude``: a general saying ("Life is short", "family is everything");
- ``no content``: nothing left once pronouns, evaluative words ("great", "so true") and light verbs
  ("was", "loved", "feels") are set aside ("It was great", "That's so true", "They loved it");
- ``vague``: no name, no number, and every content word generic: a generic noun or indefinite
  ("news", "something", "experience", "a lot"), a verb saying only that something was done or
  happened ("tried", "tackled", "learned", "shared"), a reaction without its object ("felt
  inspired", "belonged", "grateful") or a vague modifier ("new", "big", "hectic", "again")
  ("Tried something new", "Had an unforgettable experience", "Felt motivated"), or a motto of
  keeping on ("Is staying positive and pushing forward", "Keeps chasing their dreams"). A date in
  parentheses is set aside first: it says when, not what ("Got big news (5 May 2023)" is still
  empty); a number outside it is a measure ("Ran 5 miles") and keeps the value;
- ``feeling``: a feeling that has passed, with no date, number or name ("Felt at peace surrounded by
  rocks", "Was so thrilled to see everyone"): how a moment felt, not what is true of the person
  ("Felt supported by their church" names who, and stays);
- ``leaving``: on the way out to do something now ("Is off to bake some cakes", "Off to bed"): the
  moment, not the person ("Is off to college in the fall" is a plan, and stays).

A real fact keeps at least one content word, a number or a name ("Has a dog", "Is 32", "Moved to
Lisbon (May 2023)", "Loves hiking", "Started surfing (2018)", "Got a new job at Google", "Has been
feeling low on confidence lately") and is never flagged.
"""

from __future__ import annotations

import re

from .segment import strip_emoji
from .text import STOPWORDS, fold, words

__all__ = ["is_small_talk", "says_a_feeling", "small_talk_reason", "substance"]

_PARENS = re.compile(r"\([^)]*\)")
_LEAD = re.compile(r"^(?:(?:oh+|ah+|aw+|aww+|wow|whoa|woo+|woohoo|yay+|yum+|mm+|ooh+|hooray|haha+|hah|ha|lol|lmao|omg|yeah|yes|yep|yup|ok|okay|"
                   r"oh my|hey|hi|hmm+|well|so|and|but|man|dude|girl)\b[\s,!.:-]*)+")  # fmt: skip

_QUESTION = re.compile(
    r"^(?:and )?(?:how|what) about (?:you|yourself|u)\b|^(?:and )?(?:you|u|yourself)$|"
    r"^(?:hbu|wbu|wyd|sup)$|^(?:anything|any) (?:new|exciting|fun|good|interesting|else|plans)\b|"
    r"^(?:what|how|where|when|why|who|which|whose|did|do|does|have|has|had|are|were|is|was|can|could|would|"
    r"will|how've|what's|how's|where's|when's|who's)\b[^.!]*\b(?:you|your|u|ya|yourself)\b"
)
_GREETING = re.compile(
    r"^(?:hi+|hello+|hey+|heya|hiya|yo|howdy|greetings|good (?:morning|afternoon|evening|night|day)|"
    r"morning|evening|bye+|goodbye|good ?bye|bye for now|byee+|see (?:you|ya|u)(?: (?:later|soon|then|"
    r"around|tomorrow|next time))?|ttyl|ttys|talk (?:to you |soon|later)\w*|later|cya|catch (?:you|ya) later|"
    r"take care|have a (?:good|great|nice|lovely|wonderful) (?:one|day|night|evening|weekend|time)|"
    r"gotta go|got to go|g2g|gtg|nice (?:to meet|meeting|chatting|talking)|good (?:to see|talking|chatting)|"
    r"great (?:to see|talking|chatting)|nice to (?:see|chat|talk)|(?:it was |it's )?(?:nice|good|great|lovely) "
    r"(?:to )?(?:chat|talk|catch)\w*(?: with)?(?: you)?(?: up)?|long time no see|welcome|night|"
    r"there|you too|same to you|all the best|cheers|peace(?: out)?|what'?s up|whats new|what's new|"
    r"how (?:are|r) (?:you|u)(?: doing)?|how have you been|how's it going|how is it going|how you doing)"
    r"(?:[\s,!.]+(?:there|again|you|ya|to you|too|guys|everyone|friend|buddy|now|soon|later|then|bye|"
    r"ttyl|take care|talk soon|cheers))*$"
)
_THANKS = re.compile(
    r"^(?:(?:thanks?|thank you|thx|ty|tysm|many thanks|much appreciated|appreciate(?:s|d)? (?:it|that|you|"
    r"this|the|your)|thanks? a (?:lot|bunch|million)|congrat\w*|kudos|cheers|good luck|best of luck|bless you|"
    r"(?:is )?grateful for (?:you|your|that|it|this)|means a lot)\b.*|(?:so )?sweet of you.*)$"
)
_BACKCHANNEL = re.compile(
    r"^(?:i |they |(?:she|he) )?(?:hear|hears) (?:ya|you|u)|^(?:me|them|him|her) (?:too|neither|either)\b|"
    r"^same(?: here| for me| with me| to you)?$|^(?:sounds?|seems?|looks?) (?:like )?(?:good|great|fun|"
    r"awesome|amazing|cool|nice|perfect|lovely|wonderful|fantastic|like a plan|like fun|like a blast|"
    r"like a great|like a good|interesting|exciting|tough|hard|rough)|^(?:i |they )?(?:totally |completely )?"
    r"(?:agree|agrees)(?: with (?:you|that|this))?(?: 100%)?$|^(?:i |they )?(?:feel|feels) (?:you|ya|the same)$|^(?:i )?(?:know|knows),? right|^i know$|^knows$|"
    r"^(?:i |they )?(?:get|gets|see|sees) (?:it|that|you|what you mean)$|^(?:that )?makes? (?:total |"
    r"perfect )?sense|^fair enough|^good (?:point|idea|to know|call|question)|^(?:for sure|exactly|"
    r"totally|definitely|absolutely|indeed|agreed|true|right|sure|of course|no worries|no problem|np|"
    r"got it|gotcha|noted|cool|nice|neat|sweet|great|awesome|perfect|okay|ok|alright|yep|yeah|yes|nope|"
    r"no|lol|haha|hahaha|wow|whoa|oh|ah|hmm|mhm|uh huh|same|ditto|indeed|word|bet|tell me about it|"
    r"you bet|no way|oh no|oh well|my bad|never mind|nevermind|sorry|i see|i know|you know|"
    r"not really|maybe|probably|i guess|guess so|hope so|i hope so|me neither|that's it|let me know|"
    r"woo+|woohoo|yay+|yum+|mm+|ooh+|hooray|check it out|check this out|"
    r"keep it up|keep (?:up )?the good work|you got this|you've got this|go for it|have fun|enjoy)\b[\s,!.]*$"
)
_ADDRESSED = re.compile(
    r"^(?:you|your|you're|youre|you've|you'll|you'd|yours|u|ur|yourself)\b|"
    r"^(?:(?:i |they )?(?:hope|hopes|wish|wishes|bet|bets) (?:you|your|u)\b)|"
    r"^(?:good|great|happy|glad|proud|so proud|so happy|so glad) (?:for|of) (?:you|ya|u)\b|"
    r"^(?:(?:i'm |i am |is )?(?:so |really )?(?:glad|happy|sorry|excited|thrilled|proud) "
    r"(?:to hear|you|that you|for you|of you)\b)|^(?:can't|cannot|can not) wait to (?:see|hear)\b|"
    r"^(?:(?:i'm |i am |is )?(?:so |really |very )?sorry (?:about|for|to)\b)|"  # "I'm sorry about Max"
    r"^(?:let me know|let us know|keep me posted|tell me more|show me)\b|"
    r"^(?:(?:i |they )?(?:got|gets|have|has) (?:your|ya) back)"
)
_EVALUATIVE = frozenset(
    """
great good awesome amazing cool nice fun wonderful fantastic sweet cute lovely beautiful gorgeous
adorable incredible impressive interesting exciting excited true right glad sorry thrilled stunning
perfect brilliant terrific super neat wild crazy insane funny hilarious sad awful terrible horrible
tough hard rough scary touching inspiring inspirational powerful special cool fab fabulous epic
beautifully best better worse worst favorite favourite magical breathtaking heartwarming relaxing
peaceful fascinating remarkable unbelievable lucky blessed welcome happy delightful precious bummer
shame pity congrats congratulations luck wonderfully boring weird strange tasty delicious yummy
lit dope rad solid okay fine proud delish yum yummy
""".split()
)
_LIGHT = frozenset(
    """
is are was were be been being am has have had having do does did doing 'm 's 're 've 'd 'll
love loves loved loving like likes liked enjoy enjoys enjoyed appreciate appreciates appreciated agree
agrees agreed hear hears heard know knows knew see sees saw seen feel feels felt think thinks thought
guess guesses guessed mean means meant sound sounds sounded look looks looked seem seems seemed say
says said get gets got totally definitely absolutely wait waits can't cannot hope hopes hoped wish
wishes bet miss misses missed sure tell tells told thing things time times way ways one ones lot kind
sort such so very really too true indeed right wow oh yeah gonna wanna gotta lol haha ya yeah yes
wonder wonders wondered imagine imagines believe believes must might could would should will
absolutely truly super pretty quite bit little always never ever forever
""".split()
)
_PRONOUNS = frozenset(
    """
i me my mine myself we us our ours they them their theirs themself themselves it its it's itself
that that's this these those he him his she her hers there there's here what which who
you your yours ya u
""".split()
)
_CHAT_NOUNS = (
    r"(?:pic|pics|picture|pictures|photo|photos|shot|shots|snap|selfie|idea|ideas|point|points|job|work|"
    r"question|news|story|stories|one|choice|advice|tip|tips|view|find|catch|plan|pick|chat|talk|work|"
    r"effort|attitude|mindset|outlook|vibe|vibes|thing)"
)
_COMPLIMENT = re.compile(
    r"^(?:what an?|such an?|how|that's an?|that is an?|that's|that is|this is|it's|it is|its|so|very|"
    r"really|absolutely|truly|just)?\s*(?:(?:so|very|really|super|absolutely|truly|such|pretty|"
    r"totally)\s+)*(?:" + "|".join(sorted(_EVALUATIVE)) + r")(?:\s+(?:and|&)\s+\w+)?\s+" + _CHAT_NOUNS + r"\b"
)
_POSTURE = (
    r"(?:sitting|standing|laying|lying|holding|posing|wearing|hanging|leaning|walking|riding|parked|"
    r"perched|displayed|covered|filled|stacked|floating|flying|looking|smiling|sleeping|resting|playing|"
    r"running|swimming|surrounded|decorated|painted|written|made|placed|topped|piled)"
)
_CAPTION = re.compile(
    r"^(?:an? |the )?(?:close ?up|photo|photography|photograph|picture|image|pic|screenshot|view|painting|drawing|"
    r"sketch|selfie|snapshot|cartoon|poster|sign|black and white photo|blurry photo|blurry picture)"
    r"s? (?:of|from|with|showing|that)\b|"
    r"^(?:here's|here is|here are|heres|look at) (?:a|an|the|some|my|this|these|another|our|their)?\s*"
    r"(?:\w+ )?(?:pics?|photos?|pictures?|images?|shots?|snaps?|selfies?|screenshots?)\b|"
    r"^(?:there (?:is|are)|this is|it is|it's) an? (?:close ?up|photo|picture|image|view|screenshot|"
    r"painting|drawing)\b|"
    r"^(?:there (?:is|are) )?(?:an?|two|three|four|several|some|many|a group of|a couple of|a bunch of|"
    r"a pair of) (?:[a-z'-]+ ){1,4}(?:that (?:is|are) )?" + _POSTURE + r" (?:on|in|at|with|next|by|under|"
    r"over|near|in front|up|down|around|out|a|an|the|of|into|inside|outside|behind|along|across|against|"
    r"together|their|his|her|its)\b"
)
_PLATITUDE = re.compile(
    r"^(?:life|family|love|time|friendship|friends|happiness|health|music|nature|art|kindness|"
    r"hard work|practice|patience|change|laughter|food|travel|home|money|everything|everyone|nothing|"
    r"nobody|people|things|the best things|good things|every day|each day|the world)"
    r"(?:'s| is| are| can be| will| makes?| means?| matters?| heals?| flies| goes| comes| happens?|"
    r"helps?| never| always| really| truly| sure| totally| definitely| should| has| have| do| does|"
    r"'re)\b.*$|"
    r"^(?:everything happens for a reason|you only live once|yolo|time flies|better late than never|"
    r"practice makes perfect|no pain,? no gain|it is what it is|it's what it is|such is life|c'est la vie|"
    r"that's life|that's how it goes|one day at a time|live and learn|you never know|who knows|"
    r"all good|all is well|so it goes|good things take time|easier said than done)\b"
)
_PERSONAL = frozenset({"they", "them", "their", "theirs", "themself", "themselves", "i", "me", "my", "mine",
                       "myself", "we", "us", "our", "ours", "he", "she", "his", "her"})  # fmt: skip


def _normalise(value: str) -> str:
    return strip_emoji(value.replace("\u2019", "'").replace("\u2018", "'"))


def _content(tokens: list[str]) -> list[str]:
    """Tokens that carry meaning: not a function word, pronoun, evaluation or light verb."""
    out = []
    for t in tokens:
        bare = t.removesuffix("'s").removesuffix("'re").removesuffix("'m")
        if any(ch.isdigit() for ch in t):
            out.append(t)
        elif bare in STOPWORDS or bare in _PRONOUNS or bare in _EVALUATIVE or bare in _LIGHT:
            continue
        elif t in STOPWORDS or t in _LIGHT or t in _PRONOUNS:
            continue
        else:
            out.append(t)
    return out


# The "vague" class: a value whose every content word is one of these says something happened or was
# felt without saying what ("Tried something new", "Got big news", "Felt inspired"). Word classes, each
# listed with its inflections so that a word outside them (a noun naming a thing, an activity, a place)
# keeps the value a fact. Deliberately absent: "old", "short", "lonely", "busy", "optimistic" (a state or
# trait of the person), "moved", "back", "place", "life", "work" (each can name something on its own).
_GENERIC_NOUNS = frozenset(
    """
news something anything everything nothing someone somebody anyone anybody everyone everybody stuff
somewhere anywhere everywhere whatever experience experiences journey journeys aspect aspects effect effects
impact moment moments time times way ways lot lots bit part parts kind sort type situation situations deal
matter matters feeling feelings emotion emotions vibe vibes day days week weeks weekend weekends change
changes progress update updates memories memory adventure adventures opportunity opportunities challenge
challenges goal goals blast step steps future idea ideas story stories project projects passion passions
difference struggle struggles spot spots pic photo picture tour
setback setbacks issue issues year years month months dream dreams
""".split()
)
_GENERIC_VERBS = frozenset(
    """
tackle tackles tackled tackling try tries tried trying handle handles handled handling deal deals dealt
dealing face faces faced facing experienced experiencing receive receives received receiving happen happens
happened happening take takes took taken taking give gives gave given giving find finds found finding
share shares shared sharing learn learns learned learnt learning start starts started starting begin
begins began begun beginning discover discovers discovered discovering achieve achieves achieved achieving
accomplish accomplished accomplishing manage manages managed managing discuss discusses discussed
discussing talk talks talked talking plan plans planned planning want wants wanted wanting need needs
needed needing keep keeps kept keeping done decide decides decided deciding looking
remember remembers remembered remembering remind reminds reminded reminding struggled struggling
go goes went going gone
chase chases chased chasing push pushes pushed pushing stay stays stayed staying believe believes believed
believing
""".split()
)
# Reactions that need an object to say anything: "Felt inspired" (by what?), unlike "Feels old".
_REACTIONS = frozenset(
    """
belong belongs belonged belonging inspired motivated encouraged supported accepted understood valued
welcomed appreciated connected fulfilled energized energised refreshed rejuvenated recharged touched
grateful thankful amazed impressed surprised hopeful
""".split()
)
_VAGUE_MODIFIERS = frozenset(
    """
new various different certain whole real big huge small entire important long hectic
eventful productive memorable unforgettable meaningful rewarding challenging difficult stressful intense
latest recent next last again finally already often sometimes together deeply forward several twice
yet towards toward comforting ago positive
""".split()
)
_VAGUE = _GENERIC_NOUNS | _GENERIC_VERBS | _REACTIONS | _VAGUE_MODIFIERS
# a date note holds a year: "(May 2023)", "(week before 6 July 2023)"; "(USER 2)" is not one
_DATE_NOTE = re.compile(r"\s*\((?=[^)]*\b(?:1[89]|2[01])\d\d\b)[^)]*\)")


def _vague(text: str) -> bool:
    """True when ``text``, its dates in parentheses (those holding a year) set aside, has no name, no
    number, and only generic content words ("Tried something new (May 2023)", "Felt inspired")."""
    said = _DATE_NOTE.sub(" ", text)
    if any(ch.isdigit() for ch in said):
        return False
    raw = words(said)
    if any(w[:1].isupper() and fold(w) not in _PRONOUNS and w != "I" for w in raw[1:]):
        return False
    content = _content([fold(w) for w in raw])
    return all(t in _VAGUE for t in content)


_EAGER = frozenset(
    "excite excites exciting thrill thrills passionate ready eager nervous stoked tempt tempted forward "
    "help helps helped helping".split()
)
_SOFT = _VAGUE | _EVALUATIVE | _LIGHT | _EAGER


def substance(text: str) -> int:
    """How many of ``text``'s content words name something (its date notes set aside): words that are
    not generic, evaluative or light ("Is excited to be involved" 1, "Organized a toy drive for kids"
    3). Of two clauses that name no date, number or name, the one with less goes first when a leaf is
    full (``memory.engine.clauses``)."""
    content = _content([fold(w) for w in words(_DATE_NOTE.sub(" ", text))])
    return sum(1 for t in content if t not in _SOFT)


_COPULA = frozenset({"is", "was", "are", "were"})
_POINTING = frozenset({"their", "the", "this", "that", "these", "those", "it"})
_DEGREE = frozenset({"a", "an", "the", "one", "such", "so", "really", "very", "truly", "super", "pretty", "quite",
                     "just", "absolutely", "totally", "of", "their", "most", "and", "for", "them"})  # fmt: skip


def _judged_thing(tokens: list[str]) -> bool:
    """Is the value a thing of theirs judged, and nothing else ("Their bookshelf is an amazing
    journey", "Their pottery project was a great experience", "Their family is awesome")? After a
    subject that points at a thing ("their", "the", "this"...), the copula's complement holds only
    evaluative words, generic nouns and small words. "Their favorite food is pizza", "Their job is
    stressful" and "Music is their passion" name something."""
    at = next((i for i, t in enumerate(tokens) if t in _COPULA), None)
    if not at or tokens[0] not in _POINTING:  # "Is ...": the person; "Music is their passion": named
        return False
    rest = [t for t in tokens[at + 1 :] if t not in _DEGREE]
    return bool(rest) and all(t in _EVALUATIVE or t in _GENERIC_NOUNS for t in rest)


_VOCATIVE_HEAD = re.compile(r"^(?:[A-Za-z]+[,!]?\s+)?([A-Z][a-z]+)[,!]\s+(?=\S)")
_VOCATIVE_TAIL = re.compile(r"(?<=\S)[,!]\s*([A-Z][a-z]+)[.!]*$")


def _is_word(token: str) -> bool:
    """A chat word rather than a name ("Thanks", "Wow", "Great")."""
    low = fold(token)
    return (
        low in STOPWORDS or low in _EVALUATIVE or low in _LIGHT or low in _PRONOUNS or bool(_LEAD.match(low))
    )


def _without_vocatives(text: str) -> str:
    """``text`` without a leading or trailing name addressed to ("Wow Maria, ...", "..., Gina!")."""
    head = _VOCATIVE_HEAD.match(text)
    if head and not _is_word(head.group(1)):
        text = text[head.end() :]
    tail = _VOCATIVE_TAIL.search(text)
    if tail and not _is_word(tail.group(1)):
        text = text[: tail.start()]
    return text.strip()


def small_talk_reason(value: str) -> str | None:
    """Why ``value`` is small talk (one of the reasons in the module docstring), or None."""
    text = _normalise(value)
    if not text:
        return None
    core = _without_vocatives(text)
    if core and core != text:  # "Wow Maria, that's awesome!", "Nice work, Maria": judge what is said
        return small_talk_reason(core)
    if len(words(text)) == 1 and text[:1].isupper() and not text.isupper():  # "Maria", "Caroline!"
        single = fold(words(text)[0])
        if single in STOPWORDS or single in _EVALUATIVE or single in _LIGHT or single in _PRONOUNS:
            pass
        elif _BACKCHANNEL.search(single) or _GREETING.match(single) or _THANKS.match(single):
            pass
        else:
            return None
    raw_words = words(text)
    if not raw_words:
        return "no content"
    names = _names(text)
    digits = any(ch.isdigit() for ch in text)
    low = fold(_PARENS.sub(" ", text) if not digits else text).strip()
    low = low.strip(" .!,;:-~*\"'")
    if text.rstrip(" .!~*\"')").endswith("?"):
        return "question"
    low = _LEAD.sub("", low).strip(" .!,;:-~") or low
    if _QUESTION.search(low):
        return "question"
    if _CAPTION.search(low):
        return "caption"
    bare = low
    for name in names:  # "Hi Mel!", "Thanks, Jon": a vocative does not make a greeting a fact
        bare = re.sub(rf"[\s,]*\b{re.escape(fold(name))}\b", "", bare)
    bare = bare.strip(" .!,;:-~")
    if not bare and _LEAD.match(fold(text)):  # "Hi Mel!", "Hey Nate": a greeting and a name
        return "greeting"
    bare = bare or low
    if _GREETING.match(bare):
        return "greeting"
    if _THANKS.match(bare):
        return "thanks"
    if _BACKCHANNEL.search(bare):
        return "backchannel"
    if _ADDRESSED.search(bare):
        return "addressed"
    if _COMPLIMENT.match(low) and not names:
        return "compliment"
    tokens = [fold(w) for w in words(low)]
    personal = {t.split("'")[0] for t in tokens} & _PERSONAL
    if tokens and not digits and not names and not personal and _PLATITUDE.match(low):
        return "platitude"
    if not _content(tokens) and not names:
        return "no content"
    if _vague(text) or _judged_thing(tokens):
        return "vague"
    # "Was nervous (week before 22 August 2022)": a mood, whenever it was ("Felt sick (5 May 2023)"
    # may be the body's news)
    said = _DATE_NOTE.sub(" ", text) if low.startswith(("was ", "were ")) else text
    if not any(ch.isdigit() for ch in said) and not _names(said) and _PASSED_FEELING.match(low):
        return "feeling"
    if not digits and _LEAVING.match(low):
        return "leaving"
    return None


# How a moment felt: the words both feeling tests share.
_MOODS = "excited|thrilled|stoked|happy|glad|nervous|proud|over the moon"


def _names(text: str) -> list[str]:
    """The capitalised words after the first ("Hi Mel", "Loves Paris"), not "I" or a pronoun."""
    return [w for w in words(text)[1:] if w[:1].isupper() and fold(w) not in _PRONOUNS and w != "I"]


_PASSED_FEELING = re.compile(
    rf"^(?:felt(?! \w+ by\b)|(?:was|were) (?:so |really |very |super |totally |just )?(?:{_MOODS}|relieved|amazed|"
    r"moved|touched|overwhelmed|blown away|in awe))\b"
)
_FEELING = re.compile(
    rf"^(?:feels|felt|is feeling|was feeling|(?:is|was|are|were) (?:\w+ )?(?:{_MOODS}|grateful|thankful|tempted|"
    r"eager|ready|looking forward)|can't wait|hopes)\b",
    re.IGNORECASE,
)


_LEAVING = re.compile(
    r"^(?:(?:is|are|am|i'm|we're|they're) )?(?:just |now )?(?:off|heading (?:out|off)) to "
    r"(?:bed|go|get|grab|bake|cook|make|have|see|meet|watch|play|do|pick|take|buy|walk|hit|catch|start|"
    r"finish|prep|clean|sleep|work on|try)\b"
)


def says_a_feeling(clause: str) -> bool:
    """Does ``clause`` report a feeling, past or present ("Feels at peace on a comfy couch", "Is so
    excited about the trip", "Can't wait ...")? Of the clauses without a date, number or name, these
    go first when a leaf is full (``memory.engine.clauses``); only one that has passed and names
    nothing is refused outright (:func:`small_talk_reason`, ``feeling``)."""
    return _FEELING.match(clause) is not None


def is_small_talk(value: str) -> bool:
    """True when ``value`` has no lasting content (see :func:`small_talk_reason`)."""
    return small_talk_reason(value) is not None
