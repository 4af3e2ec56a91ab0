"""Labelling the fact classifier's training clauses (see ``evaluation.facts_train`` for the rules):
``self`` / ``relation`` when a clause states one of its turn's observations or persona sentences,
ambiguous ones left out, the rest by reliable cues (``third_party``, ``relation``) or ``none``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from evaluation.facts_data import (
    FIRST,
    RELATION,
    THIRD_SUBJECT,
    WE,
    Example,
    Turn,
    is_caption,
    neutral_clause,
    neutral_observation,
)

POSITIVE_COS = 0.5  # any clause of an evidence turn this close to one of its observations
BEST_COS = 0.3  # the best clause of the turn for an observation, if at least this close
AMBIGUOUS_COS = 0.35  # evidence-turn clauses in [AMBIGUOUS_COS, POSITIVE_COS) are left out
SPC_COS = 0.6
SPC_AMBIGUOUS_COS = 0.5  # a first-person SPC statement in [0.5, 0.6) is left out


def texts_to_embed(turns: Sequence[Turn]) -> list[str]:
    """Every text the labelling and the model need, once, sorted."""
    texts: set[str] = set()
    for turn in turns:
        texts.update(turn.clauses)
        if turn.source == "locomo" and turn.references:
            texts.update(neutral_clause(c, turn.speaker) for c in turn.clauses)
            texts.update(neutral_observation(r, turn.speaker) for r in turn.references)
        elif turn.source == "spc":
            texts.update(turn.references)
    return sorted(texts)


def _cue_label(clause: str) -> str:
    """The label of a clause no observation or persona sentence matched: reliable cues, else none."""
    if is_caption(clause) or "?" in clause:
        return "none"
    if THIRD_SUBJECT.match(clause) and not FIRST.search(clause) and not WE.search(clause):
        return "third_party"
    if RELATION.search(clause):
        return "relation"
    return "none"


def label_turn(turn: Turn, vec: Callable[[str], np.ndarray]) -> list[Example]:
    """The labelled clauses of one turn (ambiguous ones left out); see the module doc for the rules."""
    out: list[Example] = []
    if turn.source == "spc":
        refs = np.stack([vec(r) for r in turn.references]) if turn.references else None
        for clause in turn.clauses:
            best = float((refs @ vec(clause)).max()) if refs is not None else 0.0
            if "?" in clause:
                label = "none"
            elif best >= SPC_COS:
                label = "self"
            elif best >= SPC_AMBIGUOUS_COS and FIRST.search(clause):
                continue
            else:
                label = "none"
            out.append(Example(clause, label, turn.source, turn.group))
        return out
    if not turn.references:
        return [Example(c, _cue_label(c), turn.source, turn.group) for c in turn.clauses]
    obs = np.stack([vec(neutral_observation(r, turn.speaker)) for r in turn.references])
    sims = np.stack([obs @ vec(neutral_clause(c, turn.speaker)) for c in turn.clauses])  # clauses x obs
    usable = np.array([not is_caption(c) and "?" not in c for c in turn.clauses])
    best_of: set[int] = set()
    if usable.any():
        masked = np.where(usable[:, None], sims, -np.inf)
        for j in range(obs.shape[0]):
            i = int(masked[:, j].argmax())
            if masked[i, j] >= BEST_COS and (FIRST.search(turn.clauses[i]) or WE.search(turn.clauses[i])):
                best_of.add(i)
    other_first = turn.other.split()[0].lower() if turn.other.split() else ""
    for i, clause in enumerate(turn.clauses):
        score = float(sims[i].max())
        if usable[i] and (i in best_of or score >= POSITIVE_COS):
            matched = turn.references[int(sims[i].argmax())]
            names_other = bool(other_first) and re.search(rf"\b{re.escape(other_first)}\b", matched.lower())
            if names_other and WE.search(clause) and not RELATION.search(clause):
                continue  # about both speakers, but not a stated relation: left out
            label = "relation" if names_other and RELATION.search(clause) else "self"
        elif usable[i] and score >= AMBIGUOUS_COS:
            continue
        else:
            label = _cue_label(clause)
        out.append(Example(clause, label, turn.source, turn.group))
    return out


def label_all(turns: Sequence[Turn], vectors: dict[str, np.ndarray]) -> list[Example]:
    examples: list[Example] = []
    for turn in turns:
        examples.extend(label_turn(turn, vectors.__getitem__))
    return examples
