"""The fact pipeline's model-side step: clauses embedded once, classified and placed.

For one chunk (``FactStep.prepare``), everything here is deterministic:

1. every user turn is cut into clauses (``memory.engine.segment``), numbered from 1 in chunk order;
   each keeps its source sentence and its message's timestamp;
2. every user turn is parsed once (``serving.syntax``, spaCy) and
   :func:`memory.engine.aboutness.judge` keeps finite statements whose subject is the speaker or the
   speaker's (a pronoun subject the turn named as the speaker's is written out first);
3. the clauses the grammar keeps (about a third) are embedded with the shipped MiniLM in one call,
   and the trained fact classifier (``memory.engine.facts``) says which of them are lasting facts
   about the user (kept) and which are small talk, questions or someone else's story (dropped);
   the others need neither, as the grammar drops them whatever the classifier would say;
4. the leaf placer (``memory.engine.placement``: cosine prior over each leaf's description and
   examples, a trained leaf head, alias matches) ranks the leaves for every kept clause; a clause
   no leaf fits well enough is not filed;
5. the candidates shown to a model are the kept clauses' leaves plus the filled leaves a
   retraction in the chunk names.

The result is a :class:`PointingContext` whose ``facts`` map each kept clause to its verdict and
leaves: the extractive engine writes from it alone, a language model gets the numbered clauses and
candidates in its prompt (``serving.prompt.build_pointing_prompt``). The listener asks this step
for it directly (:meth:`FactStep.prepare`); ``evaluation.training.cosine`` builds the same context by
cosine alone, without the fact pipeline (training prompts, tests of the pointing mechanics).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from memory.engine.aboutness import ClauseSyntax, judge, resolve
from memory.engine.candidates import Candidate, Candidates, UserSentence, retraction_targets
from memory.engine.facts import KEEP_LABELS, FactClassifier, FactVerdict
from memory.engine.placement import LeafPlacer, LeafVectors
from memory.engine.schema import Schema, document_digest
from memory.engine.segment import segment
from memory.engine.tree import Tree
from serving.embedder import Embed, embedder_identity, one_intraop_thread
from serving.syntax import SyntaxStep

log = logging.getLogger(__name__)

__all__ = ["FactStep", "PlacedFact", "PointingContext", "schema_fingerprint", "units_of"]


@dataclass(frozen=True, slots=True)
class PlacedFact:
    """What the pipeline decided for one clause: its verdict and its leaves, best first."""

    verdict: FactVerdict
    leaves: tuple[tuple[str, float], ...]
    concrete: bool = False  # the grammar's reading: the clause does something to a thing it names
    verb: str = ""  # the clause's main verb as written, which a shortened fact must keep
    joined: tuple[str, ...] = ()  # present verbs joined to it, said in the third person with it


@dataclass(frozen=True)
class PointingContext:
    """What a pointing prompt is built from, and what its reply's ids are mapped back with."""

    sentences: tuple[UserSentence, ...]
    candidates: Candidates
    budgets: dict[str, int]
    skip_reason: str = ""
    #: The fact pipeline's decisions: kept clause id -> verdict and leaves; empty when the context
    #: was built without it (``evaluation.training.cosine``: whole sentences, cosine alone).
    facts: Mapping[int, PlacedFact] = field(default_factory=dict)
    singles: frozenset[str] = frozenset()  # leaves holding one current state (replaced, not appended)
    tree: Mapping[str, str] = field(default_factory=dict)  # the subject's tree the chunk is read against


@functools.lru_cache(maxsize=64)
def schema_fingerprint(schema: Schema) -> str:
    """A digest of what a schema's leaves are (paths, descriptions, budgets, tiers), for callers
    that hold a parsed schema but not its document's digest."""
    return document_digest([[leaf.path, leaf.description, leaf.budget, leaf.tier] for leaf in schema.leaves])


def _ts(raw: object) -> datetime | None:
    if isinstance(raw, datetime):
        return raw
    if isinstance(raw, str) and raw:
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def units_of(turns: Sequence[Mapping]) -> list[UserSentence]:
    """Every clause of the user turns, numbered from 1, with its sentence and its message's time."""
    return [unit for unit, _span in _units_and_spans(turns)]


def _units_and_spans(turns: Sequence[Mapping]) -> list[tuple[UserSentence, tuple[int, int]]]:
    out: list[tuple[UserSentence, tuple[int, int]]] = []
    for i, turn in enumerate(turns):
        if turn.get("role") != "user":
            continue
        ts = _ts(turn.get("ts"))
        for clause in segment(turn.get("content") or "", turn=i):
            unit = UserSentence(len(out) + 1, clause.text, i, source=clause.sentence, ts=ts)
            out.append((unit, (clause.start, clause.end)))
    return out


def _read_syntax_many(
    syntax: SyntaxStep,
    chunks: Sequence[tuple[Sequence[Mapping], Sequence[tuple[UserSentence, tuple[int, int]]]]],
) -> list[list[ClauseSyntax]]:
    """Per chunk (its turns and spanned units), each unit's :class:`ClauseSyntax`; every user turn
    of every chunk parsed once, all in one call."""
    requests: list[tuple[str, list[tuple[int, int]], str, str]] = []
    orders = []
    for turns, spanned in chunks:
        by_turn: dict[int, list[tuple[int, int]]] = {}
        for unit, span in spanned:
            by_turn.setdefault(unit.turn, []).append(span)
        order = sorted(by_turn)
        orders.append((len(requests), order))
        requests += [(turns[t].get("content") or "", by_turn[t], *_before(turns, t)) for t in order]
    read = syntax.analyse(requests)
    out = []
    for (first, order), (_turns, spanned) in zip(orders, chunks, strict=True):
        per_turn = {t: iter(read[first + k]) for k, t in enumerate(order)}
        out.append([next(per_turn[unit.turn]) for unit, _span in spanned])
    return out


def _before(turns: Sequence[Mapping], t: int) -> tuple[str, str]:
    """The other speaker's turn just before turn ``t`` and the speaker's own turn before that ("" when
    the chunk has none): what a pronoun of the reply may name ("What do your turtles eat?" - "They eat
    ..."; "I finished my screenplay!" - "What's it about?" - "It's a romance")."""
    if t == 0 or turns[t - 1].get("role") == "user":
        return "", ""
    own = turns[t - 2].get("content") or "" if t >= 2 and turns[t - 2].get("role") == "user" else ""
    return turns[t - 1].get("content") or "", own


class FactStep:
    """Classifier and per-schema placers (with their leaf vectors) around one embedder."""

    #: Schemas whose placers are kept (least recently used dropped first): tenants bring their own.
    MAX_SCHEMAS = 64

    def __init__(
        self,
        embed: Embed,
        classifier: FactClassifier | None = None,
        *,
        top: int = 3,
        syntax: SyntaxStep | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        self._embed = embed
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._classifier = classifier
        self.syntax = syntax if syntax is not None else _shared_syntax()
        self._placers: OrderedDict[tuple[str, int, str], tuple[LeafPlacer, LeafVectors]] = OrderedDict()
        self._prefetched: OrderedDict[tuple, tuple[tuple[UserSentence, ...], dict[int, PlacedFact]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()
        self.top = top

    @property
    def classifier(self) -> FactClassifier:
        if self._classifier is None:
            self._classifier = FactClassifier.load()
        return self._classifier

    def placer(self, schema: Schema, digest: str) -> tuple[LeafPlacer, LeafVectors]:
        key = (schema.id, schema.version, digest)
        with self._lock:
            if key in self._placers:
                self._placers.move_to_end(key)
                return self._placers[key]
        placer = LeafPlacer.for_schema(schema)
        embedded = self._leaf_vectors([text for _path, text in placer.texts()])
        vectors = MatrixLeafVectors([path for path, _text in placer.texts()], embedded)
        with self._lock:
            self._placers[key] = (placer, vectors)
            while len(self._placers) > self.MAX_SCHEMAS:
                self._placers.popitem(last=False)
        return placer, vectors

    def _leaf_vectors(self, texts: list[str]):
        """The embedded leaf texts: from ``cache_dir`` when a file for exactly these texts and this
        embedder is there, else embedded (~700 texts for the default schema, seconds of CPU) and
        kept there for the next process. The file holds what the embedder returned, unchanged."""
        path = None
        if self.cache_dir is not None:
            key = json.dumps([embedder_identity(), texts], ensure_ascii=False)
            path = self.cache_dir / f"leaf-vectors-{hashlib.sha256(key.encode()).hexdigest()[:32]}.npy"
            try:
                cached = np.load(path, allow_pickle=False)
                if cached.ndim == 2 and cached.shape[0] == len(texts):
                    return cached
            except (OSError, ValueError, EOFError):
                pass  # absent or unreadable: embedded again and rewritten
        embedded = self._embed(texts)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.npy")
                np.save(partial, np.asarray(embedded), allow_pickle=False)
                os.replace(partial, path)
            except OSError:
                log.warning("leaf vectors not kept in %s", self.cache_dir, exc_info=True)
        return embedded

    def prepare(
        self, schema: Schema, tree: Tree, turns: Sequence[Mapping], *, digest: str | None = None
    ) -> PointingContext:
        """The chunk's context: its numbered clauses, the candidate leaves (the kept clauses' leaves
        and the filled ones a retraction names) and each kept clause's placement; a ``skip_reason``
        when there is nothing to write (no model call). ``digest``: the schema document's (None:
        :func:`schema_fingerprint`).

        What does not depend on the tree (clauses, parse, vectors, verdicts, leaves) comes from
        :meth:`prefetch` when it was run for these turns, else is computed here."""
        key = digest or schema_fingerprint(schema)
        snapshot = tree.to_dict()
        budgets = {leaf.path: leaf.budget for leaf in schema.leaves}
        singles = frozenset(leaf.path for leaf in schema.leaves if getattr(leaf, "single", False))
        analysed = self._take_prefetched(schema, turns, key)
        if analysed is None:
            analysed = self._analyse(schema, [turns], key)[0]
        units, facts = analysed
        if not units:
            empty = Candidates((), {})
            return PointingContext((), empty, budgets, "no model call: no user turn", {}, singles, snapshot)
        scores: dict[str, float] = {}
        for fact in facts.values():
            for path, score in fact.leaves:
                scores[path] = max(score, scores.get(path, float("-inf")))
        # a retraction is read in its whole sentence: "please forget that ..., that plan is off"
        for path in retraction_targets([replace(u, text=u.origin) for u in units], snapshot):
            scores.setdefault(path, 0.0)
        ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        leaves = tuple(Candidate(n, p, round(s, 4), snapshot.get(p)) for n, (p, s) in enumerate(ordered, 1))
        best = {uid: f.leaves[0] for uid, f in facts.items()}
        ranked_by_unit = {uid: f.leaves for uid, f in facts.items()}
        candidates = Candidates(leaves, best, ranked_by_unit)
        skip = "no model call: no clause states a lasting fact about the user" if candidates.empty else ""
        return PointingContext(units, candidates, budgets, skip, facts, singles, snapshot)

    #: Chunks whose analysis :meth:`prefetch` keeps until :meth:`prepare` takes it (oldest dropped).
    MAX_PREFETCHED = 4096

    def prefetch(
        self, schema: Schema, turns_list: Sequence[Sequence[Mapping]], *, digest: str | None = None
    ) -> int:
        """Analyse many chunks at once (one parse of all their user turns, one embedding call for all
        their clauses) and keep the result for :meth:`prepare`: a chunk's clauses, verdicts and
        leaves do not depend on the subject's tree, so a caller that knows its next chunks (a
        backfill) pays the per-call costs once for many of them. Returns the chunks analysed."""
        digest = digest or schema_fingerprint(schema)
        todo: dict[tuple, Sequence[Mapping]] = {}
        for turns in turns_list:
            key = _turns_key(schema, turns, digest)
            with self._lock:
                known = key in self._prefetched
            if not known:
                todo.setdefault(key, turns)
        if not todo:
            return 0
        analysed = self._analyse(schema, list(todo.values()), digest)
        with self._lock:
            for key, result in zip(todo, analysed, strict=True):
                self._prefetched[key] = result
            while len(self._prefetched) > self.MAX_PREFETCHED:
                self._prefetched.popitem(last=False)
        return len(todo)

    def _take_prefetched(self, schema: Schema, turns: Sequence[Mapping], digest: str):
        if not self._prefetched:
            return None
        with self._lock:
            return self._prefetched.pop(_turns_key(schema, turns, digest), None)

    def _analyse(
        self, schema: Schema, turns_list: Sequence[Sequence[Mapping]], digest: str
    ) -> list[tuple[tuple[UserSentence, ...], dict[int, PlacedFact]]]:
        """Per chunk (its turns): its numbered clauses and kept clause id -> placement. The turns of
        all the chunks are parsed in one call and their clauses embedded in one call."""
        spanned_list = [_units_and_spans(turns) for turns in turns_list]
        busy = [i for i, spanned in enumerate(spanned_list) if spanned]
        out: list[tuple[tuple[UserSentence, ...], dict[int, PlacedFact]]] = [((), {}) for _ in turns_list]
        if not busy:
            return out
        reads = _read_syntax_many(self.syntax, [(turns_list[i], spanned_list[i]) for i in busy])
        all_units, all_reads = [], []
        for i, read in zip(busy, reads, strict=True):
            # a pronoun subject the speaker named before is written out: "My cat Luna sleeps on ..."
            all_units.append(
                tuple(
                    replace(u, text=resolve(u.text, r))
                    for (u, _span), r in zip(spanned_list[i], read, strict=True)
                )
            )
            all_reads.append(read)
        # Only a clause the grammar keeps can be kept, so only those are embedded and classified
        # (about a third of a conversation's clauses): a clause's vector and verdict are its own,
        # whatever else is in the call.
        candidates = [
            (i, unit, r) for i, units, read in zip(busy, all_units, all_reads, strict=True)
            for unit, r in zip(units, read, strict=True) if judge(r).keep
        ]  # fmt: skip
        texts = [unit.text for _i, unit, _grammar in candidates]
        for i, units in zip(busy, all_units, strict=True):
            out[i] = (units, {})
        if not texts:
            return out
        with one_intraop_thread():  # a few short texts: a second torch thread only waits on a busy host
            vectors = self._embed(texts)
        rows = vectors.tolist() if hasattr(vectors, "tolist") else [list(v) for v in vectors]  # type: ignore[attr-defined]
        verdicts = self.classifier.classify(
            texts, rows, [grammar.mine or grammar.liked or grammar.status for _i, _u, grammar in candidates]
        )
        placer, leaf_vectors = self.placer(schema, digest)
        for (i, unit, grammar), row, verdict in zip(candidates, rows, verdicts, strict=True):
            if verdict.label not in KEEP_LABELS:
                continue
            ranked = tuple(placer.rank(unit.text, row, leaf_vectors, top=self.top))
            if ranked:
                out[i][1][unit.id] = PlacedFact(
                    verdict, ranked, grammar.concrete, grammar.verb, grammar.joined
                )
        return out


def _turns_key(schema: Schema, turns: Sequence[Mapping], digest: str) -> tuple:
    """What a chunk's analysis depends on: the schema and each turn's role, words and time."""
    return (
        schema.id,
        schema.version,
        digest,
        tuple((t.get("role"), t.get("content") or "", _ts(t.get("ts"))) for t in turns),
    )


_SYNTAX: SyntaxStep | None = None
_SYNTAX_LOCK = threading.Lock()


def _shared_syntax() -> SyntaxStep:
    """One spaCy pipeline per process (it loads on first use)."""
    global _SYNTAX
    with _SYNTAX_LOCK:
        if _SYNTAX is None:
            _SYNTAX = SyntaxStep()
        return _SYNTAX


class MatrixLeafVectors(LeafVectors):
    """:class:`LeafVectors` with the prior computed as one matrix product (same values): the
    pure-Python loop over every leaf text cost ~20 ms a clause."""

    def __init__(self, paths: Sequence[str], vectors) -> None:
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = matrix / np.maximum(norms, 1e-12)
        order = sorted(range(len(paths)), key=lambda i: paths[i])
        self._matrix = matrix[order]
        sorted_paths = [paths[i] for i in order]
        self._leaves = list(dict.fromkeys(sorted_paths))
        self._starts = np.asarray([sorted_paths.index(p) for p in self._leaves])
        self.by_leaf = {}

    def prior(self, vector: Sequence[float]) -> dict[str, float]:
        sims = self._matrix @ np.asarray(vector, dtype=np.float32)
        best = np.maximum.reduceat(sims, self._starts)
        return dict(zip(self._leaves, best.tolist(), strict=True))
