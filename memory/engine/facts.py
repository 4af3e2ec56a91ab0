"""Step 2 of the listener pipeline: is a clause a lasting fact worth storing, and about whom?

:class:`FactClassifier` is a multinomial logistic regression over a clause's unit MiniLM vector (from
the caller) and the hand-made :func:`lexical_features`. Its :data:`LABELS`: ``self`` (a lasting fact
about the speaker: job, home, family, hobby, plan, health, preference, an event), ``relation`` (the
speaker's relation to the other speaker), ``third_party`` (someone else's trait or event) and ``none``
(small talk, questions, greetings, compliments, captions, platitudes). A clause is kept when
``p_keep = P(self) + P(relation)`` reaches the artefact's cross-validated threshold; its label is then
the likelier of ``self``/``relation``, else of ``third_party``/``none``.

One rule overrides a low score: a :func:`specific_statement` (I/we, no "you", no question, something
specific named) is ``self`` from ``p_keep >= SPECIFIC_FLOOR``. The model, trained on persona
sentences, under-rates such clauses ("I loved "Becoming Nicole" by Amy Ellis Nutt" 0.17, "We got
another cat named Bailey too" 0.10), and they are the ones a question asks about. The grammar
test (``aboutness``) still applies.

The weights live in ``models/facts.json`` (``python -m evaluation.facts_train``, with the provenance
of its training data); inference is a handful of dot products per clause.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LABELS = ("self", "relation", "third_party", "none")
KEEP_LABELS = ("self", "relation")
DEFAULT_PATH = Path(__file__).parent / "models" / "facts.json"

# The lexical features, in the order the model's weights expect them (each in [0, 1]).
FEATURES = (
    "first_subject",  # the clause opens with I / I'm / my ...
    "first_count",  # how many first-person singular words (capped at 4, scaled)
    "we_words",  # we / us / our
    "we_subject",  # the clause opens with we / our
    "second_person",  # you / your (capped at 3, scaled)
    "third_subject",  # opens with he / she / they / a name followed by a verb
    "question",  # has a "?"
    "exclaim",  # has a "!"
    "words",  # word count (capped at 30, scaled)
    "short",  # fewer than 4 words
    "has_number",  # a digit or a number word
    "proper_mid",  # a capitalised word after the first one (not "I")
    "greeting",  # hi / thanks / bye / congrats ...
    "future",  # will / gonna / planning / want to ...
    "past",  # past tense markers (-ed, irregular past, "ago", "yesterday", "last")
    "evaluative",  # awesome / amazing / cool ...
    "my_family",  # "my" + a family word
    "my_pet",  # "my" + a pet word
    "preference",  # love / like / enjoy / favorite ...
    "deictic_subject",  # opens with that / this / it / sounds ... (a reaction to what was said)
    "imperative",  # opens with don't / let's / remember ... (advice)
    "generic",  # life / everyone / people / always ... (platitudes)
    "caption",  # an image caption marker "[shares an image: ...]"
)

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_FIRST_SINGULAR = frozenset({"i", "i'm", "i've", "i'd", "i'll", "im", "ive", "me", "my", "mine", "myself"})
_FIRST_SUBJECT = frozenset({"i", "i'm", "i've", "i'd", "i'll", "im", "ive", "my", "me", "myself"})
_WE = frozenset({"we", "we're", "we've", "we'd", "we'll", "us", "our", "ours", "ourselves"})
_WE_SUBJECT = frozenset({"we", "we're", "we've", "we'd", "we'll", "our"})
_YOU = frozenset({"you", "your", "yours", "you're", "you've", "you'd", "you'll", "yourself", "u", "ya", "ur"})
_THIRD_PRONOUN = frozenset(
    {"he", "she", "they", "he's", "she's", "they're", "they've", "he'd", "she'd", "his", "her", "their", "them"}
)  # fmt: skip
_NAME_VERB = frozenset(
    {"is", "was", "has", "had", "and", "loves", "likes", "just", "said", "got", "went", "does", "did", "will",
     "can", "would", "really", "always", "never", "also", "works", "lives", "made", "told", "gave", "took"}
)  # fmt: skip
_NUMBER_WORDS = frozenset(
    {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
     "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "first", "second", "third", "dozen"}
)  # fmt: skip
_GREETING = frozenset(
    {"hi", "hello", "hey", "hiya", "thanks", "thank", "thx", "bye", "goodbye", "congrats", "congratulations",
     "ttyl", "cheers", "welcome", "morning", "evening", "night", "later", "care", "sorry", "glad"}
)  # fmt: skip
_FUTURE = frozenset(
    {"will", "gonna", "planning", "plan", "plans", "planned", "hope", "hoping", "want", "wanna", "next",
     "soon", "someday", "going", "i'll", "we'll", "intend", "thinking", "future", "goal", "dream"}
)  # fmt: skip
_PAST = frozenset(
    {"was", "were", "had", "did", "went", "got", "made", "took", "saw", "came", "found", "met", "bought",
     "left", "began", "gave", "told", "ran", "won", "lost", "felt", "knew", "thought", "wrote", "grew",
     "became", "ago", "yesterday", "last", "used", "once", "since"}
)  # fmt: skip
_EVALUATIVE = frozenset(
    {"awesome", "amazing", "cool", "great", "nice", "wow", "beautiful", "lovely", "wonderful", "fantastic",
     "incredible", "sweet", "stunning", "gorgeous", "impressive", "fun", "interesting", "cute", "perfect",
     "brilliant", "inspiring", "exciting", "super", "omg", "haha", "lol", "yay", "aww", "neat"}
)  # fmt: skip
_FAMILY = frozenset(
    {"mom", "mother", "mum", "dad", "father", "parents", "parent", "brother", "brothers", "sister", "sisters",
     "son", "sons", "daughter", "daughters", "kid", "kids", "children", "child", "husband", "wife", "partner",
     "boyfriend", "girlfriend", "fiance", "fiancee", "grandma", "grandmother", "grandpa", "grandfather",
     "grandparents", "family", "aunt", "uncle", "cousin", "cousins", "niece", "nephew", "baby", "twins",
     "spouse", "siblings", "sibling", "in-laws"}
)  # fmt: skip
_PETS = frozenset(
    {"dog", "dogs", "cat", "cats", "pet", "pets", "puppy", "kitten", "horse", "bird", "fish", "hamster",
     "rabbit", "bunny", "parrot", "turtle", "snake", "pup"}
)  # fmt: skip
_PREFERENCE = frozenset(
    {"love", "loves", "like", "likes", "enjoy", "enjoys", "favorite", "favourite", "prefer", "hate", "adore",
     "passion", "passionate", "fan", "into", "obsessed"}
)  # fmt: skip
_DEICTIC = frozenset(
    {"that", "that's", "this", "it", "it's", "those", "these", "there", "there's", "sounds", "looks", "what",
     "what's", "so", "yeah", "yes", "no", "oh", "ah", "well", "same", "totally", "true", "definitely"}
)  # fmt: skip
_IMPERATIVE = frozenset(
    {"don't", "let's", "remember", "keep", "try", "make", "go", "check", "take", "never", "always", "be",
     "enjoy", "have", "stay", "believe", "follow", "do", "dont", "lets"}
)  # fmt: skip
_GENERIC = frozenset(
    {"life", "everyone", "everybody", "people", "anyone", "someone", "always", "sometimes", "important",
     "world", "nothing", "everything", "whatever", "true"}
)  # fmt: skip
_STOP_CAPITAL = frozenset(
    {"the", "a", "an", "and", "but", "so", "or", "if", "when", "then", "this", "that", "it", "there", "what",
     "how", "why", "where", "who", "yes", "no", "oh", "well", "just", "also", "my", "your", "our", "i", "we",
     "you", "thanks", "hey", "hi", "wow", "great", "not", "after", "before", "last", "today", "yesterday"}
)  # fmt: skip
#: The lowest P(self) + P(relation) at which :func:`specific_statement` keeps a clause.
SPECIFIC_FLOOR = 0.08
#: The lowest P(self) + P(relation) at which a fact with no date, number or name is filed
#: (``memory.engine.clauses.anchored``): kept clauses just over the threshold that name nothing
#: ("Is feeling good and ready to give it their best") cost the tune trees about 110 words per
#: answerable question, four times their average, and lowered precision. Raised from 0.32: read on
#: conv-30/41/43, the values it drops are mostly such ("Is a part of a team", "Is excited to explore
#: the nature"); at 0.45 it also dropped "Our puppy is a beagle" (0.42).
VAGUE_FLOOR = 0.40
_QUOTED = re.compile(r"[\"\u201c][^\"\u201d]{2,60}[\"\u201d]")
_SPECIFIC_WORDS = frozenset(
    {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "twenty",
     "thirty", "forty", "fifty", "hundred", "thousand", "dozen", "once", "twice", "daily", "weekly",
     "monthly", "yearly"}
)  # fmt: skip
_CAPTION = re.compile(r"\[\s*shares? an image|^\s*\[|\b(?:a|an) (?:photo|picture|image) of\b", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
_PAST_ED = re.compile(r"^[a-z]{3,}ed$")


def _tokens(clause: str) -> list[str]:
    return _WORD.findall(clause.replace("\u2019", "'"))


def _names_after_first(raw: list[str], vocative: str | None = None) -> bool:
    """A capitalised word after the first that is not I/my..., a stop word or ``vocative``."""
    return any(
        t[:1].isupper()
        and t.lower() not in _FIRST_SINGULAR
        and t.lower() not in _STOP_CAPITAL
        and t != vocative
        for t in raw[1:]
    )


def lexical_features(clause: str) -> list[float]:
    """The hand-made features of one clause, in :data:`FEATURES` order, each in [0, 1]."""
    raw = _tokens(clause)
    low = [t.lower() for t in raw]
    n = len(low)
    first = low[0] if low else ""
    second = low[1] if n > 1 else ""
    lowset = set(low)
    first_count = sum(1 for t in low if t in _FIRST_SINGULAR)
    you_count = sum(1 for t in low if t in _YOU)
    name_subject = bool(
        raw and raw[0][:1].isupper() and "'" not in first and first not in _STOP_CAPITAL
        and first not in _FIRST_SUBJECT and first not in _DEICTIC and second in _NAME_VERB
    )  # fmt: skip
    pairs = list(zip(low, low[1:], strict=False))
    values = {
        "first_subject": first in _FIRST_SUBJECT,
        "first_count": min(first_count, 4) / 4,
        "we_words": bool(lowset & _WE),
        "we_subject": first in _WE_SUBJECT,
        "second_person": min(you_count, 3) / 3,
        "third_subject": first in _THIRD_PRONOUN or name_subject,
        "question": "?" in clause,
        "exclaim": "!" in clause,
        "words": min(n, 30) / 30,
        "short": n < 4,
        "has_number": bool(_DIGIT.search(clause)) or bool(lowset & _NUMBER_WORDS),
        "proper_mid": _names_after_first(raw),
        "greeting": bool(lowset & _GREETING),
        "future": bool(lowset & _FUTURE) or any(a == "going" and b == "to" for a, b in pairs),
        "past": bool(lowset & _PAST) or any(_PAST_ED.match(t) for t in low),
        "evaluative": bool(lowset & _EVALUATIVE),
        "my_family": any(a in ("my", "our") and b in _FAMILY for a, b in pairs),
        "my_pet": any(a in ("my", "our") and b in _PETS for a, b in pairs),
        "preference": bool(lowset & _PREFERENCE),
        "deictic_subject": first in _DEICTIC,
        "imperative": first in _IMPERATIVE,
        "generic": bool(lowset & _GENERIC),
        "caption": bool(_CAPTION.search(clause)),
    }
    return [float(values[name]) for name in FEATURES]


def specific_statement(clause: str) -> bool:
    """Does ``clause`` state something specific in the speaker's own voice? It opens with I/we (or
    my/our), has no "you" and no "?", is not an image caption, and holds a quoted title, a digit, a
    number or frequency word, or a capitalised word after the first that is not a vocative at its
    end ("..., Mel.")."""
    raw = _tokens(clause)
    low = [t.lower() for t in raw]
    if not low or "?" in clause or _CAPTION.search(clause):
        return False
    if low[0] not in _FIRST_SUBJECT and low[0] not in _WE_SUBJECT:
        return False
    if any(t in _YOU for t in low):
        return False
    if _QUOTED.search(clause) or _DIGIT.search(clause) or set(low) & _SPECIFIC_WORDS:
        return True
    trailing = re.search(r",\s*([A-Z][\w'-]*)[\s.!]*$", clause)
    return _names_after_first(raw, trailing.group(1) if trailing else None)


@dataclass(frozen=True, slots=True)
class FactVerdict:
    """The classifier's answer for one clause: its label and P(self) + P(relation)."""

    label: str
    p_keep: float


class FactClassifier:
    """Multinomial logistic regression over [clause vector + lexical features]; see the module doc."""

    def __init__(
        self,
        weights: Sequence[Sequence[float]],
        bias: Sequence[float],
        *,
        threshold: float,
        dim: int,
        labels: Sequence[str] = LABELS,
        features: Sequence[str] = FEATURES,
        provenance: dict | None = None,
    ) -> None:
        if tuple(labels) != LABELS:
            raise ValueError(f"labels must be {LABELS}, got {tuple(labels)}")
        if tuple(features) != FEATURES:
            raise ValueError("the artefact's lexical features differ from this code's FEATURES: retrain it")
        width = dim + len(FEATURES)
        if (
            len(weights) != len(LABELS)
            or any(len(row) != width for row in weights)
            or len(bias) != len(LABELS)
        ):
            raise ValueError(f"weights must be {len(LABELS)} x {width} and bias {len(LABELS)}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        self.dim = dim
        self.threshold = float(threshold)
        self.provenance = dict(provenance or {})
        self._weights = tuple(tuple(float(w) for w in row) for row in weights)
        self._bias = tuple(float(b) for b in bias)

    @classmethod
    def from_dict(cls, data: dict) -> FactClassifier:
        return cls(
            data["weights"],
            data["bias"],
            threshold=data["threshold"],
            dim=data["dim"],
            labels=data.get("labels", LABELS),
            features=data.get("features", FEATURES),
            provenance=data.get("provenance"),
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> FactClassifier:
        """The classifier stored at ``path``; None: the shipped artefact (loaded once, then shared)."""
        if path is not None:
            return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
        global _DEFAULT
        with _LOCK:
            if _DEFAULT is None:
                _DEFAULT = cls.from_dict(json.loads(DEFAULT_PATH.read_text(encoding="utf-8")))
            return _DEFAULT

    def lexical(self, clause: str) -> list[float]:
        """The hand-made features of ``clause`` (:func:`lexical_features`)."""
        return lexical_features(clause)

    def probabilities(self, clause: str, vector: Sequence[float]) -> list[float]:
        """P(label) for each of :data:`LABELS`."""
        if len(vector) != self.dim:
            raise ValueError(f"expected a vector of {self.dim} floats, got {len(vector)}")
        x = [float(v) for v in vector]
        x.extend(lexical_features(clause))
        logits = [
            b + math.fsum(w * v for w, v in zip(row, x, strict=True))
            for row, b in zip(self._weights, self._bias, strict=True)
        ]
        top = max(logits)
        exps = [math.exp(z - top) for z in logits]
        total = sum(exps)
        return [e / total for e in exps]

    def classify(
        self,
        clauses: Sequence[str],
        vectors: Sequence[Sequence[float]],
        specific: Sequence[bool] | None = None,
    ) -> list[FactVerdict]:
        """One verdict per clause; ``vectors[i]`` is clause i's unit MiniLM vector. ``specific[i]``:
        a parser read clause i as specific ("Pizza is my favourite food"), which counts like
        :func:`specific_statement`."""
        if len(clauses) != len(vectors):
            raise ValueError(f"{len(clauses)} clauses but {len(vectors)} vectors")
        verdicts = []
        for k, (clause, vector) in enumerate(zip(clauses, vectors, strict=True)):
            p = dict(zip(LABELS, self.probabilities(clause, vector), strict=True))
            p_keep = p["self"] + p["relation"]
            if p_keep >= self.threshold:
                label = "self" if p["self"] >= p["relation"] else "relation"
            elif p_keep >= SPECIFIC_FLOOR and (
                (specific is not None and specific[k]) or specific_statement(clause)
            ):
                label = "self"
            else:
                label = "third_party" if p["third_party"] > p["none"] else "none"
            verdicts.append(FactVerdict(label, p_keep))
        return verdicts


_LOCK = threading.Lock()
_DEFAULT: FactClassifier | None = None
