"""Place a clause in a schema leaf: cosine prior, trained leaf head and alias match, blended.

Step 3 of the listener pipeline (issue 23). :class:`LeafPlacer` scores every leaf of the subject's
schema for a clause as ``w_prior * prior + w_head * head + w_alias * alias``:

- **prior**: the best cosine between the clause and the leaf's embedded texts (its
  :func:`candidates.leaf_text` and each of its ``examples``);
- **head**: a multinomial logistic regression over the MiniLM clause vector and, when the head file
  has a ``lexicon``, :func:`lexical_features`; trained by ``evaluation/placement_train.py`` and
  shipped as ``models/leaf_head.json`` for the default schema only (keyed by a digest of its paths);
- **alias**: 1 when the clause holds one of the leaf's ``aliases`` as whole words, each compared by
  lemma ("dogs" -> "dog"; "'cause" is not "causes"), so "new" never fires ``media/news``. A leaf
  with ``alias_required`` (the family's) is ranked only for a clause whose alias names someone of the
  speaker's ("my son", "We had a baby"; not "as a kid", "working with kids"); one with
  ``alias_owned`` (pets) is not ranked for a clause whose aliases are all someone else's or no one's
  ("Loves golden retrievers", "Is a dog groomer"), and a clause without an alias may still go there.

The weights and threshold come with the head (or :data:`PRIOR_ONLY`); a clause whose best score is
below the threshold is not filed (:meth:`LeafPlacer.rank` returns ``[]``). Vectors are plain float
sequences embedded by the caller; stdlib only, plus ``lemminflect``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import mul
from pathlib import Path
from typing import Any

from .candidates import leaf_text
from .schema import DEFAULT_SCHEMA_ID, DEFAULT_SCHEMA_VERSION, Schema

HEAD_FORMAT = "personatree-leaf-head/1"
HEAD_PATH = Path(__file__).with_name("models") / "leaf_head.json"
_WORD = re.compile(r"[a-z0-9]+(?:[-'/][a-z0-9]+)*")


@dataclass(frozen=True, slots=True)
class Blend:
    """How the three signals are weighed, and the score below which a clause is not filed."""

    prior: float = 1.0
    head: float = 0.0
    alias: float = 0.1
    threshold: float = 0.3


#: Blend for a schema without a trained head (prior and aliases only), chosen on the labelled
#: development clauses by ``evaluation/placement_train.py``, which records its pick in the head
#: file as ``training.prior_only_blend`` (a test keeps the two equal): leaf accuracy 0.635 vs 0.536
#: for the prior alone on the 1384 labels, cross-validated; the threshold files 98 % of those
#: fileable clauses.
PRIOR_ONLY = Blend(prior=1.0, head=0.0, alias=0.2, threshold=0.344)
#: Blend for a schema whose leaves have no examples (a tenant's bare schema): only ``path:
#: description`` is embedded, which scores lower than an example, so the threshold is the pointing
#: step's candidate threshold measured for those texts (0.30, docs/MEMLISTENER.md).
DESCRIPTIONS_ONLY = Blend(prior=1.0, head=0.0, alias=0.2, threshold=0.30)


def paths_digest(schema: Schema) -> str:
    """SHA-256 of the schema's leaf paths in order: what a head's rows are keyed by."""
    return hashlib.sha256("\n".join(schema.paths).encode("utf-8")).hexdigest()


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(map(mul, a, b))


def _unit(v: Sequence[float]) -> list[float]:
    values = v.tolist() if hasattr(v, "tolist") else list(v)  # numpy rows welcome, converted once
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values] if norm > 0 else [0.0] * len(values)


def lexical_features(text: str) -> frozenset[str]:
    """The clause's word features the head weighs: every word with its lemmas ("moved" -> "moved",
    "move") and every pair of neighbouring words as written ("moved to", "my dog")."""
    words = _words(text)
    out: set[str] = set()
    for word in words:
        out |= _lemmas(word)
    out.update(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))
    return frozenset(out)


@dataclass(frozen=True)
class LeafHead:
    """A multinomial logistic regression over clause vectors and word features: per leaf one weight
    row and bias, and per word feature a few ``(leaf index, weight)`` pairs (small ones pruned)."""

    paths: tuple[str, ...]
    weights: tuple[tuple[float, ...], ...]
    bias: tuple[float, ...]
    blend: Blend
    digest: str  # paths_digest of the schema it was trained for
    meta: dict[str, Any]
    lexicon: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> LeafHead:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("format") != HEAD_FORMAT:
            raise ValueError(f"{path}: not a {HEAD_FORMAT} file")
        paths = tuple(data["paths"])
        dim = int(data["dim"])
        raw = base64.b64decode(data["weights_f16"])
        if len(raw) != 2 * dim * len(paths):
            raise ValueError(f"{path}: weights hold {len(raw)} bytes, expected {2 * dim * len(paths)}")
        flat = struct.unpack(f"<{dim * len(paths)}e", raw)
        scale = float(data.get("scale", 1.0))
        weights = tuple(tuple(x * scale for x in flat[i * dim : (i + 1) * dim]) for i in range(len(paths)))
        bias = tuple(float(b) for b in data["bias"])
        if len(bias) != len(paths):
            raise ValueError(f"{path}: {len(bias)} biases for {len(paths)} leaves")
        lexicon = {  # word feature -> "leaf_index:weight ..." (weights in logits)
            str(feature): tuple((int(i), float(w)) for i, w in (pair.split(":") for pair in pairs.split()))
            for feature, pairs in data.get("lexicon", {}).items()
        }
        if any(not 0 <= i < len(paths) for pairs in lexicon.values() for i, _ in pairs):
            raise ValueError(f"{path}: a lexicon entry names a leaf index out of range")
        meta = {k: v for k, v in data.items() if k not in {"weights_f16", "bias", "paths", "lexicon"}}
        return cls(paths, weights, bias, Blend(**data["blend"]), data["paths_digest"], meta, lexicon)

    def probabilities(self, vector: Sequence[float], clause: str = "") -> dict[str, float]:
        """Leaf -> probability for one (unit) clause vector and the clause's words."""
        logits = [_dot(row, vector) + b for row, b in zip(self.weights, self.bias, strict=True)]
        if self.lexicon and clause:
            for feature in lexical_features(clause):
                for i, w in self.lexicon.get(feature, ()):
                    logits[i] += w
        top = max(logits)
        exps = [math.exp(x - top) for x in logits]
        total = sum(exps)
        return {p: e / total for p, e in zip(self.paths, exps, strict=True)}


class LeafVectors:
    """The embedded :meth:`LeafPlacer.texts`, unit-normalised and grouped by leaf (build once per
    schema and pass it to :meth:`LeafPlacer.rank`; a raw sequence of vectors is wrapped per call)."""

    def __init__(self, paths: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        if len(paths) != len(vectors):
            raise ValueError(f"{len(vectors)} vectors for {len(paths)} leaf texts")
        grouped: dict[str, list[list[float]]] = {}
        for path, vector in zip(paths, vectors, strict=True):
            grouped.setdefault(path, []).append(_unit(vector))
        self.by_leaf = grouped

    def prior(self, vector: Sequence[float]) -> dict[str, float]:
        """Leaf -> best cosine between ``vector`` (unit) and the leaf's texts."""
        return {path: max(_dot(v, vector) for v in rows) for path, rows in self.by_leaf.items()}


@lru_cache(maxsize=20000)
def _lemmas(word: str) -> frozenset[str]:
    from lemminflect import getAllLemmas  # pure Python, a dependency (loads its tables on first use)

    out = {word}
    for lemmas in getAllLemmas(word).values():
        out.update(lemmas)
    return frozenset(out)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _tokens(words: list[str]) -> list[frozenset[str]]:
    """A clause's :func:`_words`, each as the set of itself and its lemmas ("dog's" also as "dog")."""
    return [_lemmas(w) | _lemmas(w[:-2]) if w.endswith("'s") else _lemmas(w) for w in words]


def _alias_parts(alias: str) -> list[frozenset[str]]:
    """An alias's words as written: "dogs" in a clause matches "dog", "'cause" not "causes"."""
    return [frozenset({w}) for w in _words(alias)]


def alias_hits(clause: str, aliases: Sequence[str], *, owned: bool = False) -> list[str]:
    """The aliases the clause holds as whole words (each word matched by lemma), in alias order;
    ``owned``: only where the clause says the person is the speaker's (:func:`_owned`)."""
    said = _words(clause)
    words = _tokens(said)
    return [alias for alias in aliases if _holds(words, _alias_parts(alias), said if owned else None)]


def _holds(words: list[frozenset[str]], parts: list[frozenset[str]], said: list[str] | None = None) -> bool:
    n = len(parts)
    return n > 0 and any(
        all(words[i + k] & parts[k] for k in range(n)) and (said is None or _owned(said, i))
        for i in range(len(words) - n + 1)
    )


_OWNERS = frozenset("my our mine ours the his her their both".split())
_HAVING = frozenset(
    "have has had having got own owns owned 've i've we've ive expecting adopted adopt adopting raising raised".split()
)
_COUNTS = frozenset("two three four five six seven eight nine ten twins".split())
_NOT_OWNED = frozenset("a an as with for to of about like some many all in on at".split())
_HOW_MUCH = frozenset("lot lots couple bunch plenty few number pair".split())  # "a lot of siblings"


def _owned(words: list[str], i: int) -> bool:
    """Is the one named at ``words[i]`` (kin, a pet) the speaker's? It opens the clause ("Mom
    called"), or a possessive, "the", a count or a verb of having comes first ("my two kids", "We had
    a baby", "married with two kids"); not "as a kid", "kids in need", "working with kids", "a mom"."""
    if i == 0:
        return True
    for k in range(i - 1, max(-1, i - 5), -1):
        w = words[k]
        if w in _OWNERS or w in _HAVING or w in _COUNTS or w.isdigit():
            return True
        if w in ("a", "an"):  # "Has a black lab named Trooper and a golden retriever": the list is had
            before = words[k - 1] if k > 0 else ""
            return before in _HAVING or (before in ("and", "or") and not _HAVING.isdisjoint(words[: k - 1]))
        if w == "of" and k > 0 and words[k - 1] in _HOW_MUCH:
            continue  # "Has a lot of siblings": what comes before the amount decides
        if w in _NOT_OWNED:
            return False
    return False


class LeafPlacer:
    """Scores the leaves of one schema for a clause; see the module docstring."""

    def __init__(self, schema: Schema, head: LeafHead | None = None, blend: Blend | None = None) -> None:
        if head is not None and head.digest != paths_digest(schema):
            raise ValueError("the leaf head was trained for another schema (paths digest differs)")
        self.schema = schema
        self.head = head
        self.blend = blend or (head.blend if head is not None else PRIOR_ONLY)
        self._texts = [(leaf.path, leaf_text(leaf.path, leaf.description)) for leaf in schema.leaves] + [
            (leaf.path, example) for leaf in schema.leaves for example in leaf.examples
        ]
        self._aliases = {
            leaf.path: [_alias_parts(alias) for alias in leaf.aliases]
            for leaf in schema.leaves
            if leaf.aliases
        }
        self._alias_required = frozenset(leaf.path for leaf in schema.leaves if leaf.alias_required)
        self._owned = frozenset(
            leaf.path for leaf in schema.leaves if leaf.alias_required or leaf.alias_owned
        )

    @classmethod
    def for_schema(cls, schema: Schema, head_path: Path | None = None) -> LeafPlacer:
        """A placer for ``schema``: with the shipped head (or ``head_path``) when it was trained for
        exactly these leaves, the default schema v1 today; otherwise prior and aliases only."""
        path = head_path or HEAD_PATH
        bare = DESCRIPTIONS_ONLY if not any(leaf.examples for leaf in schema.leaves) else None
        if head_path is None and schema.key != (DEFAULT_SCHEMA_ID, DEFAULT_SCHEMA_VERSION):
            return cls(schema, blend=bare)
        head = _load_head(path) if path.is_file() else None
        if head is None or head.digest != paths_digest(schema):
            return cls(schema, blend=bare)
        return cls(schema, head)

    def texts(self) -> list[tuple[str, str]]:
        """``(path, text)`` to embed once per schema, in order: each leaf's text, then every example."""
        return list(self._texts)

    def vectors(self, embedded: Sequence[Sequence[float]]) -> LeafVectors:
        """Wrap the embedded :meth:`texts` (same order) for repeated :meth:`rank` calls."""
        return LeafVectors([p for p, _ in self._texts], embedded)

    def alias_signals(self, clause: str) -> dict[str, tuple[bool, bool]]:
        """Per leaf with aliases ``(hit, barred)``: the clause names one of them (as the speaker's,
        where the leaf is ``alias_required`` or ``alias_owned``), and the leaf may not take it."""
        said = _words(clause)
        words = _tokens(said)
        bag = frozenset().union(*words)  # an alias none of whose words is in the clause cannot match
        out = {}
        for path, aliases in self._aliases.items():
            named = [parts for parts in aliases if parts and parts[0] & bag]
            hit = any(_holds(words, parts, said if path in self._owned else None) for parts in named)
            if path in self._alias_required:
                out[path] = (hit, not hit)  # "Is a pediatrician" is no child
            else:  # "Loves golden retrievers" is no pet; a clause naming none may still be one
                out[path] = (hit, path in self._owned and not hit and any(_holds(words, p) for p in named))
        return out

    def scores(
        self, clause: str, vector: Sequence[float], leaf_vectors: LeafVectors | Sequence[Sequence[float]]
    ) -> dict[str, dict[str, float]]:
        """Per leaf its three signals ``{"prior": .., "head": .., "alias": ..}`` and ``"barred"``
        (1.0: :meth:`alias_signals` keeps the leaf from taking the clause)."""
        index = leaf_vectors if isinstance(leaf_vectors, LeafVectors) else self.vectors(leaf_vectors)
        unit = _unit(vector)
        prior = index.prior(unit)
        head = self.head.probabilities(unit, clause) if self.head is not None else {}
        aliases = self.alias_signals(clause)
        out = {}
        for leaf in self.schema.leaves:
            hit, barred = aliases.get(leaf.path, (False, False))
            out[leaf.path] = {
                "prior": prior.get(leaf.path, 0.0),
                "head": head.get(leaf.path, 0.0),
                "alias": 1.0 if hit else 0.0,
                "barred": 1.0 if barred else 0.0,
            }
        return out

    def rank(
        self,
        clause: str,
        vector: Sequence[float],
        leaf_vectors: LeafVectors | Sequence[Sequence[float]],
        *,
        top: int = 3,
    ) -> list[tuple[str, float]]:
        """The ``top`` ``(path, score)`` at or above the threshold, best first (``[]``: not filed)."""
        b = self.blend
        scored = [
            (path, b.prior * s["prior"] + b.head * s["head"] + b.alias * s["alias"])
            for path, s in self.scores(clause, vector, leaf_vectors).items()
            if not s["barred"]
        ]
        scored.sort(key=lambda item: (-item[1], item[0]))
        return [(path, round(score, 6)) for path, score in scored[:top] if score >= b.threshold]


@lru_cache(maxsize=4)
def _load_head(path: Path) -> LeafHead | None:
    try:
        return LeafHead.load(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, struct.error):
        return None
