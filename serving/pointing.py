"""The pointing pipeline: candidate leaves by embedding, a prompt that points, ids mapped back.

For one job (``PointingStep.prepare``):

1. the subject's sentences of the chunk are numbered (``memory.engine.candidates.user_sentences``);
2. they are embedded with the shipped embedder and scored against every leaf of the schema
   (``LeafIndex``: path + description, embedded once per schema id, version and document digest);
3. ``select_candidates`` keeps the chunk's few candidate leaves; when none passes, the chunk is a
   ``NO_OP`` with no model call (``PointingContext.skip_reason``);
4. the prompt (``serving.prompt.build_pointing_prompt``) lists the numbered sentences and the
   candidates under short ids with their current values; the output schema's ids are enums of
   this chunk only.

After generation, ``PointingStep.items`` reads the JSON and ``PointingStep.ops`` maps ids back to paths and sentences
(``memory.engine.pointing.ops_from_pointers``); the listener then gates the ops (grounding on).
"""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from memory.engine.candidates import (
    Candidates,
    CandidateSettings,
    UserSentence,
    is_retraction,
    is_self_disclosure,
    leaf_text,
    lexical_bonus,
    retraction_targets,
    select_candidates,
    user_sentences,
)
from memory.engine.pointing import ops_from_pointers
from memory.engine.schema import Schema, document_digest
from memory.engine.tree import Tree
from serving.facts import FactStep, PlacedFact

Embed = Callable[[Sequence[str]], "object"]  # texts -> (n, dim) unit vectors (numpy)


@dataclass(frozen=True)
class PointingContext:
    sentences: tuple[UserSentence, ...]
    candidates: Candidates
    budgets: dict[str, int]
    skip_reason: str = ""
    #: The fact pipeline's decisions (``serving.facts``): kept clause id -> verdict and leaves;
    #: empty when the step runs without it (whole sentences, candidates by cosine alone).
    facts: Mapping[int, PlacedFact] = field(default_factory=dict)
    singles: frozenset[str] = frozenset()  # leaves holding one current state (replaced, not appended)
    tree: Mapping[str, str] = field(default_factory=dict)  # the subject's tree the chunk is read against


@functools.lru_cache(maxsize=64)
def schema_fingerprint(schema: Schema) -> str:
    """A digest of what a schema's leaves are (paths, descriptions, budgets, tiers), for callers
    that hold a parsed schema but not its document's digest."""
    return document_digest([[leaf.path, leaf.description, leaf.budget, leaf.tier] for leaf in schema.leaves])


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


def default_embed(kind: str = "minilm", path: str = "") -> Embed:
    """The shipped embedder (all-MiniLM-L6-v2 by default), loaded on first use."""

    def embed(texts: Sequence[str]):
        from serving.embedder import get_embedder

        return get_embedder(kind, path).embed(texts)

    return embed


class PointingStep:
    """``facts``: the fact pipeline (clauses, classifier, placer: the product's default); None:
    whole sentences and candidates by cosine alone (kept for tests of the pointing mechanics)."""

    def __init__(self, index: LeafIndex, settings: CandidateSettings, facts: FactStep | None = None) -> None:
        self.index = index
        self.settings = settings
        self.facts = facts

    def prepare(
        self, schema: Schema, tree: Tree, turns: Sequence[dict], *, digest: str | None = None
    ) -> PointingContext:
        """``digest``: the schema document's (:class:`LeafIndex` keys its vectors by it)."""
        budgets = {leaf.path: leaf.budget for leaf in schema.leaves}
        if self.facts is not None:
            return self._prepare_facts(schema, tree, turns, budgets, digest)
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
        """Analyse many chunks' turns ahead in one go (:meth:`FactStep.prefetch`); :meth:`prepare`
        then does only what depends on the tree. Without the fact pipeline: nothing (0)."""
        if self.facts is None:
            return 0
        return self.facts.prefetch(schema, turns_list, digest or schema_fingerprint(schema))

    def _prepare_facts(self, schema, tree, turns, budgets, digest) -> PointingContext:
        assert self.facts is not None
        snapshot = tree.to_dict()
        key = digest or schema_fingerprint(schema)
        units, candidates, facts = self.facts.prepare(schema, snapshot, turns, key)
        singles = frozenset(leaf.path for leaf in schema.leaves if getattr(leaf, "single", False))
        skip = ""
        if not units:
            skip = "no model call: no user turn"
        elif candidates.empty:
            skip = "no model call: no clause states a lasting fact about the user"
        return PointingContext(units, candidates, budgets, skip, facts, singles, snapshot)

    @staticmethod
    def items(text: str) -> list:
        """The op items of the model's JSON reply; raises ValueError when it is not ``{"ops": [...]}``."""
        data = json.loads(text)
        items = data.get("ops") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ValueError('expected {"ops": [...]}')
        return items

    @staticmethod
    def ops(items: list, context: PointingContext, tree: Tree):
        """(ops, errors) of parsed items; errors in the parser's ``{line_no, line, message}`` shape."""
        ops, errors = ops_from_pointers(
            items, context.sentences, context.candidates, tree.to_dict(), context.budgets, context.singles
        )
        return ops, [{"line_no": 0, "line": e.item, "message": e.message} for e in errors]
