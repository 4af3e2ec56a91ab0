"""What a kept clause says plainly, read from its parse (:mod:`serving.syntax` asks it of each clause
whose subject it has read): a pointing "this tree" said as "a tree", a joined clause about something
else cut off ("... walks and it's made a big impact"), an object the verb took earlier in the turn
("I've been playing for four months" -> playing the violin), a "my favorite" of the kind the
other speaker asked about ("My favorite video game is ..."), the one pronoun a clause leaves unnamed
written out or the clause marked ``dangling``, and whether the verb does something to a thing it
names (``concrete``).
"""

from __future__ import annotations

from dataclasses import replace

from memory.engine.aboutness import ClauseSyntax
from serving.naming import (
    EMPTY_NOUNS,
    OBJECT_PRONOUNS,
    PRONOUNS,
    SPEAKER,
    antecedent_of,
    other_turn,
    owner_of,
    pronouns_named,
)

__all__ = ["REACTION_VERBS", "SUBJECT_DEPS", "VAGUE_NOUNS", "named"]

SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})
REACTION_VERBS = frozenset({"sound", "look", "seem", "feel"})
_STATE_VERBS = REACTION_VERBS | {"become", "stay", "remain"}
_THING_DEPS = frozenset({"dobj", "pobj", "attr", "conj", "oprd", "compound"})
VAGUE_NOUNS = EMPTY_NOUNS | frozenset(
    "feeling emotion life people everyone break joy happiness part kind sort bit best reminder "
    "rollercoaster journey mind heart".split()
)


def _tail(tokens, main):
    """(the first word, the text to its verb) of a clause joined to the main one with a subject of
    its own that is not the speaker ("... walks and it's made a big impact"), or None."""
    inside = {t.i for t in tokens}
    # a joined verb, or a second root where the parser ended a sentence at "and"
    joined = [*main.children, *(t for t in tokens if t.dep_ == "ROOT" and t.i > main.i)]
    for verb in joined:
        if verb.dep_ not in ("conj", "ROOT") or verb.pos_ not in ("VERB", "AUX") or verb.i not in inside:
            continue
        subject = next((c for c in verb.children if c.dep_ in SUBJECT_DEPS), None)
        if (
            subject is None
            or subject.lower_ in SPEAKER
            or subject.i < main.i
            or owner_of(subject) == "speaker"
        ):
            continue
        judged = subject.lower_ in ("it", "that", "this") and verb.lemma_ in _JUDGING
        if subject.lower_ in PRONOUNS and not judged and antecedent_of(subject.doc, subject):
            continue  # "We adopted a cat and she sleeps all day": still the speaker's to tell
        ccs = [
            c for c in (*main.children, *verb.children)
            if c.dep_ == "cc" and main.i < c.i < subject.i and c.i in inside
        ]  # fmt: skip
        start = ccs[-1] if ccs else subject
        return start, verb.doc.text[start.idx : verb.idx + len(verb.text)]
    return None


def _vocative_last(tokens):
    """The name the clause ends on when it is said to the other speaker ("... with my business,
    Jon."), not of a thing ("a new city, Boston"; "my brother, Jon"), as :func:`_tail` gives a cut."""
    last = tokens[-1] if tokens else None
    if (
        last is None
        or last.pos_ != "PROPN"
        or last.dep_ not in ("npadvmod", "intj")
        or last.i == 0
        or last.doc[last.i - 1].text != ","
    ):
        return None
    return last, last.text


#: What an "and it's ..." says of the thing just named: how it went, not another fact ("Is doing
#: kickboxing and it's giving them energy", "Tried a new recipe and it was a winner").
_JUDGING = frozenset("be give make help feel seem look sound".split())

_TIME_NOUNS = frozenset(
    "time moment day morning afternoon evening night week weekend month year season spring summer autumn "
    "fall winter semester term".split()
)
#: How long something went on: "playing for four months", "for a while", "for ages".
_SPANS = _TIME_NOUNS | frozenset("second minute hour while age decade".split())


def _swaps(tokens, main) -> tuple[tuple[str, str], ...]:
    """A pointing determiner said plainly, as chat uses it: "this tree" -> "a tree" (the photo it
    points at is not in the tree), "these poses" -> "poses", the subject's "my necklace"; not "this
    week" (a date)."""
    out = []
    for det in tokens:
        noun = det.head
        if det.dep_ != "det" or noun.pos_ != "NOUN" or noun.i < det.i:
            continue
        if noun.lemma_.lower() in _TIME_NOUNS or det.lower_ not in ("this", "that", "these", "those"):
            continue
        said = det.doc[det.i : noun.i + 1]
        rest = said[1:].text
        if noun.dep_ in SUBJECT_DEPS and noun.head.i == main.i:
            # the subject of a clause kept as the speaker's is theirs ("This necklace is special to
            # me" -> "My necklace ..."); "A necklace is special to me" would say less
            out.append((said.text, f"my {rest}"))
            continue
        if noun.dep_ == "npadvmod":
            out.append((said.text, ""))  # "That way I can ...": how, pointing back, goes
        elif det.lower_ in ("these", "those"):
            out.append((said.text, rest))
        elif said[1].lower_ in _DEFINITE_FIRST or any(c.dep_ == "relcl" for c in noun.children):
            out.append((said.text, f"the {rest}"))  # "this next tourney", "that stuff I baked"
        elif noun.lemma_.lower() in _MASS_NOUNS:
            out.append((said.text, f"some {rest}"))  # "this stuff", not "a stuff"
        else:
            out.append((said.text, ("an " if rest[:1].lower() in "aeiou" else "a ") + rest))
    return tuple(out)


_FAVOURITE = frozenset({"favorite", "favourite"})


def _favourite_asked(tokens) -> tuple[tuple[str, str], ...]:
    """ "My favorite is Call of Duty" after "What's your favorite video game?": favourite what is
    what the other speaker asked ("My favorite video game is ..."); a plural "favorites" or one
    asked about nothing is left as said."""
    for token in tokens:
        poss = next((c for c in token.children if c.dep_ == "poss" and c.lower_ == "my"), None)
        if token.lemma_.lower() in _FAVOURITE and token.tag_ in ("NN", "JJ") and poss is not None:
            asked = _favourite_kind(token.doc)
            return ((f"{poss.text} {token.text}", f"{poss.text} {token.text} {asked}"),) if asked else ()
    return ()


def _favourite_kind(doc) -> str:
    """The noun the other speaker's question put "favorite" before ("video game"), or ""."""
    asked = other_turn(doc)
    if not any(t.text == "?" for t in asked):
        return ""
    nouns = [
        t for t in asked
        if t.pos_ == "NOUN" and any(c.dep_ == "amod" and c.lemma_.lower() in _FAVOURITE for c in t.children)
    ]  # fmt: skip
    if not nouns:
        return ""
    noun = nouns[-1]
    # a name in it ("TV show") would be a name the user never said, and more than two words the
    # user never said would leave the fact ungrounded: the gate refuses both
    compounds = [c.text for c in noun.children if c.dep_ == "compound" and c.i < noun.i and c.text.islower()]
    return " ".join((*compounds[-1:], noun.lemma_.lower()))


#: After "this"/"that", a word that makes its noun one of a kind: "the next tourney", not "a next".
_DEFINITE_FIRST = frozenset(
    "next last same other first second third final only whole entire previous following".split()
)
_MASS_NOUNS = frozenset(
    "stuff food music art advice information equipment furniture gear merch news money water work".split()
)


def _concrete(tokens, main) -> bool:
    """Does the main verb do something to a thing the clause names ("I play clarinet", "Applied to
    adoption agencies"), or say what the subject is ("I'm a nurse")? A feeling ("I feel proud of my
    kids"), a state ("I'm grateful for my friends") or an empty noun ("I had a blast") is not."""
    if main.lemma_ in _STATE_VERBS:
        return False
    deps = ("attr",) if main.lemma_ == "be" else _THING_DEPS
    return any(
        t.pos_ in ("NOUN", "PROPN") and t.dep_ in deps and t.lemma_.lower() not in VAGUE_NOUNS
        and (main.lemma_ != "be" or t.head.i == main.i)
        for t in tokens
        if t.i > main.i
    )  # fmt: skip


_LIKING = frozenset("love like enjoy adore prefer hate dislike".split())
_YOU = frozenset({"you", "your", "yours", "u", "ur", "ya"})
_THEIRS = frozenset({"his", "her", "their", "its"})
_KNOWING = frozenset("know mean believe doubt guess bet feel promise say".split())
_EMPTY_VERBS = frozenset("be have do get see hear know think say keep make let".split())


#: Where a person stands in life, said with "I'm": short, and as lasting as a job.
_STATUS = frozenset(
    "retired married engaged divorced widowed separated single pregnant unemployed self-employed vegan "
    "vegetarian pescatarian diabetic celiac coeliac allergic intolerant deaf blind disabled paralyzed "
    "autistic dyslexic epileptic asthmatic sober bilingual trilingual adopted homeschooled left-handed "
    "colorblind gay lesbian bisexual transgender trans nonbinary non-binary atheist agnostic".split()
)


def _status(main) -> bool:
    """A present "I'm retired", "I am married", "I'm lactose intolerant", "I'm not married"."""
    if main.lemma_ == "be" and main.tag_ in ("VBP", "VBZ"):
        return any(c.dep_ in ("acomp", "attr") and c.lower_ in _STATUS for c in main.children)
    return (
        main.tag_ == "VBN"
        and main.lower_ in _STATUS
        and any(c.dep_ == "auxpass" and c.lemma_ == "be" and c.tag_ in ("VBP", "VBZ") for c in main.children)
    )


def _liked(tokens, main) -> bool:
    """A present liking of a thing the clause names ("I love fishing", "I've always loved dogs"), not
    a reaction to one ("I loved the movie", "I love your idea", "I love that")."""
    if main.lemma_.lower() not in _LIKING or any(t.lower_ in _YOU for t in tokens):
        return False
    if main.tag_ not in ("VBP", "VBZ") and not (
        main.tag_ == "VBN" and any(c.dep_ == "aux" and c.lemma_ == "have" for c in main.children)
    ):
        return False
    for t in main.children:
        if t.i < main.i:
            continue
        if t.dep_ == "xcomp" or t.tag_ == "VBG":  # "to cook", "being outdoors"
            return t.lemma_.lower() not in _EMPTY_VERBS
        if t.dep_ == "dobj" and t.pos_ in ("NOUN", "PROPN"):
            # a kind of thing ("turtles", "Star Wars"), not one just shown ("the yellow leaves", "a series")
            return t.lemma_.lower() not in VAGUE_NOUNS and (
                t.pos_ == "PROPN" or not any(c.dep_ == "det" or c.lower_ in _THEIRS for c in t.children)
            )  # "their fragrance": whose?
    return False


#: Verbs whose object is the fact: "I play" or "I've been learning for a year" leaves it to the turn.
_NEEDS_OBJECT = frozenset("play practice practise learn start begin quit".split())


def _object_left_off(main, tokens) -> bool:
    if main.lemma_.lower() not in _NEEDS_OBJECT:
        return False
    inside = {t.i for t in tokens}  # "Started when I was young and it's been great": not the cut tail
    for c in (c for c in main.children if c.i in inside):
        objects = [o for o in c.children if o.dep_ == "pobj"]
        if c.dep_ == "prep" and all(
            o.lemma_.lower() in _SPANS or o.ent_type_ in ("DATE", "TIME") for o in objects
        ):
            continue  # "for about four months", "since January": how long, not what
        if c.dep_ in ("dobj", "prep", "prt", "xcomp", "ccomp", "dative", "attr", "conj"):
            return False
    return True


def _name_end(token) -> int:
    """Where a name ends: "Call of Duty", "Lord of the Rings" run on past their head word."""
    if token.pos_ != "PROPN":
        return token.i + 1
    named = [c for c in token.children if c.i > token.i and c.dep_ == "prep" and c.lower_ == "of"]
    objects = [o for c in named for o in c.children if o.dep_ == "pobj" and o.pos_ == "PROPN"]
    return objects[0].i + 1 if objects and objects[0].right_edge.i == objects[0].i else token.i + 1


def _object_said_before(main) -> str:
    """The object the same verb took earlier in the turn: "... how to play the violin. I've been
    playing for four months" -> "the violin"; "" when there is none."""
    for t in reversed(main.doc[: main.i]):
        if t.dep_ == "dobj" and t.pos_ in ("NOUN", "PROPN") and t.head.lemma_ == main.lemma_:
            return main.doc[t.left_edge.i : _name_end(t)].text
    return ""


_HOW_MANY = frozenset("one some few more lots several many".split())
_COUNTED = frozenset("one two three few couple some several many".split())
_OWN = frozenset({"own", "mine", "ours"})
_ON_HOW_MANY = frozenset("one few several many any".split())


def _of_what_left_off(main, tokens) -> bool:
    """A count or a "one" as what the clause is about, saying of what: "I've been one", "We're
    brainstorming some", "I have two", "Is working on one", "Submitted a few more"."""
    counted = any(
        (c.dep_ == "attr" and c.lower_ == "one" or c.dep_ == "dobj" and (c.lower_ in _HOW_MANY or c.like_num))
        and not _one_of_what(c)
        for c in main.children
    )
    on_one = any(  # "Is working on one", "Has been to a few in Europe"
        o.dep_ == "pobj" and o.lower_ in _ON_HOW_MANY and not _one_of_what(o, counted=o.lower_ != "one")
        for c in main.children
        if c.dep_ == "prep"
        for o in c.children
    )
    more = any(
        t.lower_ == "more"
        and t.head.i == main.i
        and t.i > 0
        and t.doc[t.i - 1].lower_ in _COUNTED
        and not any(
            c.dep_ == "dobj" and c.lower_ not in _COUNTED and c.lower_ != "more" for c in main.children
        )
        for t in tokens
    )
    return counted or on_one or more


def _one_of_what(one, *, counted: bool = False) -> bool:
    """Does "one" say what it is one of ("the one who ...", "one of the lucky ones"; not "three of
    my own")? A ``counted`` word ("a few") says it with no determiner."""
    return any(
        c.dep_
        in (("amod", "compound", "relcl", "acl") if counted else ("det", "amod", "compound", "relcl", "acl"))
        or (c.dep_ == "prep" and c.lower_ == "of" and not any(o.lower_ in _OWN for o in c.children))
        for c in one.children
    )


def named(syntax: ClauseSyntax, tokens, main) -> ClauseSyntax:
    """``syntax`` with its one unnamed pronoun written out when the turn names it ("Have you tried
    pottery?" - "I love it!"), else marked ``dangling`` when it has any; pointing determiners said
    plainly (:func:`_swaps`)."""
    swaps = _swaps(tokens, main) + _favourite_asked(tokens)
    if swaps:
        syntax = replace(syntax, swaps=swaps)
    tail = _tail(tokens, main) or _vocative_last(tokens)
    if tail is not None:  # what the joined clause says is not kept, so it needs no naming
        syntax = replace(syntax, tail=tail[1])
        tokens = [t for t in tokens if t.i < tail[0].i]
    if syntax.mine or _concrete(tokens, main):
        syntax = replace(syntax, concrete=True)
    if syntax.subject in ("speaker", "elided") and _liked(tokens, main):
        syntax = replace(syntax, liked=True, concrete=True)  # a lasting fact, however vague it reads
    if syntax.subject in ("speaker", "elided") and _status(main):
        syntax = replace(syntax, status=True, concrete=True)  # "I'm retired": two words, a life's state
    if _object_left_off(main, tokens):  # "I've been playing for four months": playing what?
        named = _object_said_before(main)
        if not named:
            return replace(syntax, dangling=True)
        syntax = replace(syntax, swaps=(*syntax.swaps, (main.text, f"{main.text} {named}")))
    if _of_what_left_off(main, tokens):
        return replace(syntax, dangling=True)  # "I've been one", "We're brainstorming some": of what?
    pronouns = pronouns_named(tokens, main)
    if not pronouns:
        return syntax
    t = pronouns[0]
    # only what the speaker did something to is named: "Have you tried pottery?" - "I love it!"
    if (
        len(pronouns) == 1 and t.dep_ == "dobj" and t.head.i == main.i and t.lower_ in ("it", "them")
        and main.lemma_.lower() not in _KNOWING  # "I just know it!": a thing said, not a thing named
    ):  # fmt: skip
        if syntax.subject in ("speaker", "elided"):
            antecedent = antecedent_of(t.doc, t, OBJECT_PRONOUNS[t.lower_])
            if antecedent:
                later = sum(1 for u in tokens if u.i > t.i and u.lower_ == t.lower_)
                return replace(syntax, pronoun=t.text, antecedent=antecedent, later=later)
    return replace(syntax, dangling=True)
