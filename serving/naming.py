"""What a clause's words name, read from a spaCy parse of one turn: whose a noun is (the speaker's,
the other speaker's, someone else's), the speaker's noun phrase a pronoun stands for, when an "it"
names no thing (the clause after it, or the situation just told and how it was), and the
pronouns a clause leaves unnamed. :mod:`serving.syntax` asks these questions of each clause.

A turn is read joined after the other speaker's turn before it, each parsed alone
(:data:`SPEAKER_FROM` marks where the speaker's own words start): there "your X" is the
speaker's. The speaker's own turn before that comes first when there is one (:data:`OTHER_FROM`
marks where the other speaker's words start).
"""

from __future__ import annotations

import re

from memory.engine.text import QUOTATION

SPEAKER = frozenset({"i", "we"})
SPEAKER_POSS = frozenset({"my", "our"})
ADDRESSEE = frozenset({"you", "your", "yours", "u", "ya", "ur"})
PRONOUNS = frozenset({"he", "she", "they", "it"})
QUANTIFIERS = frozenset(
    {"one", "some", "all", "both", "most", "many", "each", "few", "several", "two", "none"}
)
# Nouns for a person or an animal someone has: what "he"/"she" can name.
_PETS = frozenset("dog cat pet puppy kitten pup horse bird parrot hamster rabbit bunny turtle snake".split())
# Family and pets: someone whose things are the speaker's to tell ("my son's name is Kyle").
_HOUSEHOLD = _PETS | frozenset(
    """
mom mother mum dad father parent brother sister son daughter kid child baby husband wife partner
boyfriend girlfriend fiance fiancee spouse grandma grandmother grandpa grandfather aunt uncle cousin
niece nephew
""".split()
)
_ANIMATE = _HOUSEHOLD | frozenset(
    """
friend buddy bestie boss manager coworker colleague teammate coach mentor teacher
neighbor neighbour roommate student client guy girl boy man woman lady
""".split()
)
# A group said in the singular and named "they" after ("My family has been there for me. They've been my rock").
_COLLECTIVE = frozenset("family fam team crew gang group band squad club".split())
SPEAKER_FROM = "speaker_from"  # doc.user_data key: where the speaker's own turn starts
OTHER_FROM = (
    "other_from"  # doc.user_data key: where the other speaker's turn starts (after the speaker's before it)
)
#: Nouns that name no thing ("had fun", "had a blast", "had a great time"): never what a pronoun
#: stands for, never what makes a clause concrete.
EMPTY_NOUNS = frozenset("fun blast time day experience chance idea way lot thing stuff moment part".split())


def speakers(token) -> bool:
    """Is ``token`` in the speaker's turn or their turn before (not in the other speaker's turn
    between them)?"""
    data = token.doc.user_data
    return token.idx >= data.get(SPEAKER_FROM, 0) or token.idx < data.get(OTHER_FROM, 0)


def other_turn(doc):
    """The other speaker's turn the speaker's turn was read after (an empty span when it was read
    alone)."""
    data = doc.user_data
    first = next((t.i for t in doc if t.idx >= data.get(OTHER_FROM, 0)), len(doc))
    last = next((t.i for t in doc if t.idx >= data.get(SPEAKER_FROM, 0)), len(doc))
    return doc[first:last]


def possessive_of(token):
    return next((c for c in token.children if c.dep_ == "poss"), None)


def owner_of(token) -> str:
    """ "speaker" / "addressee" / "other" / "" for a noun's possessive. A family member or pet
    passes on their owner for a thing of theirs: "my son's name" is the speaker's; "my friend's dog"
    and "my sister's husband" (someone else, filed nowhere of the speaker's) are not."""
    poss = possessive_of(token)
    if poss is None:
        return ""
    if poss.pos_ == "NOUN" and poss.lemma_.lower() in _HOUSEHOLD and not animate(token):
        return owner_of(poss) or "other"
    low = poss.lower_
    mine, yours = ("speaker", "addressee") if speakers(token) else ("other", "speaker")
    if low in SPEAKER_POSS:
        return mine
    if low in ADDRESSEE:
        return yours
    return "other"


def _owned_nouns(span) -> dict[str, object]:
    """Lemma -> token of every noun of ``span`` the speaker called theirs; a name standing beside
    such a noun ("my cat Luna", "my sister, Ana") counts too, keyed by its text."""
    out: dict[str, object] = {}
    for token in span:
        if token.pos_ not in ("NOUN", "PROPN") or owner_of(token) != "speaker":
            continue
        out[token.lemma_.lower()] = token
        name = name_beside(token)
        if name is not None:
            out[name.lower_] = token
        if token.dep_ == "compound" and token.head.pos_ == "PROPN":  # "my cat Luna" parsed the other way
            out[token.head.lower_] = token
    return out


def name_beside(token):
    """The name given to a noun right after it: "my cat Luna", "my sister, Ana" (however parsed)."""
    doc = token.doc
    at = token.i + 1
    if at < len(doc) and doc[at].text == ",":
        at += 1
    if at < len(doc) and doc[at].pos_ == "PROPN" and doc[at].ent_type_ not in ("GPE", "LOC", "ORG", "DATE"):
        return doc[at]
    return None


def _title_of(token) -> str | None:
    """The quoted title ``token`` is a word of ("The Name of the Rose"), quotes and all; None if none."""
    for m in QUOTATION.finditer(token.sent.text):
        if m.start() <= token.idx - token.sent.start_char < m.end():
            return m.group(0)
    return None


def _phrase(token, *, det: str = "") -> str:
    """The noun phrase of an owned noun: its possessive, modifiers, the noun and a name beside it,
    said as the speaker would ("your turtles" in the other speaker's turn is "my turtles"); with
    ``det`` its article too, said as ``det`` ("the upside-down poses", "our cat"). A quoted title
    the noun is a word of is named whole ("The Name of the Rose", not "The Name")."""
    title = _title_of(token)
    if title is not None:
        return title
    deps = ("poss", "amod", "compound", "nummod", "det") if det else ("poss", "amod", "compound", "nummod")
    parts = [c for c in token.children if c.dep_ in deps and c.i < token.i]
    first = min([c.left_edge.i for c in parts if c.dep_ != "poss"] + [p.i for p in parts] + [token.i])
    name = name_beside(token)
    words = [t for t in token.doc[first : token.i + 1] if not t.is_punct or t.text == "-"]
    mine = {"your": "my", "yours": "mine", "ur": "my"}  # said by the other speaker
    said = [
        det if t.dep_ == "det" and t.lower_ in ("a", "an", "the")
        else mine.get(t.lower_, t.text) if t.dep_ == "poss" and not speakers(t) else t.text
        for t in words
    ]  # fmt: skip
    text = "".join(w + (t.whitespace_ if t.i < token.i else "") for w, t in zip(said, words, strict=True))
    return f"{text} {name.text}" if name is not None else text


def _speaker_subject(verb) -> bool:
    """Is ``verb`` done by the speaker: its subject is I/we (you, in the other speaker's turn), or it
    has none as the first verb of a chat statement ("Checked out the library")?"""
    for _ in range(4):
        subject = next((c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        if subject is not None:
            return subject.lower_ in (SPEAKER if speakers(subject) else ADDRESSEE)
        if verb.dep_ != "conj" or verb.head.i == verb.i:
            elided = verb.dep_ == "ROOT" and verb.pos_ == "VERB" and verb.tag_ in ("VBD", "VBN")
            return elided and speakers(verb)
        verb = verb.head
    return False


def _speakers_object(token) -> bool:
    """Is ``token`` the direct object of something the speaker did ("I love this series")? Not in a
    clause said by the way ("They support me even when I make mistakes. Their ...")."""
    while token.dep_ == "conj" and token.head.i != token.i:
        token = token.head
    verb = token.head
    return (
        token.dep_ == "dobj"
        and verb.pos_ in ("VERB", "AUX")
        and verb.dep_ != "advcl"
        and _speaker_subject(verb)
    )


def animate(token) -> bool:
    """Does ``token`` name a person or an animal ("my sister", "Luna", "the dog")?"""
    return token.lemma_.lower() in _ANIMATE or token.pos_ == "PROPN" or token.ent_type_ == "PERSON"


def _agrees(pronoun: str, token) -> bool:
    plural = token.tag_ in ("NNS", "NNPS")
    animate_ = animate(token)
    if pronoun == "they":
        return plural or token.lemma_.lower() in _COLLECTIVE
    if pronoun == "it":
        return not plural and not animate_
    return not plural and animate_


def _buried(token) -> bool:
    """Is ``token`` more than three arcs below its sentence's root ("from my normal circle" in
    "I met people who weren't from my normal circle", "our area" in "hearing how it affects our
    area")? Such a noun, the nearest only by position, is no antecedent of the next sentence's "it";
    "my grandma's cabin" in "We spent a week at my grandma's cabin" (two arcs) is."""
    depth = 0
    while token.head.i != token.i and depth <= 3:
        token, depth = token.head, depth + 1
    return depth > 3


def antecedent_of(doc, subject, pronoun: str = "") -> str:
    """The speaker's noun phrase a pronoun subject (or ``pronoun``, an object) names, or "" (see
    the module doc). The speaker's own turn before the other's is searched only when nothing
    nearer could be named ("I finished my screenplay!" - "What's it about?" - "It's a romance")."""
    pronoun = pronoun or subject.lower_
    other = other_turn(doc)
    own = _told_since(doc[other.end : subject.sent.start], pronoun)
    start = other.end if own else other.start
    found = _antecedent_in(doc[start : subject.i], subject, pronoun)
    if found is None and other.start and not own and _says_something(subject.head):
        found = _antecedent_in(doc[: other.start], subject, pronoun)
    return found or ""


def _told_since(said, pronoun: str) -> bool:
    """Has the speaker, in ``said`` (their sentences before the pronoun's), told something of their
    own with a thing the pronoun could name? Then the pronoun does not reach back past it into the
    other speaker's turn: "Your commitment really stands out!" - "I got the idea from a fashion mag.
    ... It's all about being ahead of the game" is not about the commitment. A first sentence with
    no subject ("Tough question! It's Dune"), or with the same pronoun ("What's that trophy?" - "It
    commemorates my journey. It's a symbol of ..."), leaves the question's noun in reach."""
    return any(t.dep_ in ("nsubj", "nsubjpass") and t.lower_ not in PRONOUNS for t in said) and any(
        t.pos_ in ("NOUN", "PROPN") and t.dep_ not in ("npadvmod", "attr") and _agrees(pronoun, t)
        for t in said
    )  # a noun said of the subject ("Our kids are our future") is no new thing to name


#: What a thing is a kind of: "It's a kind of heavy metal" defines the thing, it tells nothing of the speaker.
_KIND_NOUNS = frozenset("kind type sort genre form style".split())


def _says_something(verb) -> bool:
    """Does ``verb`` say something of its subject: it has an object or a complement ("They eat
    insects", "She had to leave"), not an ellipsis ("It is sometimes", "They are!") or a definition
    ("It's a kind of heavy metal")?"""
    said = [c for c in verb.children if c.dep_ in ("attr", "acomp", "dobj", "xcomp", "ccomp", "prep", "oprd")]
    return bool(said) and not any(c.dep_ == "attr" and c.lemma_.lower() in _KIND_NOUNS for c in said)


def _antecedent_in(span, subject, pronoun: str) -> str | None:
    """:func:`antecedent_of` over the tokens of ``span`` (before ``subject``): None when no noun there
    agrees with the pronoun, "" when one does but names nothing of the speaker's."""
    owned = _owned_nouns(span)
    # a time said by the way ("last week", "every day") is no thing a pronoun names
    earlier = [
        t
        for t in reversed(span)
        if t.pos_ in ("NOUN", "PROPN") and t.dep_ != "npadvmod" and _agrees(pronoun, t)
    ]
    if not earlier:
        return None
    # an earlier subject first for a subject ("The kids ate. They ..."), an object for an object ("Our
    # city held a parade. I missed it")
    deps = ("dobj",) if subject.dep_ == "dobj" else ("nsubj", "nsubjpass")
    subjects = [t for t in earlier if t.dep_ in deps]
    for token in subjects[:1] or earlier[:1]:
        if token.lemma_.lower() in EMPTY_NOUNS:  # "What was your favourite part?" - "It was peaceful"
            break
        if pronoun == "it" and not subjects and _buried(token):  # "... from my circle. It was ..."
            break
        if token.dep_ in ("compound", "appos") and token.head.pos_ in ("NOUN", "PROPN"):
            token = token.head if token.head.i < subject.i else token
        owner = owned.get(token.lemma_.lower()) or owned.get(token.lower_)
        if owner is None and token.dep_ == "appos":
            owner = owned.get(token.head.lemma_.lower())
        if owner is not None:
            return _phrase(owner)
    # a thing the speaker just did something to: "I really enjoy the upside-down poses. They make
    # me feel free"; an animal they took in ("We adopted a cat! Her name is Pastel, she's ...");
    # not a person ("I met a guy. He ..."), who is not the speaker's to describe
    if (
        pronoun in ("it", "they")
        and earlier[0].pos_ == "NOUN"
        and earlier[0].lemma_.lower() not in EMPTY_NOUNS  # "You had fun! - It was a day at the park"
        and _speakers_object(earlier[0])
    ):
        return _phrase(earlier[0], det="the")
    if pronoun in ("he", "she"):
        pet = next((t for t in earlier if t.pos_ == "NOUN"), None)
        if pet is not None and pet.lemma_.lower() in _PETS and _speakers_object(pet):
            doer = next((c.lower_ for c in pet.head.children if c.dep_ == "nsubj"), "")
            return _phrase(pet, det="our" if doer == "we" else "my")  # the speaker's own now
    return ""


#: Lengths of time: what "it took me" is said of ("two weeks", "a while", "forever").
_SPANS = frozenset("second minute hour day week weekend month year while forever ages age".split())

#: What "it was a tough challenge" calls the situation just told, not a thing named before it.
_SITUATION_NOUNS = frozenset(
    "fun blast time day experience chance moment challenge struggle journey adventure process success "
    "lesson step relief surprise honor honour decision change milestone achievement opportunity feeling "
    "sense reminder blessing privilege pleasure thrill rush".split()
)


def _infinitive(token) -> bool:
    return any(c.dep_ == "aux" and c.lower_ == "to" for c in token.children)


def extraposed(main, pronoun: str) -> bool:
    """ "It's amazing what they can do", "It was great to see them", "It's important for me to
    rest", "It breaks my heart that ...", "It took me two weeks", "It was a tough challenge": an "it"
    standing for the clause after it or for the situation just told, or "It's been a while", for
    time gone by: not for a thing the speaker named."""
    if pronoun != "it":
        return False
    after = [c for c in main.children if c.i > main.i]
    if any(
        c.dep_ == "ccomp" and any(m.dep_ == "mark" and m.lower_ == "that" for m in c.children) for c in after
    ):
        return True  # "It breaks my heart that our kids ...": the "that" clause is what "it" is
    if main.lemma_ == "take" and any(
        c.lemma_.lower() in _SPANS for c in after if c.dep_ in ("dobj", "npadvmod")
    ):
        return True  # "It took me two weeks": how long the doing took, not a thing
    if main.lemma_ == "be" and any(
        c.dep_ in ("attr", "npadvmod") and c.lemma_.lower() in _SPANS and possessive_of(c) is None
        for c in after
    ):
        return True  # "It's been a minute", "It's been ages": time gone by, not a thing
    # an adjective the parser calls an adverb is still what "it" is: "It's been awesome seeing ..."
    complements = [c for c in after if c.dep_ in ("acomp", "attr") or (c.dep_ == "advmod" and c.tag_ == "JJ")]
    if any(
        c.dep_ == "attr" and c.lemma_.lower() in _SITUATION_NOUNS and possessive_of(c) is None
        for c in complements
    ):
        return True  # not "It was my way of ...", "It's a big part of my life": a thing named
    clauses = after + [g for c in complements for g in c.children if g.i > c.i]
    if main.tag_ == "VBG" and any(c.dep_ == "aux" and c.lemma_ == "be" for c in main.children):
        complements.append(main)  # "It's empowering to know ...": the participle is what "it" is
    return bool(complements) and any(
        c.dep_ in ("ccomp", "xcomp", "csubj")
        or (c.dep_ in ("advcl", "dep") and (_infinitive(c) or c.tag_ == "VBG"))
        for c in clauses  # "It was great to see them", "It's been awesome seeing everyone"
    )


def only_judged(main) -> bool:
    """ "It was both stressful and great", "It's been super positive": a past or perfect "be" with
    nothing but how it was (no noun, no place, no time, no "to ..."): the speaker's judgement of
    what was just told, not a fact of theirs. "It is fast" (a new bike) says how a thing of theirs
    is."""
    perfect = main.tag_ == "VBN" and any(  # "'s been": the parser may call the "'s" a passive "is"
        c.dep_ in ("aux", "auxpass") and (c.lemma_ == "have" or c.lower_ in ("'s", "'ve"))
        for c in main.children
    )
    if main.lemma_ != "be" or not (main.tag_ == "VBD" or perfect):
        return False
    after = [c for c in main.children if c.i > main.i and c.dep_ not in ("punct", "cc", "advmod")]
    return bool(after) and all(
        c.dep_ == "acomp"
        and (
            _WORTH_IT.fullmatch(" ".join(t.lower_ for t in c.subtree if t.dep_ != "advmod"))
            or not any(g.dep_ in ("prep", "xcomp", "ccomp", "npadvmod") for g in c.children)
        )
        for c in after
    )


_WORTH_IT = re.compile(r"worth (?:it|the \w+)")  # "It was so worth it": how it was, too


def quantified(token):
    """What a quantifier counts: "one of my friends" is read as "my friends"; else ``token``."""
    if token.lower_ not in QUANTIFIERS:
        return token
    of = next((c for c in token.children if c.dep_ == "prep" and c.lower_ == "of"), None)
    return next((c for c in of.children if c.dep_ == "pobj"), token) if of is not None else token


def noun_kind(subject, doc) -> str:
    subject = quantified(subject)
    owner = owner_of(subject)
    if owner == "speaker":
        return "owned"
    if owner:
        return owner
    owned = _owned_nouns(doc[: subject.i])
    if subject.pos_ == "PROPN":
        return "owned" if subject.lower_ in owned else "other"
    determiner = next((c.lower_ for c in subject.children if c.dep_ == "det"), "")
    if determiner == "the" and subject.lemma_.lower() in owned:
        return "owned"
    return "generic"


OBJECT_PRONOUNS = {
    "it": "it",
    "them": "they",
    "him": "he",
    "her": "she",
    "this": "",
    "that": "",
    "these": "",
    "those": "",
}
_REPORTED_PRONOUNS = frozenset({"it", "they", "he", "she", "him", "her", "them", "this", "that"})


_REPORTED_DEPS = frozenset({"ccomp", "xcomp", "advcl"})
_ARRIVED = frozenset({"to", "through", "into", "past", "across", "out", "home", "back", "here", "there"})


_TIME_PREPS = frozenset({"after", "before", "since", "besides", "despite"})  # "after that": when, not what


def pronouns_named(tokens, main) -> list:
    """The pronouns of a clause that stand for something it does not say: an object ("Made it in
    pottery class", "helping her move"), or the subject of a clause it reports ("I think it's
    great"); not a relative pronoun, "made it to the finals" or "after that"."""
    out = []
    for t in tokens:
        if _another_one(t):  # "Started writing another one", "sold the old one"
            out.append(t)
            continue
        if t.lower_ in ("mine", "ours") and t.dep_ == "dobj":  # "I'll bring mine": the speaker's what?
            out.append(t)
            continue
        if t.lower_ not in OBJECT_PRONOUNS and t.lower_ not in _REPORTED_PRONOUNS:
            continue
        if t.tag_ == "PRP$" or t.head.dep_ == "relcl" or t.dep_ == "det":
            continue
        # "talked to my mom about it": the chat's topic; "a better cook because of it": a cause told before
        back = t.dep_ == "pobj" and (
            t.head.lower_ in ("about", "because")
            or (t.head.lower_ == "to" and t.head.head.lower_ in ("thanks", "due"))
        )
        if not back and any(u.i < t.i and _may_name(t.lower_, u) and not _circumstance(u, t) for u in tokens):
            continue  # named in the clause itself: "helping the community and making it better"
        head = t.head
        if t.dep_ in ("dobj", "dative", "pobj") and t.lower_ in OBJECT_PRONOUNS:
            if t.dep_ == "pobj" and head.lower_ in _TIME_PREPS:
                continue
            if head.lemma_ == "make" and any(c.i > t.i and c.lower_ in _ARRIVED for c in head.children):
                continue  # "made it to the finals", "made it home"
            out.append(t)
        elif t.dep_ in ("nsubj", "nsubjpass") and t.lower_ in _REPORTED_PRONOUNS and head.i > main.i:
            if head.dep_ in _REPORTED_DEPS and not extraposed(head, t.lower_):
                out.append(t)
    return out


def _up_to_verb(token) -> list:
    """``token`` and its heads up to the verb it hangs off, through prepositions and the nouns they
    modify (up to the root if none)."""
    path = [token]
    while token.head.i != token.i and token.pos_ not in ("VERB", "AUX"):
        token = token.head
        path.append(token)
    return path


def _circumstance(noun, pronoun) -> bool:
    """Is ``noun`` in a phrase of place, time or purpose of the verb ``pronoun`` hangs off ("Last
    Friday at dance class I felt it", "Went to school for it")? That verb's "it" is not it;
    "helping the community and making it better" names it."""
    path = _up_to_verb(noun)
    adjunct = any(t.dep_ in ("prep", "npadvmod") for t in path[:-1])
    return adjunct and path[-1].i == _up_to_verb(pronoun)[-1].i


def _another_one(token) -> bool:
    """ "one" standing for a noun said before: "another one", "the first one", "a new one" (not
    "one of my friends", "one day", "the one thing")."""
    if token.lower_ not in ("one", "ones") or token.dep_ not in (
        "dobj",
        "pobj",
        "nsubj",
        "nsubjpass",
        "attr",
    ):
        return False
    kids = {c.dep_ for c in token.children}
    return "prep" not in kids and bool(kids & {"det", "amod"})


def _may_name(pronoun: str, token) -> bool:
    """Can ``token``, a word before ``pronoun`` in the same clause, be what it names?"""
    if token.pos_ not in ("NOUN", "PROPN"):
        return False
    kind = OBJECT_PRONOUNS.get(pronoun) or (pronoun if pronoun in PRONOUNS else "")
    if kind == "it":  # "reading "The Lean Startup" and hoping it'll ...": a title is a thing
        return (
            token.tag_ in ("NN", "NNP")
            and token.ent_type_ != "PERSON"
            and token.lemma_.lower() not in _ANIMATE
        )
    return bool(kind) and _agrees(kind, token)
