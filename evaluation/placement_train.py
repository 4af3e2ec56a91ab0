"""Train the leaf head of ``memory.engine.placement`` and measure leaf accuracy, with provenance.

Run from the repository root::

    .venv/bin/python -m evaluation.placement_train \\
        --spc ../shared/benchmarks/synthetic_persona_chat/valid.csv \\
        --out memory/engine/models/leaf_head.json

Training data (development data only):

- the default schema itself: each leaf's path and description, each ``example`` and each alias
  written as a short text ("dog"), labelled with the leaf;
- rule-labelled persona sentences of Synthetic-Persona-Chat valid dialogues 0..799 (800..999 are
  for validation; dialogues cited by the gold fixture are left out too, so no gold clause is also a
  rule-labelled training text): a persona sentence is labelled with a leaf when it holds the aliases
  of exactly one leaf (``placement.alias_hits``, aliases written in the schema before this data was
  read), else it is not used;
- the hand-labelled clauses of ``evaluation/fixtures/leaf_labels.jsonl`` (LoCoMo conv-26/30/41/42
  and SPC dev dialogues), used ONLY inside 5-fold cross-validation grouped by source conversation /
  dialogue (weight 5 each, clause and fact form; each ``alt`` leaf adds the clause again with
  weight 2): every accuracy reported is on folds the head did not see. The shipped head is then
  refitted on all of them.

Scores reported (top-1 in ``{leaf} ∪ alt``, unfiled counts as wrong), on the clause and on its
third-person ``fact``: the cosine prior alone, the prior with aliases (the blend a schema without
head gets), the head alone and the blend. The blend weights and threshold for fold k are chosen on
the out-of-fold signals of the other folds, so fold k's labels never pick them. The threshold is
the best score of the 2nd percentile of labelled clauses (all of them are fileable facts; the fact
classifier, not the placer, drops small talk). Fixed seeds, sorted inputs.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import itertools
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from memory.engine.placement import HEAD_FORMAT, Blend, LeafPlacer, alias_hits, paths_digest
from memory.engine.schema import Schema, default_schema

LABELS = Path(__file__).with_name("fixtures") / "leaf_labels.jsonl"
DEV_DIALOGUES = 800
FOLDS = 5
SEED = 23
GOLD_WEIGHT = 5.0  # a hand-labelled clause counts as five schema texts
ALT_WEIGHT = 2.0  # an acceptable alternative leaf is a weaker positive
Embed = Callable[[Sequence[str]], np.ndarray]


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(rows, key=lambda r: (r["source"], r["clause"]))


def group_of(source: str) -> str:
    """``locomo:conv-26:D1:3`` -> ``locomo:conv-26``; ``spc:17:user 1:persona`` -> ``spc:17``."""
    return ":".join(source.split(":")[:2])


def schema_texts(schema: Schema) -> tuple[list[str], list[str]]:
    """(texts, leaf labels) the schema itself provides: leaf text, examples, aliases."""
    placer = LeafPlacer(schema)
    texts = [t for _, t in placer.texts()]
    labels = [p for p, _ in placer.texts()]
    for leaf in schema.leaves:
        texts.extend(leaf.aliases)
        labels.extend([leaf.path] * len(leaf.aliases))
    return texts, labels


def rule_labelled_personas(
    csv_path: Path, schema: Schema, exclude: set[int], limit: int = DEV_DIALOGUES
) -> tuple[list[str], list[str]]:
    """Persona sentences of dev dialogues naming the aliases of exactly one leaf (see module doc)."""
    seen: dict[str, str] = {}
    with csv_path.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            if i >= limit:
                break
            if i in exclude:
                continue
            for column in ("user 1 personas", "user 2 personas"):
                for sentence in row[column].splitlines():
                    text = sentence.strip().rstrip(".").strip()
                    if not text or text in seen:
                        continue
                    leaves = {leaf.path for leaf in schema.leaves if alias_hits(text, leaf.aliases)}
                    seen[text] = leaves.pop() if len(leaves) == 1 else ""
    pairs = sorted((t, p) for t, p in seen.items() if p)
    return [t for t, _ in pairs], [p for _, p in pairs]


class CachedEmbed:
    """MiniLM embeddings, kept in memory and optionally in an ``.npz`` cache between runs."""

    def __init__(self, cache: Path | None = None) -> None:
        from serving.embedder import get_embedder

        self._model = get_embedder("minilm")
        self._cache = cache
        self._store: dict[str, np.ndarray] = {}
        if cache is not None and cache.is_file():
            data = np.load(cache)
            self._store = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = sorted({t for t in texts if self._key(t) not in self._store})
        if missing:
            vectors = np.asarray(self._model.embed(missing), dtype=np.float32)
            self._store.update({self._key(t): v for t, v in zip(missing, vectors, strict=True)})
            if self._cache is not None:
                keys = sorted(self._store)
                np.savez(self._cache, keys=np.array(keys), vectors=np.stack([self._store[k] for k in keys]))
        return np.stack([self._store[self._key(t)] for t in texts])


def training_set(
    x_base: np.ndarray,
    y_base: Sequence[str],
    rows: Sequence[dict[str, Any]],
    vecs: dict[str, np.ndarray],
    idx: np.ndarray,
) -> tuple[np.ndarray, list[str], list[float]]:
    """Schema and rule texts (weight 1), the labelled clauses and facts at ``idx`` (weight
    :data:`GOLD_WEIGHT`) and each clause again for every ``alt`` leaf (weight :data:`ALT_WEIGHT`)."""
    alt = [(int(i), a) for i in idx for a in rows[i].get("alt", [])]
    x = np.vstack([x_base, vecs["clause"][idx], vecs["fact"][idx], vecs["clause"][[i for i, _ in alt]]])
    y = [*y_base, *[rows[i]["leaf"] for i in idx], *[rows[i]["leaf"] for i in idx], *[a for _, a in alt]]
    w = [1.0] * len(y_base) + [GOLD_WEIGHT] * (2 * len(idx)) + [ALT_WEIGHT] * len(alt)
    return x, y, w


def fit_head(
    x: np.ndarray, y: Sequence[str], paths: Sequence[str], c: float, weight: Sequence[float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression; rows for every path (a leaf never seen gets a low bias)."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=2000, random_state=SEED)
    model.fit(x, list(y), sample_weight=None if weight is None else np.asarray(weight))
    index = {p: i for i, p in enumerate(paths)}
    weights = np.zeros((len(paths), x.shape[1]), dtype=np.float64)
    bias = np.full(len(paths), float(model.intercept_.min()) - 5.0)
    for row, cls in enumerate(model.classes_):
        weights[index[cls]] = model.coef_[row]
        bias[index[cls]] = model.intercept_[row]
    return weights, bias


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class Signals:
    """Per clause and leaf: prior (max cosine over leaf texts), alias hit; head filled per fold."""

    def __init__(self, schema: Schema, clauses: Sequence[str], vectors: np.ndarray, embed: Embed) -> None:
        placer = LeafPlacer(schema)
        self.paths = list(schema.paths)
        col = {p: i for i, p in enumerate(self.paths)}
        texts = placer.texts()
        leaf_vecs = embed([t for _, t in texts])
        sims = vectors @ leaf_vecs.T
        self.prior = np.full((len(clauses), len(self.paths)), -1.0)
        for j, (path, _) in enumerate(texts):
            self.prior[:, col[path]] = np.maximum(self.prior[:, col[path]], sims[:, j])
        self.alias = np.zeros_like(self.prior)
        for i, clause in enumerate(clauses):
            for leaf in schema.leaves:
                if leaf.aliases and alias_hits(clause, leaf.aliases):
                    self.alias[i, col[leaf.path]] = 1.0
        self.head = np.zeros_like(self.prior)


def correct(pred: np.ndarray, rows: Sequence[dict[str, Any]], paths: Sequence[str]) -> np.ndarray:
    return np.array(
        [pred[i] >= 0 and paths[pred[i]] in {r["leaf"], *r.get("alt", [])} for i, r in enumerate(rows)]
    )


def blended(s: Signals, b: Blend, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    score = b.prior * s.prior[idx] + b.head * s.head[idx] + b.alias * s.alias[idx]
    best = score.argmax(axis=1)
    return best, score[np.arange(len(idx)), best]


def choose_blend(s: Signals, rows: Sequence[dict[str, Any]], idx: np.ndarray, use_head: bool) -> Blend:
    """Weights maximising accuracy on ``idx`` (ties: the first in grid order); threshold at the 2nd
    percentile of best scores so nearly every labelled (fileable) clause is filed."""
    best: tuple[float, Blend] | None = None
    heads = (0.5, 1.0, 2.0, 4.0, 8.0) if use_head else (0.0,)
    for head, alias in itertools.product(heads, (0.0, 0.02, 0.05, 0.1, 0.15, 0.2)):
        b = Blend(prior=1.0, head=head, alias=alias, threshold=0.0)
        pred, _ = blended(s, b, idx)
        acc = float(correct(pred, [rows[i] for i in idx], s.paths).mean())
        if best is None or acc > best[0] + 1e-9:
            best = (acc, b)
    assert best is not None
    _, top = blended(s, best[1], idx)
    return Blend(best[1].prior, best[1].head, best[1].alias, round(float(np.percentile(top, 2)), 3))


def accuracy(s: Signals, rows: Sequence[dict[str, Any]], idx: np.ndarray, b: Blend) -> float:
    pred, top = blended(s, b, idx)
    pred = np.where(top >= b.threshold, pred, -1)
    return float(correct(pred, [rows[i] for i in idx], s.paths).mean())


def grouped_folds(rows: Sequence[dict[str, Any]], k: int = FOLDS) -> list[np.ndarray]:
    """Groups (conversation / dialogue) dealt to k folds by a hash, so a group never straddles folds."""
    folds: list[list[int]] = [[] for _ in range(k)]
    for i, r in enumerate(rows):
        h = int(hashlib.sha256(f"{SEED}:{group_of(r['source'])}".encode()).hexdigest(), 16)
        folds[h % k].append(i)
    return [np.array(f) for f in folds]


def run(
    spc: Path | None,
    out: Path | None,
    cache: Path | None,
    c: float,
    labels: Path,
    *,
    embed: Embed | None = None,
    schema: Schema | None = None,
) -> dict[str, Any]:
    """Cross-validate, report, and (with ``out``) write the head refitted on everything."""
    schema = schema or default_schema()
    rows = load_labels(labels)
    embed = embed or CachedEmbed(cache)
    base_texts, base_labels = schema_texts(schema)
    rule_texts: list[str] = []
    rule_labels: list[str] = []
    if spc is not None:
        gold_dialogues = {
            int(group_of(r["source"]).split(":")[1]) for r in rows if r["source"].startswith("spc:")
        }
        rule_texts, rule_labels = rule_labelled_personas(spc, schema, gold_dialogues)
    print(
        f"schema texts {len(base_texts)}, rule-labelled personas {len(rule_texts)}, gold {len(rows)}",
        file=sys.stderr,
    )
    x_base = embed(base_texts + rule_texts)
    y_base = base_labels + rule_labels
    forms = {form: [r[form] for r in rows] for form in ("clause", "fact")}
    vecs = {form: embed(texts) for form, texts in forms.items()}
    signals = {form: Signals(schema, forms[form], vecs[form], embed) for form in forms}
    folds = [f for f in grouped_folds(rows) if len(f)]
    everything = np.arange(len(rows))
    for k, test in enumerate(folds):
        train = np.setdiff1d(everything, test)
        x, y, w = training_set(x_base, y_base, rows, vecs, train)
        weights, bias = fit_head(x, y, schema.paths, c, w)
        for form in forms:
            signals[form].head[test] = softmax(vecs[form][test] @ weights.T + bias)
        print(f"fold {k}: {len(test)} held out", file=sys.stderr)

    report: dict[str, Any] = {"gold": len(rows), "groups": len({group_of(r["source"]) for r in rows})}
    for form in forms:
        s = signals[form]
        per: dict[str, list[float]] = {"prior": [], "prior_alias": [], "head": [], "blend": []}
        for test in folds:
            others = np.setdiff1d(everything, test)
            per["prior"].append(accuracy(s, rows, test, Blend(1.0, 0.0, 0.0, -1.0)))
            per["head"].append(accuracy(s, rows, test, Blend(0.0, 1.0, 0.0, -1.0)))
            per["prior_alias"].append(accuracy(s, rows, test, choose_blend(s, rows, others, use_head=False)))
            per["blend"].append(accuracy(s, rows, test, choose_blend(s, rows, others, use_head=True)))
        sizes = np.array([len(f) for f in folds])
        report[form] = {name: round(float(np.dot(v, sizes) / sizes.sum()), 3) for name, v in per.items()}
    report["source_split"] = {
        src: {
            name: round(accuracy(signals["clause"], rows, idx, b), 3)
            for name, b in (("prior", Blend(1.0, 0.0, 0.0, -1.0)), ("head", Blend(0.0, 1.0, 0.0, -1.0)))
        }
        for src in ("locomo", "spc")
        if len(idx := np.array([i for i, r in enumerate(rows) if r["source"].startswith(src)])) > 0
    }
    both = np.arange(len(rows))
    report["blend_all_folds_oof"] = asdict(choose_blend(signals["clause"], rows, both, use_head=True))
    report["prior_only_blend"] = asdict(choose_blend(signals["clause"], rows, both, use_head=False))
    if out is not None:
        x, y, w = training_set(x_base, y_base, rows, vecs, everything)
        weights, bias = fit_head(x, y, schema.paths, c, w)
        write_head(out, schema, weights, bias, Blend(**report["blend_all_folds_oof"]), report, spc, c)
    return report


def write_head(
    out: Path,
    schema: Schema,
    weights: np.ndarray,
    bias: np.ndarray,
    blend: Blend,
    report: dict[str, Any],
    spc: Path | None,
    c: float,
) -> None:
    scale = float(np.abs(weights).max()) or 1.0
    packed = (weights / scale).astype("<f2").tobytes()
    doc = {
        "format": HEAD_FORMAT,
        "schema": {"id": schema.id, "version": schema.version},
        "paths_digest": paths_digest(schema),
        "embedder": "minilm (sentence-transformers/all-MiniLM-L6-v2, unit vectors)",
        "dim": int(weights.shape[1]),
        "scale": scale,
        "blend": asdict(blend),
        "trained_by": "python -m evaluation.placement_train",
        "training": {
            "C": c,
            "data": [
                "personatree-default v1: leaf texts, examples, aliases",
                "evaluation/fixtures/leaf_labels.jsonl: clause and fact forms",
                "rule-labelled persona sentences (exactly one leaf's alias) of "
                "../shared/benchmarks/synthetic_persona_chat/valid.csv dialogues 0..799 not in the gold"
                if spc is not None
                else "(no SPC personas)",
            ],
            "cross_validated": {k: report[k] for k in ("clause", "fact")},
        },
        "paths": list(schema.paths),
        "bias": [round(float(b), 4) for b in bias],
        "weights_f16": base64.b64encode(packed).decode("ascii"),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--spc", type=Path, default=None, help="../shared/benchmarks/synthetic_persona_chat/valid.csv"
    )
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--out", type=Path, default=None, help="write the head here (models/leaf_head.json)")
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache (.npz) between runs")
    parser.add_argument("-C", type=float, default=8.0, dest="c")
    args = parser.parse_args(argv)
    report = run(args.spc, args.out, args.cache, args.c, args.labels)
    print(json.dumps(report, indent=1))
    counts = Counter(r["leaf"] for r in load_labels(args.labels))
    print(f"{len(counts)} distinct gold leaves", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
