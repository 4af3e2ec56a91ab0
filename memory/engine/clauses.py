"""Leaf values as clauses: the user's sentence as a short third-person clause, merge and retract.

A leaf value is clauses joined by ``"; "``, oldest first. Used by the extractive listener and the
pointing pipeline for every model's ADD/UPDATE/DELETE:

- :func:`third_person` ("I've been vegetarian for ten years." -> "Has been vegetarian for ten
  years") drops discourse markers and a leading "I", conjugates its verb and swaps other
  first-person words for they/them/their: it only removes or swaps words, so it stays grounded;
- :func:`merge_clauses` appends the new clause (one already held changes nothing), dropping old
  ones it supersedes; over budget, see :func:`_victim`; a ``single`` leaf (city, employer...) is
  replaced instead;
- :func:`duplicate_leaf` finds the leaf that already holds a clause's fact (one leaf per fact);
- :func:`retract` removes the clauses a retraction sentence names ("forget the half marathon").

Clauses are compared by content stems, numbers and month names (:func:`clause_key`: "Is 32" and
"Is 33", "(May 2023)" and "(June 2023)" differ).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .candidates import salient
from .chatter import says_a_feeling, substance
from .dates import VAGUE_DATE
from .text import content_stems, fold, folded_words, number_tokens, without_dangling_end

SEPARATOR = "; "
_LEAD = re.compile(
    r"^(?:(?:oh|and|also|so|well|yeah|yes|haha|ha|lol|wow|hey|honestly|actually|anyway|but|plus|"
    r"by the way|btw|fun fact|guess what|to be honest|of course|you know|i mean|right|ok|okay)"
    r"[\s,!.:-]+)+",
    re.IGNORECASE,
)
_PREFIX_COLON = re.compile(r"^[^:]{1,24}:\s+")
_MODALS = {"can", "can't", "could", "couldn't", "will", "won't", "would", "wouldn't", "should", "must",
           "might", "may", "did", "didn't", "was", "wasn't", "had", "hadn't", "used", "never", "also"}  # fmt: skip
_ADVERBS = {"just", "really", "also", "recently", "finally", "actually", "usually", "always", "never",
            "often", "still", "sometimes", "even", "totally", "absolutely", "definitely", "mostly",
            "already", "currently", "now", "only", "love", "truly"}  # fmt: skip
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "go": "goes", "'m": "is"}
_SUBJECT_FORMS = {
    "i'm": "",
    "i am": "",
    "i've": "has",
    "i'd": "would",
    "i'll": "will",
}
_OBJECT = {"me": "them", "my": "their", "mine": "theirs", "myself": "themself", "i": "they",
           "i'm": "they're", "i've": "they've", "i'd": "they'd", "i'll": "they'll", "we": "they",
           "we're": "they're", "we've": "they've", "our": "their", "ours": "theirs", "us": "them",
           "am": "are"}  # fmt: skip


def clauses_of(value: str | None) -> list[str]:
    return [c.strip() for c in (value or "").split(";") if c.strip()]


def _conjugate(word: str) -> str:
    low = word.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _MODALS or low.endswith("ed") or not low.isalpha():
        return word
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return word + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _swap_pronouns(text: str) -> str:
    pronoun = r"\b(?:I'm|I've|I'd|I'll|I|me|my|mine|myself|we're|we've|we|our|ours|us)\b"
    return re.sub(pronoun, lambda m: _OBJECT.get(fold(m.group(0)), m.group(0)), text)


def third_person(sentence: str) -> str:
    """The sentence as a third-person clause without its subject (see the module docstring)."""
    text = " ".join(sentence.replace("\u2019", "'").split())
    text = _LEAD.sub("", text)
    text = _PREFIX_COLON.sub("", text) if len(text) > 30 else text
    text = text.rstrip(" .!;,")
    low = text.lower()
    for form, repl in _SUBJECT_FORMS.items():
        if low.startswith(form + " "):
            rest = text[len(form) + 1 :]
            text = f"{repl} {rest}" if repl else rest
            break
    else:
        if low.startswith("i "):
            tokens = text[2:].split(" ")
            k = 0
            while k < len(tokens) - 1 and tokens[k].lower() in _ADVERBS - {"love"}:
                k += 1
            if tokens and tokens[0]:
                tokens[k] = _conjugate(tokens[k])
            text = " ".join(tokens)
    text = _swap_pronouns(text)
    text = re.sub(r"\bthey (is|has|does|was)\b", lambda m: "they " + {"is": "are", "has": "have",
                  "does": "do", "was": "were"}[m.group(1)], text)  # fmt: skip
    text = text.strip(" ,")
    return text[:1].upper() + text[1:] if text else text


def trim(text: str, budget: int) -> str:
    """``text`` within ``budget`` characters: cut at the last clause break or word that fits, and
    never on a word that needs the next one ("the importance of patience and")."""
    if len(text) <= budget:
        return text
    cut = text[:budget]
    for mark in (", ", " - ", " ("):
        pos = cut.rfind(mark)
        if pos >= budget // 2:
            return cut[:pos].rstrip(" ,;")
    pos = cut.rfind(" ")
    words = (cut[:pos] if pos > 0 else cut).rstrip(" ,;").split(" ")
    return " ".join(without_dangling_end(words)).rstrip(" ,;")


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
DUPLICATE_OVERLAP = 0.8  # share of the smaller clause's key a clause must repeat to be "the same fact"


def clause_key(clause: str) -> frozenset[str]:
    """What a clause says, for comparing: content stems, numbers and month names."""
    folded = folded_words(clause)
    months = {"m:" + w[:3] for w in folded if w in _MONTHS}
    return frozenset(content_stems(clause, folded) | number_tokens(clause, folded) | months)


def _held(new_key: frozenset[str], key: frozenset[str]) -> bool:
    return bool(new_key) and bool(key) and new_key <= key


def merge_clauses(
    old: str | None, new: str, budget: int, *, single: bool = False, contested: bool = False
) -> str:
    """Old value + new clause, within ``budget`` (:func:`_victim`); ``single``: the new clause replaces
    the value unless the value already holds it or the clause states no state
    (:func:`no_state`: added like on any leaf); ``contested``: the new clause may be the one that
    goes (then the old value is returned as it was)."""
    new = trim(" ".join(new.split()).strip(" ;"), budget)
    single = single and not no_state(new)
    kept = []
    new_key = clause_key(new)
    for clause in clauses_of(old):
        key = clause_key(clause)
        if _held(new_key, key) or clause.casefold() == new.casefold():  # already held: nothing new
            return old or new
        if single:
            continue
        if (
            _overlap(set(key), set(new_key)) >= 0.6
            and not _other_event(key, new_key)
            and not _names_left(clause, new)
        ):
            continue  # the new clause restates or supersedes this one
        kept.append(clause)
    kept.append(new)
    while len(kept) > 1 and len(SEPARATOR.join(kept)) > budget:
        victim = _victim(kept if contested else kept[:-1])
        if victim == len(kept) - 1:
            return old or new  # contested, and the new clause is the one that goes
        kept.pop(victim)
    return SEPARATOR.join(kept)


def _other_event(key: frozenset[str], new_key: frozenset[str]) -> bool:
    """Is the old clause a dated event the new one does not restate (its date's day, month or year
    left out)? "Went to the museum (5 July 2023)" is not superseded by "Took the kids to a pottery
    workshop (14 July 2023)", nor "Won their first tournament (21 January 2022)" by "Is in the
    tournament again"; "Runs 5 km" still is by "Runs 10 km" (no date)."""
    if not any(k.startswith("m:") for k in key):
        return False
    return any(k[:1].isdigit() or k.startswith("m:") for k in key - new_key)


# A name: a capitalised word after a clause's first ("Took Max for a walk", "(May 2023)"), not "I".
_NAME = re.compile(r"(?<=[\s(\"'])(?!I\b|I')[A-Z][\w'-]*")


def _names_left(old: str, new: str) -> bool:
    """Does ``old`` name someone or something ``new`` does not? "Took Max for a walk" is another
    fact than "Took their turtles out for a walk", however many words they share."""
    said = set(folded_words(new))
    return any(fold(name) not in said for name in _NAME.findall(old, 1))


def anchored(clause: str) -> bool:
    """Does ``clause`` hold a date, a number or a name (a digit, or a capitalised word after its
    first)? Such a clause is what a question about the subject asks for."""
    return any(ch.isdigit() for ch in clause) or _NAME.search(clause, 1) is not None


def _victim(older: list[str]) -> int:
    """Which older clause goes when a leaf is over budget: of those without a date, number or
    name, a passing feeling first, then one that is not a lasting taste, trait (:data:`_LASTING`) or
    habit (:func:`present_habit`), then the one whose words name least (``chatter.substance``; the
    oldest of them on a tie), else the oldest ("Is feeling hopeful" goes before "Went to an adoption
    meeting (14 July 2023)" and before "Has gone camping a few times but never tried mountain
    climbing"; "Feels at peace on a comfy couch" before "Enjoys dramas"; "The screenplay they sent
    in has been on their mind" before "Enjoys dramas and emotionally-driven films")."""
    # "(a few weeks before 15 July 2023)" says when it was told, not when it happened: no anchor
    vague = [i for i, clause in enumerate(older) if not anchored(VAGUE_DATE.sub("", clause))]
    if not vague:
        return 0
    return min(
        vague,
        key=lambda i: (
            not says_a_feeling(older[i]),
            _LASTING.search(older[i]) is not None or present_habit(older[i]),
            substance(older[i]),
            i,
        ),
    )


#: A taste or a trait, which holds until it is taken back: what a leaf keeps longest.
_LASTING = re.compile(
    r"^(?:(?:always|usually|really|still)\s+)?(?:loves|likes|enjoys|prefers|adores|hates|dislikes|is (?:a|an|big)"
    r" (?:\w+ )?(?:fan|lover)|is into|collects)\b|\bfavou?rites?\b",
    re.IGNORECASE,
)


#: Third-person verbs that tell a passing state of mind, not a habit ("Thinks ...", "Feels ...").
_NOT_HABITS = frozenset(
    "is has does was says seems feels thinks hopes wishes guesses knows means wants needs".split()
)
_FINITE = frozenset(
    "is are was were has have had do does did can could will would should may might must".split()
)


def present_habit(clause: str) -> bool:
    """Does ``clause`` open on a verb in the simple present ("Plays clarinet", "Works at a bakery",
    "Runs every morning")? What someone does as a rule holds until it is taken back, like a taste;
    "Made something ..." and "Is thinking ..." tell one time."""
    from lemminflect import getAllLemmas  # pure Python, a base dependency (not on the gate's import path)

    words = [fold(w) for w in clause.split()[:3]]
    if words and words[0] in _ADVERBS:  # "Still works at the bakery"
        words = words[1:]
    first, then = (words + ["", ""])[:2]
    if len(first) < 3 or not first.endswith("s") or first in _NOT_HABITS or then in _FINITE:
        return False  # "Kids are great": a noun, then its verb
    return any(lemma != first for lemma in getAllLemmas(first).get("VERB", ()))


#: What someone is in the middle of, can do, wanted or thought: "Is expanding ...", "Has been doing
#: ...", "Can make ...", "Wanted to take control ..."; not a state said in the progressive ("Is living
#: in Denver", "Is dating Sam", "Is working as a nurse").
_STATES = r"(?:living|staying|dating|seeing|feeling|being|working\s+as|going\s+out)\b"
_NOW = r"(?:(?:still|now|also|currently|really)\s+)?"  # "Still is ...", "Is still ..."
_PROGRESSIVE = rf"{_NOW}(?!{_STATES})(?=\w{{5}})\w+ing"
_NO_STATE = re.compile(
    rf"^{_NOW}(?:(?:is|are)\s+{_PROGRESSIVE}|(?:has|have)\s+been\s+{_PROGRESSIVE}"
    r"|(?:can|could)\s+\w+|wanted|hoped|wished|tried|thought|felt)\b",
    re.IGNORECASE,
)


def no_state(clause: str) -> bool:
    """Does ``clause`` tell what someone is doing, can do, wanted or thought, rather than a state
    they are in or a change of it ("Is expanding their studio", "Has been doing some promotion",
    "Can make a special shopping experience", "Wanted to take control of their own destiny"; not
    "Is a nurse", "Works at a bakery", "Got promoted")?"""
    return _NO_STATE.match(clause.strip()) is not None


def duplicate_leaf(clause: str, tree: Mapping[str, str]) -> str | None:
    """The first leaf of ``tree`` holding a clause whose key contains ``clause``'s, or shares
    :data:`DUPLICATE_OVERLAP` of the smaller key with at most one new word; None if none does."""
    new_key = clause_key(clause)
    if not new_key:
        return None
    for path, value in tree.items():
        for held in clauses_of(value):
            key = clause_key(held)
            if _held(new_key, key):
                return path
            if len(new_key - key) <= 1 and _overlap(set(key), set(new_key)) >= DUPLICATE_OVERLAP:
                return path
    return None


def retract(old: str | None, sentence: str) -> str | None:
    """``old`` without the clauses ``sentence`` names; None when nothing remains or none is named
    (the caller asked for a DELETE of this leaf)."""
    names = salient(sentence)
    clauses = clauses_of(old)
    kept = [c for c in clauses if not (names & content_stems(c))]
    if len(kept) == len(clauses):
        return None
    return SEPARATOR.join(kept) or None
