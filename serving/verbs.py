"""What a clause's main verb says, read from its parse (:mod:`serving.syntax` asks it of each
clause): whether it is finite (a tense of its own, or shared with the verb it is joined to), its
modal or "maybe", an inverted ellipsis ("So do I"), and the present verbs joined to it that the
rewrite puts in the third person with it ("I play the piano and sing")."""

from __future__ import annotations

import re

from serving.wording import SUBJECT_DEPS

FINITE_TAGS = frozenset({"VBD", "VBZ", "VBP", "MD"})


def is_finite(main, inside: set[int] | None = None) -> bool:
    """Has the clause's main verb a tense: its own, an auxiliary's (one of the clause's words
    ``inside``, when given: "We love being outdoors - going for hikes" may be parsed with "being" as
    the auxiliary of "going"), or the verb it is joined to."""
    if main.tag_ in FINITE_TAGS or "Fin" in main.morph.get("VerbForm"):
        return True
    auxes = [c for c in main.children if c.dep_ in ("aux", "auxpass") and (inside is None or c.i in inside)]
    if any(a.tag_ in FINITE_TAGS or "Fin" in a.morph.get("VerbForm") for a in auxes):
        return True
    if main.tag_ in ("VBG", "VBN") and auxes:  # "Been rehearsing hard": "I've" left off
        return True
    if main.tag_ == "VBN" and main.dep_ == "ROOT":  # "Signed up for a course": read as past
        return True
    if main.dep_ == "conj" and main.head.pos_ in ("VERB", "AUX") and main.head.i != main.i:
        return is_finite(main.head)  # "I love it, but hate the cold": "hate" shares "love"'s tense
    return main.dep_ == "ROOT" and past_form(main)


def past_form(token) -> bool:
    """ "Took this pic" is tagged as a bare verb (lemma "took"); its form says past."""
    if token.tag_ != "VB":
        return False
    from lemminflect import getLemma

    lemmas = getLemma(token.lower_, upos="VERB")
    return bool(lemmas) and token.lower_ not in lemmas


_ELLIPTIC_AUX = frozenset("do does did am is are was were have has had can could will would".split())


def inverted_ellipsis(tokens) -> bool:
    """An inverted ellipsis ("So do I", "Neither can my sister", "so does having people around"):
    "so"/"neither"/"nor" and an auxiliary before the subject repeat what was said before; the clause
    holds no fact alone."""
    return (
        len(tokens) > 2 and tokens[0].lower_ in ("so", "neither", "nor") and tokens[1].lower_ in _ELLIPTIC_AUX
    )


def modal_of(main) -> str:
    if re.match(r"rec+om+end|suggest|advi[sc]e", main.lower_):
        return "recommend"  # "I'd recommend finding a series": advice to the other speaker
    for child in main.children:
        if child.dep_ == "aux" and child.tag_ == "MD":
            return {"ca": "can", "wo": "will", "sha": "shall"}.get(child.lower_, child.lower_)
    if main.lower_ == "got" and any(  # "Gotta focus on success": "got" + "ta" + the verb
        c.dep_ == "xcomp" and any(a.lower_ == "ta" for a in c.children) for c in main.children
    ):
        return "gotta"
    return ""


def maybe_of(main) -> str:
    """ "maybe" where a "Maybe I'll write a drama" says it instead of a modal."""
    return (
        "maybe" if any(c.dep_ == "advmod" and c.lower_ in ("maybe", "perhaps") for c in main.children) else ""
    )


# After a joined verb that can also be a noun, what makes it a verb: "and drive a truck", "and hope
# to ...", "and walk him", "and think about ..." ("I eat rice and fish with my mom": "fish" is a
# noun, whatever the parser says)
_OBJECT_OPENERS = frozenset(
    "a an the my our his her their your some this that these those to him them it me us about".split()
)
# Verbs taking a list of infinitives, however the parser hangs it: "I like to read, go hiking, ..."
_CATENATIVE = frozenset("like love enjoy prefer hate want need try plan hope wish get".split())


def joined_verbs(main, subject, inside: set[int]) -> tuple[str, ...]:
    """Present verbs joined to the main one of an I/we subject, without a subject or auxiliary of
    their own ("I play the piano and sing", "I'm an engineer and own a studio"): the rewrite says
    them in the third person with it ("Plays the piano and sings")."""
    from lemminflect import getAllLemmas  # not at the top: it imports spaCy (serving.spacy_pipeline)

    if main.tag_ != "VBP" or subject is None or subject.lower_ not in ("i", "we"):
        return ()
    after = main.doc[main.i + 1] if main.i + 1 < len(main.doc) else main
    if any(c.dep_ == "xcomp" for c in main.children) or (
        main.lemma_.lower() in _CATENATIVE and (after.lower_ == "to" or after.tag_ == "VBG")
    ):
        return ()  # "I like to play soccer, ride my bike": the list is of what is liked
    out, heads = [], {main.i}
    for verb in main.conjuncts:
        if (
            verb.i <= main.i
            or verb.i not in inside
            or verb.tag_ not in ("VB", "VBP")
            or verb.head.i not in heads
        ):
            continue  # "I hang out, or I read or write": "write" shares the second "I"
        if any(c.dep_ in SUBJECT_DEPS or c.dep_ in ("aux", "auxpass") for c in verb.children):
            continue
        after = verb.doc[verb.i + 1].lower_ if verb.i + 1 < len(verb.doc) else ""
        has_object = any(c.dep_ == "dobj" for c in verb.children)  # "play fetch": a verb, with its object
        if "NOUN" in getAllLemmas(verb.lower_) and after not in _OBJECT_OPENERS and not has_object:
            continue
        out.append(verb.text)
        heads.add(verb.i)
    return tuple(out) + _listed_verbs(main, inside)


def _listed_verbs(main, inside: set[int]) -> tuple[str, ...]:
    """Verbs the parse hung on the main verb's object list: in "We watch movies, hike, and have
    game nights" "have" is a conjunct of "hike", itself read as a second object. A bare listed word
    that can be a verb counts only when a real verb ends the list."""
    from lemminflect import getAllLemmas

    for obj in (c for c in main.children if c.dep_ == "dobj" and c.i in inside):
        chain = [t for t in obj.conjuncts if t.i > obj.i and t.i in inside]
        verbs = [t for t in chain if t.tag_ in ("VB", "VBP") and not any(
            c.dep_ in SUBJECT_DEPS or c.dep_ in ("aux", "auxpass") for c in t.children)]  # fmt: skip
        if not verbs:
            continue
        bare = [
            t for t in chain
            if t.i < verbs[-1].i and t.tag_ == "NN" and "VERB" in getAllLemmas(t.lower_)
            and not any(c.dep_ in ("det", "poss", "amod", "compound") for c in t.children)
        ]  # fmt: skip
        return tuple(t.text for t in sorted(bare + verbs, key=lambda t: t.i))
    return ()
