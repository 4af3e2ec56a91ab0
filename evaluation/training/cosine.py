"""The pointing context by cosine alone: whole user sentences, candidate leaves by embedding.

The product's listener builds its context with the fact pipeline (``serving.facts.FactStep``).
This step builds the same :class:`~serving.facts.PointingContext` without it, for rebuilding the
pointing prompts of past chunks (:mod:`.pointing`) and as a cheap, deterministic context step for
tests of the listener (``MemListener(engine, pointing=PointingStep(...))``):

1. the subject's sentences of the chunk are numbered (:func:`user_sentences`);
2. they are embedded and scored against every leaf of the schema (:class:`LeafIndex`: path +
   description, embedded once per schema id, version and document digest), plus a small bonus
   when a sentence names a leaf outright (:func:`lexical_bonus`);
3. :func:`select_candidates` keeps the chunk's few candidate leaves: per self-disclosing sentence
   its ``per_sentence`` best leaves at or above ``threshold``; then the ``k`` best of those, plus
   every filled leaf scoring at or above ``filled_threshold`` (so an UPDATE can find the leaf it
   changes) and the filled leaves a retraction names; when none passes, the chunk is a ``NO_OP``
   with no model call (``PointingContext.skip_reason``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from memory.engine.candidates import (
    Candidate,
    Candidates,
    UserSentence,
    is_retraction,
    is_self_disclosure,
    leaf_text,
    retraction_targets,
)
from memory.engine.schema import Schema
from memory.engine.text import content_stems, split_sentences
from memory.engine.tree import Tree
from serving.embedder import Embed
from serving.facts import PointingContext, schema_fingerprint

__all__ = [
    "CandidateSettings",
    "LeafIndex",
    "PointingStep",
    "lexical_bonus",
    "select_candidates",
    "user_sentences",
]


@dataclass(frozen=True, slots=True)
class CandidateSettings:
    k: int = 8
    per_sentence: int = 3
    threshold: float = 0.30
    filled_threshold: float = 0.30


def user_sentences(turns: Sequence[Mapping[str, str]], role: str = "user") -> list[UserSentence]:
    """Every sentence of the ``role`` turns, numbered from 1 in order."""
    out: list[UserSentence] = []
    for i, turn in enumerate(turns):
        if turn.get("role") != role:
            continue
        for sentence in split_sentences(turn.get("content") or ""):
            out.append(UserSentence(len(out) + 1, sentence, i))
    return out


def select_candidates(
    sentences: Sequence[UserSentence],
    paths: Sequence[str],
    scores: Sequence[Sequence[float]],
    tree: Mapping[str, str],
    settings: CandidateSettings = CandidateSettings(),
    *,
    eligible: Sequence[bool] | None = None,
    extra: Sequence[str] = (),
) -> Candidates:
    """Candidates from ``scores[i][j]`` = similarity of sentence ``i`` and leaf ``paths[j]``.

    ``eligible[i]`` (default all) says which sentences may nominate leaves; ``extra`` paths (e.g.
    :func:`memory.engine.candidates.retraction_targets`) are always candidates."""
    best_per_leaf: dict[str, float] = {}
    best_leaf: dict[int, tuple[str, float]] = {}
    ranked_leaves: dict[int, list[tuple[str, float]]] = {}
    for i, sentence in enumerate(sentences):
        if eligible is not None and not eligible[i]:
            continue
        row = scores[i]
        top = sorted(range(len(paths)), key=lambda j: (-row[j], paths[j]))[: settings.per_sentence]
        for rank, j in enumerate(top):
            if row[j] < settings.threshold:
                break
            if rank == 0:
                best_leaf[sentence.id] = (paths[j], float(row[j]))
            ranked_leaves.setdefault(sentence.id, []).append((paths[j], float(row[j])))
            best_per_leaf[paths[j]] = max(best_per_leaf.get(paths[j], -1.0), float(row[j]))
    chosen = sorted(best_per_leaf.items(), key=lambda kv: (-kv[1], kv[0]))[: settings.k]
    chosen_paths = {p for p, _ in chosen}
    if chosen:  # filled leaves that match the chunk, so an UPDATE/DELETE can name them
        for j, path in enumerate(paths):
            if path in tree and path not in chosen_paths:
                score = max((float(scores[i][j]) for i in range(len(sentences))), default=-1.0)
                if score >= settings.filled_threshold:
                    chosen.append((path, score))
                    chosen_paths.add(path)
    for path in extra:
        if path not in chosen_paths and path in paths:
            j = list(paths).index(path)
            chosen.append((path, max((float(scores[i][j]) for i in range(len(sentences))), default=0.0)))
            chosen_paths.add(path)
    chosen.sort(key=lambda kv: (-kv[1], kv[0]))
    leaves = tuple(
        Candidate(n, path, round(score, 4), tree.get(path)) for n, (path, score) in enumerate(chosen, 1)
    )
    kept = {c.path for c in leaves}
    ranked = {sid: tuple(pl for pl in pls if pl[0] in kept) for sid, pls in ranked_leaves.items()}
    return Candidates(leaves, best_leaf, ranked)


LEXICAL_BONUS = 0.2


@lru_cache(maxsize=4096)
def path_stems(path: str) -> frozenset[str]:
    """Stems of a leaf's own name ("identity/relationships/partner" -> partner; ".../screen_time" ->
    screen, tim): a sentence that names the slot outright is a strong sign it belongs there."""
    return frozenset(content_stems(path.rsplit("/", 1)[-1].replace("_", " ")))


_INTRODUCTION = re.compile(
    r"^(?:\W*\w+[!,.]\s+)?(?:i'm|i am|my name is|call me)\s+[A-Z][\w'-]*[.!]?$", re.IGNORECASE
)


def lexical_bonus(sentence: str, paths: Sequence[str]) -> list[float]:
    """Per leaf, ``LEXICAL_BONUS`` when the sentence holds every stem of the leaf's name, else 0;
    a self-introduction ("I'm Maya.", "my name is Jon") goes to the name leaf."""
    stems = content_stems(sentence)
    intro = bool(_INTRODUCTION.match(sentence.strip())) and sentence.strip().split()[-1][:1].isupper()
    return [
        2 * LEXICAL_BONUS if intro and p.endswith("/full_name")
        else LEXICAL_BONUS if (names := path_stems(p)) and names <= stems
        else 0.0
        for p in paths
    ]  # fmt: skip


class LeafIndex:
    """Leaf vectors per (schema id, version, digest), computed once; sentence x leaf scores: cosine
    plus :func:`lexical_bonus`.

    The digest is part of the key because ids are per tenant: two tenants' ``tutor-profile`` v1 may
    have different leaves. ``digest`` is the document's (the listener passes it); None: the
    schema's :func:`~serving.facts.schema_fingerprint`."""

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
    """Candidates by cosine (and the lexical bonus) over whole self-disclosing sentences; a
    ``serving.listener.ContextStep``."""

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
