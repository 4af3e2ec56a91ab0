"""The pointing context by cosine alone: whole user sentences, candidate leaves by embedding.

The product's listener builds its context with the fact pipeline (``serving.facts.FactStep``).
This step builds the same :class:`~serving.facts.PointingContext` without it, for the training
prompts (``evaluation.training.pointing``) and the tests of the pointing mechanics; the listener
takes either (``PointingStep.prepare``):

1. the subject's sentences of the chunk are numbered (``memory.engine.candidates.user_sentences``);
2. they are embedded and scored against every leaf of the schema (``LeafIndex``: path +
   description, embedded once per schema id, version and document digest);
3. ``select_candidates`` keeps the chunk's few candidate leaves; when none passes, the chunk is a
   ``NO_OP`` with no model call (``PointingContext.skip_reason``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from memory.engine.candidates import (
    Candidates,
    CandidateSettings,
    is_retraction,
    is_self_disclosure,
    leaf_text,
    lexical_bonus,
    retraction_targets,
    select_candidates,
    user_sentences,
)
from memory.engine.schema import Schema, document_digest
from memory.engine.tree import Tree
from serving.embedder import Embed
from serving.facts import PointingContext, schema_fingerprint

__all__ = ["LeafIndex", "PointingStep", "document_digest", "schema_fingerprint"]


class LeafIndex:
    """Leaf vectors per (schema id, version, digest), computed once; sentence x leaf scores: cosine
    plus a small bonus when the sentence names the leaf outright (``lexical_bonus``).

    The digest is part of the key because ids are per tenant: two tenants' ``tutor-profile`` v1 may
    have different leaves. ``digest`` is the document's (the listener passes it); None: the
    schema's :func:`schema_fingerprint`."""

    #: Schemas whose vectors are kept (least recently used dropped first): tenants bring their own.
    MAX_SCHEMAS = 64

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._leaves: OrderedDict[tuple[str, int, str], tuple[list[str], object]] = OrderedDict()
        self._lock = threading.Lock()

    def leaves(self, schema: Schema, digest: str | None = None):
        key = (schema.id, schema.version, schema_fingerprint(schema) if digest is None else digest)
        with self._lock:
            if key in self._leaves:
                self._leaves.move_to_end(key)
            else:
                paths = [leaf.path for leaf in schema.leaves]
                vectors = self._embed([leaf_text(leaf.path, leaf.description) for leaf in schema.leaves])
                self._leaves[key] = (paths, vectors)
                while len(self._leaves) > self.MAX_SCHEMAS:
                    self._leaves.popitem(last=False)
            return self._leaves[key]

    def scores(
        self, schema: Schema, texts: Sequence[str], digest: str | None = None
    ) -> tuple[list[str], list[list[float]]]:
        paths, leaf_vectors = self.leaves(schema, digest)
        if not texts:
            return paths, []
        vectors = self._embed(list(texts))
        cosine = (vectors @ leaf_vectors.T).tolist()
        bonus = [lexical_bonus(t, paths) for t in texts]
        return paths, [
            [c + b for c, b in zip(row, extra, strict=True)] for row, extra in zip(cosine, bonus, strict=True)
        ]


class PointingStep:
    """Candidates by cosine (and the lexical bonus) over whole self-disclosing sentences."""

    def __init__(self, index: LeafIndex, settings: CandidateSettings) -> None:
        self.index = index
        self.settings = settings

    def prepare(
        self, schema: Schema, tree: Tree, turns: Sequence[dict], *, digest: str | None = None
    ) -> PointingContext:
        """``digest``: the schema document's (:class:`LeafIndex` keys its vectors by it)."""
        budgets = {leaf.path: leaf.budget for leaf in schema.leaves}
        sentences = tuple(user_sentences(turns))
        eligible = [is_self_disclosure(s.text) or is_retraction(s.text) for s in sentences]
        if not any(eligible):
            reason = "no user sentence states a fact about the user" if sentences else "no user turn"
            return PointingContext(sentences, Candidates((), {}), budgets, f"no model call: {reason}")
        paths, scores = self.index.scores(schema, [s.text for s in sentences], digest)
        snapshot = tree.to_dict()
        candidates = select_candidates(
            sentences, paths, scores, snapshot, self.settings, eligible=eligible,
            extra=retraction_targets(sentences, snapshot),
        )  # fmt: skip
        skip = ""
        if candidates.empty:
            skip = f"no model call: no candidate leaf scored >= {self.settings.threshold:.2f}"
        return PointingContext(sentences, candidates, budgets, skip)

    def prefetch(
        self, schema: Schema, turns_list: Sequence[Sequence[dict]], *, digest: str | None = None
    ) -> int:
        """Nothing to do ahead without the fact pipeline (0 chunks)."""
        return 0
