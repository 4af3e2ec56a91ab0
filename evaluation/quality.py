"""LLM-free memory quality: are the written values the user's, does the tree hold the known facts,
and does a context hold the answer. Pure functions of their arguments (the embedder is injected).

- :func:`value_metrics` — per applied model ADD/UPDATE value: *grounded* (the gate's own
  ``check_grounding`` against the subject's turns of the op's chunk + the leaf's old value),
  *invented* (a number or proper noun that is in neither the subject's turns nor the old value;
  the other speaker's turns do not count as a source) and *wrong speaker* (not grounded in the
  subject's turns, grounded in the other speaker's turns of that chunk, old value included in both).
- :func:`observation_coverage` — the tree's clauses (every value split on ``;``) against a list of
  known facts (LoCoMo's per-speaker ``observation``): a fact is covered at τ when its best cosine
  against any clause is ≥ τ; precision is the share of clauses whose best cosine against any fact
  is ≥ ``precision_tau`` (0.5). ``tree_tokens`` counts ``path: value`` lines, one per non-empty leaf
  sorted by path, with ``memory.engine.render.count_tokens`` (the paths render style, no schema).
- :func:`context_answer_recall` — the share of the gold answer's distinct tokens (folded words,
  stopwords removed unless nothing else is left) that occur in a context text.
- Issue 23's judge and form metrics: :func:`neutralise` (the subject's names, I/my and a subject-less
  value's subject become "the person" on both sides before embedding; ``observation_coverage(...,
  names=...)`` applies it and reports ``precision_at`` per τ), :func:`first_person_rate`,
  :func:`words_per_clause_p50`, :func:`answerable` (answers whose tokens are all in the tree's text,
  over the same for the history; a weekday answer such as "The Friday before 15 July 2023" also counts
  written out, "14 July 2023", for both texts alike: :func:`answer_forms`), :func:`removal` (what a DELETE or a clause-only-removing UPDATE takes
  away), :func:`stated_facts` (persona facts a speaker actually says) and :func:`sample_values`.
"""

from __future__ import annotations

import random
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, timedelta

import numpy as np

from memory.engine.grounding import check_grounding, proper_nouns
from memory.engine.render import count_tokens
from memory.engine.text import QUOTATION, STOPWORDS, fold, number_tokens, tokens_folded, words

Embed = Callable[[Sequence[str]], "np.ndarray"]  # texts -> (n, d) unit vectors
TAUS = (0.5, 0.6, 0.7)
PRECISION_TAU = 0.5
_EXAMPLES = 5


def _rate(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def invented_tokens(value: str, sources: Iterable[str | None]) -> list[str]:
    """Numbers and proper nouns of ``value`` found in none of ``sources`` (folded, possessive-tolerant)."""
    texts = [s for s in sources if s]
    numbers = set().union(*(number_tokens(t) for t in texts)) if texts else set()
    known = tokens_folded(texts)
    out = [n for n in sorted(number_tokens(value)) if n not in numbers]
    for name in proper_nouns(value):
        f = fold(name)
        base = f[:-2] if f.endswith("'s") else f
        if f not in known and base not in known and name not in out:
            out.append(name)
    return out


def value_metrics(rows: Iterable[Mapping]) -> dict:
    """Counts and rates over applied ADD/UPDATE values; each row has ``new_value``, ``old_value``
    (or None), ``user_text`` (the subject's turns of the op's chunk) and ``other_text`` (the other
    speaker's turns). Rates are None when there is no row."""
    n = grounded = invented = wrong = 0
    invented_examples: list[dict] = []
    wrong_examples: list[str] = []
    for row in rows:
        value, old = row["new_value"], row.get("old_value")
        user, other = row.get("user_text") or "", row.get("other_text") or ""
        n += 1
        in_user = check_grounding(value, [user], old).ok
        grounded += in_user
        made_up = invented_tokens(value, [user, old])
        if made_up:
            invented += 1
            if len(invented_examples) < _EXAMPLES:
                invented_examples.append({"value": value, "tokens": made_up})
        if not in_user and other and check_grounding(value, [other], old).ok:
            wrong += 1
            if len(wrong_examples) < _EXAMPLES:
                wrong_examples.append(value)
    return {
        "values": n,
        "grounded": grounded,
        "invented": invented,
        "wrong_speaker": wrong,
        "grounded_rate": _rate(grounded, n),
        "invented_rate": _rate(invented, n),
        "wrong_speaker_rate": _rate(wrong, n),
        "invented_examples": invented_examples,
        "wrong_speaker_examples": wrong_examples,
    }


def tree_clauses(tree: Mapping[str, str]) -> list[str]:
    return [c.strip() for value in tree.values() for c in (value or "").split(";") if c.strip()]


def tree_tokens(tree: Mapping[str, str]) -> int:
    """Tokens of the tree as ``path: value`` lines (non-empty leaves, sorted by path)."""
    lines = [f"{path}: {' '.join(value.split())}" for path, value in sorted(tree.items()) if value]
    return count_tokens("\n".join(lines))


def _tau_key(tau: float) -> str:
    return f"{tau:g}"


def observation_coverage(
    tree: Mapping[str, str],
    observations: Sequence[str],
    embed: Embed,
    taus: Sequence[float] = TAUS,
    *,
    precision_tau: float = PRECISION_TAU,
    names: Sequence[str] | None = None,
) -> dict:
    """Coverage of ``observations`` by the tree's clauses per τ, and the clauses' precision (see the
    module docstring; ``precision_at`` holds it per τ). Coverage is None without facts, 0 for an empty
    tree; precision is None when there is no clause or no fact. With ``names`` (the subject's names,
    possibly empty) both sides are :func:`neutralise`-d before embedding."""
    facts = [f.strip() for f in observations if f and f.strip()]
    clauses = tree_clauses(tree)
    covered = dict.fromkeys(map(_tau_key, taus), 0)
    precise, precise_at = None, None
    if facts and clauses:
        if names is not None:
            fact_vectors, clause_vectors = (
                embed([neutralise(f, names) for f in facts]),
                embed([neutralise(c, names) for c in clauses]),
            )
        else:
            fact_vectors, clause_vectors = embed(facts), embed(clauses)
        sims = np.asarray(fact_vectors) @ np.asarray(clause_vectors).T  # (facts, clauses)
        best_fact, best_clause = sims.max(axis=1), sims.max(axis=0)
        covered = {_tau_key(t): int((best_fact >= t - 1e-9).sum()) for t in taus}
        precise = int((best_clause >= precision_tau - 1e-9).sum())
        precise_at = {_tau_key(t): int((best_clause >= t - 1e-9).sum()) for t in taus}
    return {
        "facts": len(facts),
        "clauses": len(clauses),
        "tree_tokens": tree_tokens(tree),
        "covered": covered,
        "coverage": {k: _rate(v, len(facts)) for k, v in covered.items()},
        "precise_clauses": precise,
        "precision": _rate(precise, len(clauses)) if precise is not None else None,
        "precision_tau": precision_tau,
        "precise_at": precise_at,
        "precision_at": {k: _rate(v, len(clauses)) for k, v in precise_at.items()} if precise_at else None,
    }


def pool_coverage(parts: Sequence[dict]) -> dict:
    """Several subjects' :func:`observation_coverage` results as one (facts and clauses pooled,
    tree tokens summed)."""
    facts = sum(p["facts"] for p in parts)
    clauses = sum(p["clauses"] for p in parts)
    keys = list(parts[0]["covered"]) if parts else [_tau_key(t) for t in TAUS]
    covered = {k: sum(p["covered"][k] for p in parts) for k in keys}
    measured = [p["precise_clauses"] for p in parts if p["precise_clauses"] is not None]
    measured_clauses = sum(p["clauses"] for p in parts if p["precise_clauses"] is not None)
    precise = sum(measured) if measured else None
    at = [p["precise_at"] for p in parts if p.get("precise_at")]
    precise_at = {k: sum(a[k] for a in at) for k in keys} if at else None
    return {
        "facts": facts,
        "clauses": clauses,
        "tree_tokens": sum(p["tree_tokens"] for p in parts),
        "covered": covered,
        "coverage": {k: _rate(v, facts) for k, v in covered.items()},
        "precise_clauses": precise,
        "precision": _rate(precise, measured_clauses) if precise is not None else None,
        "precision_tau": parts[0]["precision_tau"] if parts else PRECISION_TAU,
        "precise_at": precise_at,
        "precision_at": {k: _rate(v, measured_clauses) for k, v in precise_at.items()}
        if precise_at
        else None,
    }


def answer_tokens(answer: str | None) -> list[str]:
    """Distinct folded words of the answer, stopwords removed (all words if only stopwords)."""
    tokens = list(dict.fromkeys(fold(w) for w in words(answer or "")))
    content = [t for t in tokens if t not in STOPWORDS and t.replace("'", "") not in STOPWORDS]
    return content or tokens


def context_answer_recall(context: str | None, answer: str | None) -> float | None:
    """Share of the gold answer's tokens present in ``context``; None for an empty answer."""
    tokens = answer_tokens(answer)
    if not tokens:
        return None
    present = tokens_folded([context or ""])
    present |= {part for t in list(present) if "-" in t for part in t.split("-")}
    return round(sum(t in present for t in tokens) / len(tokens), 4)


def context_recall_section(items: Sequence[dict]) -> dict:
    """Per mode: mean context answer recall (overall and per category), the share of questions whose
    context holds every answer token, and how many could not be measured (no gold answer, or the
    context was not obtained)."""
    by_mode: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        by_mode[item["mode"]].append(item)
    out = {}
    for mode, rows in by_mode.items():
        values = [r["recall"] for r in rows if r["recall"] is not None]
        groups: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            if r["recall"] is not None:
                groups[r["category"]].append(r["recall"])
        out[mode] = {
            "n": len(values),
            "mean": round(float(np.mean(values)), 4) if values else None,
            "full": round(sum(v >= 1.0 for v in values) / len(values), 4) if values else None,
            "unmeasured": len(rows) - len(values),
            "per_group": {g: round(float(np.mean(v)), 4) for g, v in sorted(groups.items())},
        }
    return out


# --- the judge of issue 23: neutral subjects, form metrics, answerability ---------------------------

#: The one phrase every mention of the subject becomes before embedding (names, I/my, a bare verb's subject).
NEUTRAL = "the person"
# not inside a compound: "me-time" is a noun of its own, as the rewrite reads it
_FIRST_PERSON = re.compile(r"(?<![\w-])(?:I|me|my|mine|myself|we|our|us)\b(?!-\w)", re.IGNORECASE)
_I_FORMS = re.compile(
    r"\b(?:(i)\s*(?:'|\u2019)\s*(m|ve|d|ll)|(i)\s+(am)|(i|me|myself)|(my|mine))\b(\s+([a-z]+))?",
    re.IGNORECASE,
)
_CONTRACTION = {"m": "is", "ve": "has", "d": "would", "ll": "will", "am": "is"}
_THEY = re.compile(r"\b(?:they|them|their|theirs|themselves|themself)\b", re.IGNORECASE)
_THEY_TO = {"their": f"{NEUTRAL}'s", "theirs": f"{NEUTRAL}'s"}
#: First words that already are a subject: a value starting with one keeps its own subject.
_SUBJECT_WORDS = frozenset(
    "i you he she it we they me him her us them my your his its our their this that these those there here "
    "the a an some any every each all no one someone something nobody both".split()
)
_NOT_INFLECTED = frozenset("can could will would shall should may might must ought need dare used".split())


def _lemmas(word: str) -> dict:
    try:
        from lemminflect import getAllLemmas
    except ImportError:  # pragma: no cover - lemminflect is a project dependency
        return {}
    return getAllLemmas(word.lower())


def _third_person(verb: str) -> str:
    """``love`` -> ``loves`` when ``verb`` is a bare base-form verb (not a modal); else unchanged."""
    low = verb.lower()
    lemmas = _lemmas(low)
    if low in _NOT_INFLECTED or low not in lemmas.get("VERB", ()):
        return verb
    if "AUX" in lemmas and low not in ("do", "have"):
        return verb
    try:
        from lemminflect import getInflection
    except ImportError:  # pragma: no cover
        return verb
    forms = getInflection(low, "VBZ")
    return forms[0] if forms else verb


def _starts_with_verb(word: str, following: str = "") -> bool:
    low = word.lower()
    if low in _SUBJECT_WORDS:
        return False
    if low.endswith("ing") and following:  # "Knitting is a passion": a gerund subject
        nxt = _lemmas(following)
        if "AUX" in nxt or (following.lower().endswith("s") and "VERB" in nxt):
            return False
    lemmas = _lemmas(low)
    if lemmas:
        return "VERB" in lemmas or "AUX" in lemmas
    return low.endswith(("s", "ed")) and not word[1:2].isupper()  # no lexicon: a rough guess


def neutralise(text: str, names: Sequence[str] = ()) -> str:
    """``text`` with its subject written as :data:`NEUTRAL`, so a value and a gold fact about the same
    person compare by content, not by form: every name of ``names`` (full name, first name, with a
    possessive) and I/me/my/mine/myself ("I'm" -> "the person is", "I love" -> "the person loves");
    a subject-less value ("Is a nurse", "Went to their class") gets the phrase as its subject and its
    singular they/them/their becomes the phrase too. Whitespace is normalised."""
    out = " ".join((text or "").split())
    for name in sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True):
        out = re.sub(rf"\b{re.escape(name)}(?:'s|\u2019s)", f"{NEUTRAL}'s", out)
        out = re.sub(rf"\b{re.escape(name)}\b", NEUTRAL, out)

    def first(m: re.Match) -> str:
        tail, verb = m.group(7) or "", m.group(8)
        if m.group(6):  # my / mine
            return f"{NEUTRAL}'s{tail}"
        contraction = m.group(2) or m.group(4)
        if contraction:
            return f"{NEUTRAL} {_CONTRACTION[contraction.lower()]}{tail}"
        if m.group(5).lower() == "i" and verb:
            return f"{NEUTRAL} {_third_person(verb)}"
        return f"{NEUTRAL}{tail}"

    out = _I_FORMS.sub(first, out)
    head, following = ([w.strip("\"'([,.") for w in out.split(" ", 2)] + ["", ""])[:2]
    if head and not out.lower().startswith(NEUTRAL) and _starts_with_verb(head, following):
        out = f"{NEUTRAL} {out[:1].lower()}{out[1:]}"
        out = _THEY.sub(lambda m: _THEY_TO.get(m.group(0).lower(), NEUTRAL), out)
    return out


def says_first_person(text: str) -> bool:
    """Does ``text`` say I/me/my/mine/myself/we/our/us (the country "US" does not count, nor a quoted
    title's own words: 'Loves "Under My Thumb"', nor a compound: "some me-time")?"""
    return any(m.group(0) != "US" for m in _FIRST_PERSON.finditer(QUOTATION.sub('""', text)))


def first_person_rate(clauses: Sequence[str]) -> float | None:
    """Share of clauses that :func:`says_first_person`."""
    return _rate(sum(says_first_person(c) for c in clauses), len(clauses))


def words_per_clause_p50(clauses: Sequence[str]) -> float | None:
    """Median word count of the clauses (None without a clause)."""
    counts = [len(words(c)) for c in clauses]
    return float(statistics.median(counts)) if counts else None


def word_count(texts: Iterable[str]) -> int:
    return sum(len(words(t)) for t in texts if t)


def context_tokens(context: str | None) -> set[str]:
    """The folded words of a context (possessives stripped, hyphenated words also in parts)."""
    present = tokens_folded([context or ""])
    return present | {part for t in list(present) if "-" in t for part in t.split("-")}


_WEEKDAY_BEFORE = re.compile(
    r"^\s*(?:the\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\s+before\s+"
    r"(\d{1,2})\s*([a-z]+),?\s*(\d{4})\.?\s*$",
    re.IGNORECASE,
)
_MONTH_NAMES = "january february march april may june july august september october november december".split()


def answer_forms(answer: object) -> list[str]:
    """The gold answer, and the same date written out when it names one by a weekday: "The Friday
    before 15 July 2023" is also "14 July 2023" (the Friday before that Saturday). A tree that
    stores "last Friday" said on 15 July as "(14 July 2023)" holds that answer; the history text
    holds the gold wording. Both contexts are read with the same forms (:func:`answerable`)."""
    text = "" if answer is None else str(answer)
    m = _WEEKDAY_BEFORE.match(text)
    month = m.group(3).lower() if m else ""
    if m is None or month not in _MONTH_NAMES:
        return [text]
    try:
        day = date(int(m.group(4)), _MONTH_NAMES.index(month) + 1, int(m.group(2)))
    except ValueError:
        return [text]
    weekday = ("monday tuesday wednesday thursday friday saturday sunday".split()).index(m.group(1).lower())
    back = (day.weekday() - weekday) % 7 or 7
    named = day - timedelta(days=back)
    return [text, f"{named.day} {_MONTH_NAMES[named.month - 1].capitalize()} {named.year}"]


def answer_present(tokens: set[str], answer: object) -> bool | None:
    """Are all of the answer's :func:`answer_tokens` in ``tokens`` (a :func:`context_tokens` set),
    in one of its :func:`answer_forms`? None for an empty answer. "7 May 2023" is present when 7,
    may and 2023 are; "The Friday before 15 July 2023" when friday, 15, july and 2023 are, or 14,
    july and 2023."""
    found = None
    for form in answer_forms(answer):
        wanted = answer_tokens(form)
        if wanted:
            found = found or all(t in tokens for t in wanted)
    return found


def answerable(answers: Sequence[object], tree_text: str, history_text: str) -> dict:
    """How many answers are wholly in the tree's text and in the history's; ``ratio`` = tree share
    over history share (None when the history holds none)."""
    tree_tokens_, history_tokens = context_tokens(tree_text), context_tokens(history_text)
    in_tree = in_history = n = 0
    for answer in answers:
        t, h = answer_present(tree_tokens_, answer), answer_present(history_tokens, answer)
        if t is None or h is None:
            continue
        n += 1
        in_tree += t
        in_history += h
    return {
        "questions": n,
        "in_tree": in_tree,
        "in_history": in_history,
        **answerable_ratio(in_tree, in_history, n),
    }


def answerable_ratio(in_tree: int, in_history: int, n: int) -> dict:
    return {
        "tree_share": _rate(in_tree, n),
        "history_share": _rate(in_history, n),
        "ratio": round(in_tree / in_history, 4) if in_history else None,
    }


def clauses_of(value: str | None) -> list[str]:
    return [c.strip() for c in (value or "").split(";") if c.strip()]


def removal(op_type: str, old_value: str | None, new_value: str | None) -> list[str] | None:
    """The clauses an op takes away without putting anything new in their place: every clause of the
    old value for a DELETE, the dropped clauses of an UPDATE whose new clauses were all there before
    (a retraction, not a replacement); None for any other op."""
    old = clauses_of(old_value)
    if op_type == "DELETE":
        return old
    if op_type != "UPDATE" or not old:
        return None
    before = {fold(c) for c in old}
    new = {fold(c) for c in clauses_of(new_value)}
    dropped = [c for c in old if fold(c) not in new]
    return dropped if dropped and new <= before else None


def stated_facts(facts: Sequence[str], sentences: Sequence[str], embed: Embed, tau: float = 0.6) -> list[str]:
    """The facts some sentence says: best cosine to one of ``sentences`` >= ``tau``, both sides
    :func:`neutralise`-d."""
    facts = [f for f in facts if f.strip()]
    sentences = [s for s in sentences if s.strip()]
    if not facts or not sentences:
        return []
    sims = (
        np.asarray(embed([neutralise(f) for f in facts]))
        @ np.asarray(embed([neutralise(s) for s in sentences])).T
    )
    return [f for f, best in zip(facts, sims.max(axis=1), strict=True) if best >= tau - 1e-9]


def sample_values(trees: Mapping[str, Mapping[str, str]], k: int = 40, seed: int = 0) -> list[dict]:
    """A seeded random sample of ``k`` (subject, leaf, value) rows over several trees, for reading."""
    rows = [
        {"subject": subject, "path": path, "value": value}
        for subject, tree in sorted(trees.items())
        for path, value in sorted(tree.items())
        if value
    ]
    return random.Random(seed).sample(rows, min(k, len(rows)))


__all__ = [
    "NEUTRAL",
    "TAUS",
    "answer_forms",
    "answer_present",
    "answer_tokens",
    "answerable",
    "answerable_ratio",
    "clauses_of",
    "context_tokens",
    "first_person_rate",
    "neutralise",
    "removal",
    "sample_values",
    "stated_facts",
    "word_count",
    "words_per_clause_p50",
    "context_answer_recall",
    "context_recall_section",
    "invented_tokens",
    "observation_coverage",
    "pool_coverage",
    "tree_clauses",
    "tree_tokens",
    "value_metrics",
]
