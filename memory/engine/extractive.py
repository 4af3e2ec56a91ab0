"""The extractive listener: no language model, the floor every model must beat.

For one chunk it writes pointer items (:mod:`memory.engine.pointing`) by rule:

- each self-disclosing user sentence (:func:`memory.engine.candidates.is_self_disclosure`) goes
  to its best candidate leaf as :func:`memory.engine.clauses.third_person` of the sentence;
- a retraction ("please forget the half marathon", "I no longer ...") names the filled candidate
  leaf whose value shares the most salient words with it, as a DELETE (the pointer mapping then
  removes just the named clauses);
- one item per leaf: when several sentences pick one leaf, the best-scoring sentence wins;
- nothing self-disclosing: ``NO_OP``.

It is deterministic, takes milliseconds, and every value it writes is a trimmed copy of the
user's words, so it is grounded by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .candidates import Candidates, UserSentence, is_retraction, is_self_disclosure, salient
from .clauses import third_person, trim
from .text import content_stems

__all__ = ["extractive_pointers"]


def extractive_pointers(
    sentences: Sequence[UserSentence],
    candidates: Candidates,
    budgets: Mapping[str, int],
    *,
    min_words: int = 2,
) -> list[dict]:
    """Pointer items for one chunk (see the module docstring)."""
    ids = {c.path: c.id for c in candidates.leaves}
    chosen: dict[str, tuple[float, dict]] = {}
    for sentence in sentences:
        if not is_self_disclosure(sentence.text):
            continue
        if is_retraction(sentence.text):
            names = salient(sentence.text)
            scored = [
                (len(names & content_stems(c.value or "")), c)
                for c in candidates.leaves
                if c.value is not None
            ]
            hits = [(n, c) for n, c in scored if n > 0]
            if hits:
                _, leaf = max(hits, key=lambda t: (t[0], t[1].score))
                item = {"op": "DELETE", "sentence": sentence.id, "leaf": leaf.id, "value": None}
                chosen[leaf.path] = (float("inf"), item)
                continue
        best = candidates.best_leaf.get(sentence.id)
        if best is None or best[0] not in ids:
            continue
        path, score = best
        clause = trim(third_person(sentence.text), budgets.get(path, 80))
        if len(content_stems(clause)) < min_words:
            continue
        if path in chosen and chosen[path][0] >= score:
            continue
        chosen[path] = (score, {"op": "ADD", "sentence": sentence.id, "leaf": ids[path], "value": clause})
    items = [item for _, item in sorted(chosen.values(), key=lambda t: t[1]["sentence"])]
    return items or [{"op": "NO_OP", "sentence": None, "leaf": None, "value": None}]
