"""Whose fact is a clause? The grammatical test the fact pipeline applies after the classifier.

A value in the tree should be a lasting fact about the subject. Many clauses the classifier keeps
are not: platitudes whose subject is not the person ("Kids are so resilient", "Staying positive
makes a difference"), guesses about someone else ("Mentoring must be rewarding"), fragments with no
verb ("Seeing the smiles on their faces"), advice ("Keep working hard"), the other person's traits
("Your advocacy is an inspiration") and clauses whose pronoun subject points nowhere ("It made them
realize ..."). A parser (``serving.syntax``, spaCy) reads each clause's grammatical subject and
main verb into a :class:`ClauseSyntax` of plain values; :func:`judge` decides from those alone, and
:func:`resolve` writes a pronoun subject out as the speaker's thing it names ("She sleeps on my
keyboard" after "my cat Luna" -> "My cat Luna sleeps on my keyboard").

Subject kinds (:data:`SUBJECTS`):

- ``speaker``: I / we;
- ``owned``: something of the speaker's: "my sister Ana", "our team", "one of my friends", "the
  kids" after "my kids", a name the turn introduced as the speaker's ("my cat Luna" ... "Luna");
- ``elided``: no subject but a finite verb the speaker left it off ("Took a pottery class",
  "Been rehearsing hard");
- ``pronoun``: he / she / they / it; kept only with an ``antecedent`` the speaker owns;
- ``addressee``: you / your X; ``other``: his / her / their X, or a name the turn did not introduce;
- ``generic``: any other noun phrase ("Kids", "Cooking", "The nearby beaches", "Nature"); kept
  when the clause speaks of the speaker (``first_person``: "This necklace is special to me",
  "Someone wrote me a letter");
- ``clausal``: a clause or gerund as subject ("Joining a church can be encouraging");
- ``deictic``: this / that / these / those (a reaction to what was said);
- ``expletive``: "there is ..." (kept when the clause speaks of the speaker: ``first_person``);
- ``imperative``: no subject and a bare verb ("Keep persevering");
- ``reaction``: no subject and sounds / looks / seems ("Sounds great") or a verb in -s, which an
  "I" left off never takes ("Next Friday works"), or sympathy over a clause
  ("I can imagine it was hard", "I can see why you love it");
- ``subordinate``: only a "when/if/because ..." clause, its main clause elsewhere ("When I'm down");
- ``none``: nothing the parser could read (no verb at all).

Pure Python: no parser here, so the engine stays importable anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "SUBJECTS",
    "KEPT_SUBJECTS",
    "GUESS_MODALS",
    "ADVICE_MODALS",
    "SPECULATIVE_MODALS",
    "ClauseSyntax",
    "Judgement",
    "judge",
    "resolve",
]

SUBJECTS = (
    "speaker",
    "owned",
    "elided",
    "pronoun",
    "addressee",
    "other",
    "generic",
    "clausal",
    "deictic",
    "expletive",
    "imperative",
    "reaction",
    "subordinate",
    "none",
)
KEPT_SUBJECTS = frozenset({"speaker", "owned", "elided"})
#: Modals that make a statement a guess or advice rather than a fact ("must be rewarding",
#: "should start a cork board", "could be fun"); only the speaker's own ("I should ...") stays.
GUESS_MODALS = frozenset({"must", "should", "might", "may", "could", "ought", "gotta", "maybe"})
#: Of those, advice even when the speaker gives it to themself ("We should all join forces", "I
#: gotta push myself"), and an advice verb read as one ("I recommend reading it"): not a fact.
ADVICE_MODALS = frozenset({"should", "ought", "gotta", "recommend"})
#: And a guess even of the speaker's own doing ("I might go camping", "I could play Mario Kart all
#: day", "I may have found a job", "Maybe I'll write a drama"): a maybe, not a fact. Said with "not" it is a stance and stays
#: ("I couldn't live without my dog"; the syntax step reports such a modal as "could not").
SPECULATIVE_MODALS = frozenset({"might", "may", "could", "maybe"})


@dataclass(frozen=True, slots=True)
class ClauseSyntax:
    """What a parser read from one clause (plain values; see the module doc for ``subject``)."""

    subject: str
    finite: bool  # the main verb (or its auxiliary) is finite: a clause, not a fragment
    modal: str = ""  # a modal auxiliary of the main verb, lower case ("must", "can", "gotta", ...), or
    # "recommend" for an advice verb
    pronoun: str = ""  # the subject pronoun as written, when ``subject`` is "pronoun"; with a
    # "speaker" subject, an object pronoun ("I love it") whose antecedent is known
    antecedent: str = ""  # the speaker's noun phrase that pronoun names ("my cat Luna"), if any
    first_person: bool = False  # the clause says I / me / my / we / us / our somewhere
    dangling: bool = False  # a pronoun the clause does not name: "Made it in class", "helped her move"
    later: int = 0  # an object ``pronoun``: how many times the same word comes after it in the clause
    tail: str = ""  # where a joined clause about something else starts: "... walks and it's made"
    swaps: tuple[tuple[str, str], ...] = ()  # pointing words said plainly: ("this tree", "a tree")
    concrete: bool = False  # the verb does something to a thing it names: "I play clarinet", "I'm a
    # nurse"; not a state or a feeling ("I'm grateful for my friends", "I had a blast")
    mine: bool = False  # a copula says what the subject is to the speaker: "Pizza is my favourite food"
    liked: bool = False  # the speaker's present liking of a thing named: "I love fishing", "We enjoy chess"
    status: bool = False  # the speaker's present standing in life: "I'm retired", "I'm pregnant"
    verb: str = ""  # the main verb as written ("was" in "The help I got was huge"): a cut keeps it
    joined: tuple[str, ...] = ()  # present verbs joined to an I/we main verb: "I play guitar and sing"

    def __post_init__(self) -> None:
        if self.subject not in SUBJECTS:
            raise ValueError(f"unknown subject kind {self.subject!r}; expected one of {SUBJECTS}")


@dataclass(frozen=True, slots=True)
class Judgement:
    keep: bool
    reason: str  # "" when kept, else why not (a subject kind, "no_finite_verb", "modal_guess")


def judge(syntax: ClauseSyntax) -> Judgement:
    """Keep a clause only if it is a finite statement whose subject is the speaker or theirs."""
    if syntax.subject in ("imperative", "reaction", "subordinate"):
        return Judgement(False, syntax.subject)
    if not syntax.finite or syntax.subject == "none":
        return Judgement(False, "no_finite_verb")
    subject = syntax.subject
    if subject == "pronoun":
        subject = "owned" if syntax.antecedent else "unresolved_pronoun"
    elif subject in ("expletive", "generic") and syntax.first_person:
        subject = "owned"  # "There's a park by my house", "This necklace is special to me"
    if subject not in KEPT_SUBJECTS:
        return Judgement(False, subject)
    if (
        syntax.modal in ADVICE_MODALS
        or (syntax.modal in GUESS_MODALS and subject != "speaker")
        or syntax.modal in SPECULATIVE_MODALS
    ):
        return Judgement(False, "modal_guess")
    if syntax.dangling:  # not self-contained: "Their brother wrote it" says nothing alone
        return Judgement(False, "unresolved_object")
    return Judgement(True, "")


_CONTRACTION = {"'s": "is", "'re": "are", "'ve": "have", "'ll": "will", "'d": "would", "'m": "am"}


def resolve(text: str, syntax: ClauseSyntax) -> str:
    """``text`` with its pronoun subject replaced by the antecedent ("She's so funny" ->
    "My cat Luna is so funny"), or its object pronoun ("I love it" -> "I love pottery" after
    "Have you tried pottery?"), cut before a joined clause about something else ("Started yoga and
    it helps" -> "Started yoga"), a pointing "this X" said as "a X"; unchanged when there is nothing
    to resolve."""
    if syntax.tail and (cut := text.rfind(syntax.tail)) > 0:  # "Loves dancing and it brings joy"
        text = text[:cut].rstrip(" ,;-\u2013\u2014")
    for said, plain in syntax.swaps:  # "Decorated this tree" -> "Decorated a tree"
        m = re.search(rf"\b{re.escape(said)}\b", text, re.IGNORECASE)
        if m is not None:
            plain = plain[:1].upper() + plain[1:] if text[m.start()].isupper() else plain
            text = (text[: m.start()] + plain + text[m.end() :]).strip()
    if not syntax.antecedent or not syntax.pronoun:
        return text
    if syntax.subject != "pronoun":  # an object (or a reported clause's subject) is named
        found = list(re.finditer(rf"\b{re.escape(syntax.pronoun)}\b(?!['\u2019])", text, re.IGNORECASE))
        if len(found) <= syntax.later:
            return text
        at = found[-1 - syntax.later]
        return text[: at.start()] + syntax.antecedent + text[at.end() :]
    pattern = re.compile(rf"\b{re.escape(syntax.pronoun)}((?:'|\u2019)(?:s|re|ve|ll|d|m))?\b", re.IGNORECASE)
    m = pattern.search(text)
    if m is None:
        return text
    phrase = syntax.antecedent
    if m.start() == 0 or text[: m.start()].rstrip().endswith((".", "!", "?")):
        phrase = phrase[:1].upper() + phrase[1:]
    if m.group(1):
        short = m.group(1).replace("\u2019", "'").lower()
        verb = _CONTRACTION[short]
        if short == "'s" and re.match(r"\s+(?:been|got|had)\b", text[m.end() :]):
            verb = "has"  # "she's been" is "has been"
        phrase = f"{phrase} {verb}"
    return text[: m.start()] + phrase + text[m.end() :]
