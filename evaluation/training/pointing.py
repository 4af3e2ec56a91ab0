"""Rebuilding the pointing prompt (``memlistener-pointing/4``) of a past chunk.

The pointing prompt lists the chunk's candidate leaves, which :class:`.cosine.PointingStep`
chooses by embedding the user's sentences and every leaf of the schema. Rebuilding it therefore
needs an embedder and the candidate settings (``k``, threshold), which ``export_training_data``
takes as arguments (``--candidate-k``, ``--candidate-threshold``, ``--embedder``); the product's
listener builds its candidates with the fact pipeline instead (``serving.facts.FactStep``). The
audit log does not record the candidates or the settings a past call used, so a rebuilt prompt
equals the original only with the settings and embedder that call ran with; the exporter says so
in each example's ``prompt_note``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from evaluation.training.cosine import CandidateSettings, LeafIndex, PointingStep
from memory.engine.candidates import Candidate, Candidates, UserSentence
from memory.engine.ops import Op
from memory.engine.pointing import ops_from_pointers
from memory.engine.schema import Schema
from memory.engine.tree import Tree
from serving.embedder import Embed
from serving.engines.base import Prompt
from serving.listener import read_pointer_items
from serving.prompt import build_pointing_prompt

PointingBuilder = Callable[
    [Schema, Mapping[str, str], Sequence[Mapping[str, str]]], tuple[Prompt | None, str]
]


def pointing_prompt_builder(embed: Embed, settings: CandidateSettings) -> PointingBuilder:
    """``build(schema, tree, turns) -> (prompt, "")``, or ``(None, why)`` when the listener would
    have made no model call for the chunk."""
    step = PointingStep(LeafIndex(embed), settings)

    def build(schema: Schema, tree: Mapping[str, str], turns: Sequence[Mapping[str, str]]):
        context = step.prepare(schema, Tree(dict(tree)), [dict(t) for t in turns])
        if context.skip_reason:
            return None, context.skip_reason
        return build_pointing_prompt(context, dict(tree), turns), ""

    return build


def context_json(context) -> dict:
    """What the reward needs to map a pointing reply to ops without the embedder: the numbered
    sentences, the candidate slots (id, path, value shown) and their budgets."""
    return {
        "sentences": [[s.id, s.text, s.turn] for s in context.sentences],
        "slots": [[c.id, c.path, c.value] for c in context.candidates.leaves],
        "budgets": {c.path: context.budgets[c.path] for c in context.candidates.leaves},
    }


def reply_ops(text: str, pointing: Mapping, tree: Mapping[str, str]) -> tuple[list[Op] | None, int]:
    """(ops, unreadable items) of a pointing reply, mapped as the listener maps it
    (``serving.listener.pointer_ops``); ops None when the reply is not ``{"ops": [...]}`` or no
    item could be read. ``{"ops": []}`` is the listener's NO_OP."""
    try:
        items = read_pointer_items(text)
    except ValueError:
        return None, 0
    sentences = [UserSentence(int(i), str(t), int(turn)) for i, t, turn in pointing["sentences"]]
    slots = tuple(Candidate(int(i), str(path), 0.0, value) for i, path, value in pointing["slots"])
    ops, errors = ops_from_pointers(
        items, sentences, Candidates(slots, {}), dict(tree), dict(pointing.get("budgets") or {})
    )
    if not ops and not errors:
        return [Op.no_op()], 0
    return (ops or None), len(errors)
