"""Scorers: multiple-choice option extraction (PersonaMem) and per-category QA scoring (LoCoMo).

Multiple choice — `extract_choice(text, options)` reads the model's free text by these rules,
in order; the first rule that decides wins:

1. no text (failed call, timeout, empty output) -> no choice (`rule="failed"`);
2. a JSON object with an `answer`/`choice`/`option` field -> that field, read by rules 3-7;
3. the whole reply is one letter, bare or bracketed ("c", "(C)", "c.", "c)") -> that letter;
4. an explicit phrase "answer/option/choice is|: (x)" -> the first such letter;
5. bracketed letters "(x)" anywhere: exactly one distinct letter -> it; several -> ambiguous;
6. the reply starts with "x)" or "x." -> that letter;
7. the reply contains the full text of exactly one option (case and spacing ignored) -> it.

Otherwise there is no choice (`rule="unparsed"` or `"ambiguous"`). No choice is scored wrong
and counted apart: a failed or unreadable call is never turned into a default letter.

LoCoMo QA — `score_locomo(prediction, qa)`: answers are normalised (lower case, punctuation
and the articles a/an/the removed, spaces collapsed) and compared by token F1 (SQuAD style):
- category 1 (multi-hop): the gold answer is split on commas into parts; each gold part takes
  its best F1 against the comma-split prediction parts; the score is their mean;
- category 2 (temporal), 4 (single-hop): token F1 against the gold answer;
- category 3 (open-domain): the gold is split on ";" into alternatives; the best F1 counts;
- category 5 (adversarial / unanswerable): 1.0 when the prediction abstains (see
  `ABSTENTION_PATTERNS`), else 0.0 — stating the adversarial answer is wrong.
A failed call scores 0 in every category (also in category 5). `correct` is `score >= 0.5`.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.datasets.locomo import LocomoQA
from evaluation.datasets.personamem import LETTERS

# --- multiple choice -------------------------------------------------------------------------

_L = "".join(LETTERS)
_BARE = re.compile(rf"^\W*\(?\s*([{_L}])\s*\)?\W*$", re.IGNORECASE)
_PHRASE = re.compile(
    rf"\b(?:answer|option|choice)\s*(?:is|would be|:|=)?\s*[:\-]?\s*\(?\s*([{_L}])\s*\)?(?![a-z])",
    re.IGNORECASE,
)
_BRACKETED = re.compile(rf"\(\s*([{_L}])\s*\)", re.IGNORECASE)
_LEADING = re.compile(rf"^\s*([{_L}])\s*[).:]", re.IGNORECASE)
_JSON_KEYS = ("answer", "choice", "option")


@dataclass(frozen=True)
class Choice:
    letter: str | None
    rule: str  # failed | bare | phrase | bracketed | leading | option_text | ambiguous | unparsed


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def extract_choice(text: str | None, options: Sequence[str] = ()) -> Choice:
    if text is None or not text.strip():
        return Choice(None, "failed")
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            for key in _JSON_KEYS:
                if isinstance(obj.get(key), str):
                    return extract_choice(obj[key], options)
    if m := _BARE.match(stripped):
        return Choice(m.group(1).lower(), "bare")
    if m := _PHRASE.search(stripped):
        return Choice(m.group(1).lower(), "phrase")
    bracketed = {x.lower() for x in _BRACKETED.findall(stripped)}
    if len(bracketed) == 1:
        return Choice(bracketed.pop(), "bracketed")
    if len(bracketed) > 1:
        return Choice(None, "ambiguous")
    if m := _LEADING.match(stripped):
        return Choice(m.group(1).lower(), "leading")
    reply = _squash(stripped)
    hits = [
        letter for letter, opt in zip(LETTERS, options, strict=False) if opt.strip() and _squash(opt) in reply
    ]
    if len(hits) == 1:
        return Choice(hits[0], "option_text")
    return Choice(None, "ambiguous" if hits else "unparsed")


# --- LoCoMo QA ---------------------------------------------------------------------------------

ABSTENTION_PATTERNS = re.compile(
    r"not (?:been )?(?:mentioned|stated|specified|discussed|provided|known|answerable|available)"
    r"|no (?:information|mention|record|evidence|details?)"
    r"|(?:cannot|can't|can not|unable to) (?:be )?(?:answer|determine|tell|know|say|find)"
    r"|(?:don't|do not|does not|doesn't) (?:know|say|mention)"
    r"|unanswerable|unknown|not enough information|insufficient information|none mentioned",
    re.IGNORECASE,
)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalise_answer(text: str) -> str:
    text = str(text).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalise_answer(prediction).split(), normalise_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def is_abstention(text: str) -> bool:
    return bool(ABSTENTION_PATTERNS.search(text or ""))


@dataclass(frozen=True)
class QAScore:
    score: float
    correct: bool
    failed: bool


def score_locomo(prediction: str | None, qa: LocomoQA) -> QAScore:
    if prediction is None or not prediction.strip():
        return QAScore(0.0, False, True)
    if qa.category == 5:
        s = 1.0 if is_abstention(prediction) else 0.0
    elif qa.category == 1:
        golds = [g for g in (qa.answer or "").split(",") if g.strip()] or [qa.answer or ""]
        preds = [p for p in prediction.split(",") if p.strip()]
        s = sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)
    elif qa.category == 3:
        s = max(token_f1(prediction, g) for g in (qa.answer or "").split(";"))
    else:
        s = token_f1(prediction, qa.answer or "")
    return QAScore(round(s, 6), s >= 0.5, False)
