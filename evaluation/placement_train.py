"""Train the leaf head of ``memory.engine.placement`` and measure leaf accuracy, with provenance.

Run from the repository root::

    .venv/bin/python -m evaluation.placement_train \\
        --spc ../shared/benchmarks/synthetic_persona_chat/valid.csv \\
        --out memory/engine/models/leaf_head.json

Training data (development data only):

- the default schema itself: each leaf's path and description, each ``example`` and each alias
  written as a short text ("dog"), labelled with the leaf;
- rule-labelled persona sentences of Synthetic-Persona-Chat valid dialogues 0..799 (800..999 are
  for validation; dialogues cited by the gold fixture are left out too, and so is any persona
  sentence equal to a gold clause, case-folded: personas recur across dialogues, so no gold clause is
  also a rule-labelled training text): a persona sentence is labelled with a leaf when it holds the aliases
  of exactly one leaf as the placer reads them (``LeafPlacer.alias_signals``: a pet or kin alias counts
  only as the speaker's), else it is not used;
- the hand-labelled clauses of ``evaluation/fixtures/leaf_labels.jsonl`` (LoCoMo conv-26/30/41/42
  and SPC dev dialogues), used ONLY inside 5-fold cross-validation grouped by source conversation /
  dialogue (weight 5 each, clause and fact form; each ``alt`` leaf adds the clause again with
  weight 2): every accuracy reported is on folds the head did not see. The shipped head is then
  refitted on all of them.

The head is a logistic regression over the MiniLM vector and, with ``--lex-alpha`` above 0, the
clause's word features (``placement.lexical_features``, each worth ``alpha`` next to the unit
vector; the default 0 trains the vector-only head, see :data:`LEX_ALPHA`). Word features held by fewer than two training texts are not learnt, and
word weights under 0.05 are pruned before anything is scored, so every number is of the head as
shipped.

Scores reported (top-1 in ``{leaf} ∪ alt``, unfiled counts as wrong), on the clause and on its
third-person ``fact``: the cosine prior alone, the prior with aliases (the blend a schema without
head gets), the head alone and the blend. The blend weights and threshold for fold k are chosen on
the out-of-fold signals of the other folds, so fold k's labels never pick them. The threshold is
the best score of the 2nd percentile of labelled clauses (all of them are fileable facts; the fact
classifier, not the placer, drops small talk). Fixed seeds, sorted inputs.

Also reported: ``held_out``, the same four scores on a fixed slice of the labels (LoCoMo conv-42
and SPC dialogues 100..199, ``placement_scores.is_held_out``) for a head trained without it; and
``abstain``, how many labelled clauses a higher threshold would leave unfiled and how accurate the
rest are. ``--errors`` writes the out-of-fold misplacements outside that slice, to read.

What the head's variants scored (C, weights, class weights, branch heads, nearest-neighbour and
stacked signals, an MLP, extra rule-labelled texts, centred vectors) is in the commits that tried
them (``git log -p evaluation/placement_train.py``): none moved cross-validated leaf accuracy
beyond fold noise; what was kept is the labels, the aliases and the schema's examples.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.placement_scores import (
    SEED,
    Embed,
    Signals,
    abstain_curve,
    accuracy,
    blend_right_oof,
    choose_blend,
    cross_validated,
    group_of,
    grouped_folds,
    is_held_out,
    write_errors,
)
from memory.engine.placement import (
    HEAD_FORMAT,
    Blend,
    LeafPlacer,
    lexical_features,
    paths_digest,
)
from memory.engine.schema import Schema, default_schema

LABELS = Path(__file__).with_name("fixtures") / "leaf_labels.jsonl"
DEV_DIALOGUES = 800
GOLD_WEIGHT = 5.0  # a hand-labelled clause counts as five schema texts
ALT_WEIGHT = 2.0  # an acceptable alternative leaf is a weaker positive
# Value of a word feature next to the unit clause vector; 0 trains the vector-only head. Measured
# on the 715 labels (blend, clause form, CV / held-out): 0 -> 0.712 / 0.632, 0.15 -> 0.705 / 0.624,
# 0.5 -> 0.703 / 0.640: words add nothing the vector lacks here, so the shipped head has none.
LEX_ALPHA = 0.0
LEX_MIN_COUNT = 2  # a word feature is learnt when at least this many training texts hold it
LEX_PRUNE = 0.05  # shipped word weights smaller than this (in logits) are dropped


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(rows, key=lambda r: (r["source"], r["clause"]))


def schema_texts(schema: Schema) -> tuple[list[str], list[str]]:
    """(texts, leaf labels) the schema itself provides: leaf text, examples, aliases."""
    placer = LeafPlacer(schema)
    texts = [t for _, t in placer.texts()]
    labels = [p for p, _ in placer.texts()]
    for leaf in schema.leaves:
        texts.extend(leaf.aliases)
        labels.extend([leaf.path] * len(leaf.aliases))
    return texts, labels


def inputs_digest(schema: Schema, labels: Path) -> str:
    """A digest of what the head learns from in the repository: the schema's texts, examples and
    aliases, and the labels file. The shipped head records it, and a test checks it against today's
    files, so editing either without running this command again cannot go unnoticed."""
    texts, leaves = schema_texts(schema)
    digest = hashlib.sha256(
        "".join(f"{leaf}\t{text}\n" for text, leaf in zip(texts, leaves, strict=True)).encode()
    )
    digest.update(labels.read_bytes())
    return digest.hexdigest()[:24]


def rule_labelled_personas(
    csv_path: Path,
    schema: Schema,
    exclude: set[int],
    limit: int = DEV_DIALOGUES,
    gold: Collection[str] = (),
) -> tuple[list[str], list[str]]:
    """Persona sentences of dev dialogues naming the aliases of exactly one leaf (see module doc).
    A sentence that is also a ``gold`` clause (compared case-folded) is never used: SPC personas
    recur across dialogues, so leaving out the gold dialogues alone still let 181 of 225 rule
    texts be gold clauses, seen in training by the fold that tests them."""
    seen: dict[str, str] = {}
    skip = {_norm(t) for t in gold}
    placer = LeafPlacer(schema)  # the placer's own reading: a pet alias counts only as the speaker's
    with csv_path.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            if i >= limit:
                break
            if i in exclude:
                continue
            for column in ("user 1 personas", "user 2 personas"):
                for sentence in row[column].splitlines():
                    text = sentence.strip().rstrip(".").strip()
                    if not text or text in seen or _norm(text) in skip:
                        continue
                    leaves = {path for path, (hit, _) in placer.alias_signals(text).items() if hit}
                    seen[text] = leaves.pop() if len(leaves) == 1 else ""
    pairs = sorted((t, p) for t, p in seen.items() if p)
    return [t for t, _ in pairs], [p for _, p in pairs]


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


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
    base: tuple[np.ndarray, Sequence[str], Sequence[str]],
    rows: Sequence[dict[str, Any]],
    vecs: dict[str, np.ndarray],
    idx: np.ndarray,
) -> tuple[np.ndarray, list[str], list[str], list[float]]:
    """(vectors, texts, leaves, weights): schema and rule texts ``base`` (weight 1), the labelled
    clauses and facts at ``idx`` (weight :data:`GOLD_WEIGHT`) and each clause again for every ``alt``
    leaf (weight :data:`ALT_WEIGHT`)."""
    x_base, t_base, y_base = base
    alt = [(int(i), a) for i in idx for a in rows[i].get("alt", [])]
    x = np.vstack([x_base, vecs["clause"][idx], vecs["fact"][idx], vecs["clause"][[i for i, _ in alt]]])
    texts = [*t_base, *[rows[i]["clause"] for i in idx], *[rows[i]["fact"] for i in idx]]
    texts += [rows[i]["clause"] for i, _ in alt]
    y = [*y_base, *[rows[i]["leaf"] for i in idx], *[rows[i]["leaf"] for i in idx], *[a for _, a in alt]]
    w = [1.0] * len(y_base) + [GOLD_WEIGHT] * (2 * len(idx)) + [ALT_WEIGHT] * len(alt)
    return x, texts, y, w


@dataclass
class HeadFit:
    """A fitted head: a weight row and bias per leaf, and pruned word weights (already in logits)."""

    weights: np.ndarray
    bias: np.ndarray
    lexicon: dict[str, list[tuple[int, float]]]

    def logits(self, vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """What ``LeafHead.probabilities`` computes before its softmax, for many clauses at once."""
        out = vectors @ self.weights.T + self.bias
        for row, text in enumerate(texts):
            for feature in lexical_features(text):
                for i, w in self.lexicon.get(feature, ()):
                    out[row, i] += w
        return out


def fit_head(
    x: np.ndarray,
    texts: Sequence[str],
    y: Sequence[str],
    paths: Sequence[str],
    c: float,
    weight: Sequence[float] | None = None,
    alpha: float = LEX_ALPHA,
) -> HeadFit:
    """Multinomial logistic regression over [clause vector, ``alpha`` x word features]; rows for
    every path (a leaf never seen gets a low bias). Word features held by fewer than
    :data:`LEX_MIN_COUNT` training texts are not learnt; word weights under :data:`LEX_PRUNE` are
    dropped, and every score reported is of the pruned head, as shipped."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    feats = [lexical_features(t) for t in texts]
    counts = Counter(f for fs in feats for f in fs)
    vocab = sorted(f for f, n in counts.items() if n >= LEX_MIN_COUNT) if alpha > 0 else []
    col = {f: j for j, f in enumerate(vocab)}
    cells = [(r, col[f]) for r, fs in enumerate(feats) for f in fs if f in col]
    lex = sparse.csr_matrix(
        ([alpha] * len(cells), ([r for r, _ in cells], [j for _, j in cells])), shape=(len(texts), len(vocab))
    )
    design = sparse.hstack([sparse.csr_matrix(x), lex], format="csr")
    model = LogisticRegression(C=c, max_iter=2000, random_state=SEED)
    model.fit(design, list(y), sample_weight=None if weight is None else np.asarray(weight))
    index = {p: i for i, p in enumerate(paths)}
    dim = x.shape[1]
    weights = np.zeros((len(paths), dim), dtype=np.float64)
    bias = np.full(len(paths), float(model.intercept_.min()) - 5.0)
    lexicon: dict[str, list[tuple[int, float]]] = {}
    for row, cls in enumerate(model.classes_):
        weights[index[cls]] = model.coef_[row, :dim]
        bias[index[cls]] = model.intercept_[row]
        for j in np.flatnonzero(np.abs(model.coef_[row, dim:]) * alpha >= LEX_PRUNE):
            w = round(float(model.coef_[row, dim + j]) * alpha, 3)
            lexicon.setdefault(vocab[j], []).append((index[cls], w))
    return HeadFit(weights, bias, {f: sorted(p) for f, p in sorted(lexicon.items())})


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def run(
    spc: Path | None,
    out: Path | None,
    cache: Path | None,
    c: float,
    labels: Path,
    *,
    embed: Embed | None = None,
    schema: Schema | None = None,
    alpha: float = LEX_ALPHA,
    errors: Path | None = None,
) -> dict[str, Any]:
    """Cross-validate, report, and (with ``out``) write the head refitted on everything; with
    ``errors``, write the out-of-fold misplacements outside the held-out slice (JSONL) to read."""
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
        rule_texts, rule_labels = rule_labelled_personas(
            spc, schema, gold_dialogues, gold=[r["clause"] for r in rows]
        )
    print(
        f"schema texts {len(base_texts)}, rule-labelled personas {len(rule_texts)}, gold {len(rows)}",
        file=sys.stderr,
    )
    base = (embed(base_texts + rule_texts), base_texts + rule_texts, base_labels + rule_labels)
    forms = {form: [r[form] for r in rows] for form in ("clause", "fact")}
    vecs = {form: embed(texts) for form, texts in forms.items()}
    signals = {form: Signals(schema, forms[form], vecs[form], embed) for form in forms}

    def fit_on(train: np.ndarray) -> HeadFit:
        x, texts, y, w = training_set(base, rows, vecs, train)
        return fit_head(x, texts, y, schema.paths, c, w, alpha)

    def head_signal(fit: HeadFit, idx: np.ndarray) -> None:
        for form in forms:
            signals[form].head[idx] = softmax(fit.logits(vecs[form][idx], [forms[form][i] for i in idx]))

    folds = [f for f in grouped_folds(rows) if len(f)]
    everything = np.arange(len(rows))
    for k, test in enumerate(folds):
        head_signal(fit_on(np.setdiff1d(everything, test)), test)
        print(f"fold {k}: {len(test)} held out", file=sys.stderr)

    report: dict[str, Any] = {"gold": len(rows), "groups": len({group_of(r["source"]) for r in rows})}
    report["lex_alpha"] = alpha
    for form in forms:
        report[form] = cross_validated(signals[form], rows, folds)
    blend_right = blend_right_oof(signals["clause"], rows, folds)
    report["source_split"] = {
        src: {
            **{
                name: round(accuracy(signals["clause"], rows, idx, b), 3)
                for name, b in (("prior", Blend(1.0, 0.0, 0.0, -1.0)), ("head", Blend(0.0, 1.0, 0.0, -1.0)))
            },
            "blend": round(float(blend_right[idx].mean()), 3),
            "clauses": len(idx),
        }
        for src in ("locomo", "spc")
        if len(idx := np.array([i for i, r in enumerate(rows) if r["source"].startswith(src)])) > 0
    }
    blend = choose_blend(signals["clause"], rows, everything, use_head=True)
    report["blend_all_folds_oof"] = asdict(blend)
    report["prior_only_blend"] = asdict(choose_blend(signals["clause"], rows, everything, use_head=False))
    report["abstain"] = abstain_curve(signals["clause"], rows, blend)
    if errors is not None:
        write_errors(errors, signals["clause"], rows, blend)
    slice_ = np.array([i for i, r in enumerate(rows) if is_held_out(r["source"])], dtype=int)
    if 0 < len(slice_) < len(rows):
        rest = np.setdiff1d(everything, slice_)
        # blends are picked on the rest's out-of-fold signals before the slice gets its own head
        picked = {
            "prior_alias": choose_blend(signals["clause"], rows, rest, use_head=False),
            "blend": choose_blend(signals["clause"], rows, rest, use_head=True),
        }
        head_signal(fit_on(rest), slice_)
        s = signals["clause"]
        report["held_out"] = {
            "clauses": len(slice_),
            "prior": round(accuracy(s, rows, slice_, Blend(1.0, 0.0, 0.0, -1.0)), 3),
            "prior_alias": round(accuracy(s, rows, slice_, picked["prior_alias"]), 3),
            "head": round(accuracy(s, rows, slice_, Blend(0.0, 1.0, 0.0, -1.0)), 3),
            "blend": round(accuracy(s, rows, slice_, picked["blend"]), 3),
        }
    if out is not None:
        fit = fit_on(everything)
        write_head(out, schema, fit, blend, report, spc, c, alpha, inputs_digest(schema, labels))
    return report


def write_head(
    out: Path,
    schema: Schema,
    fit: HeadFit,
    blend: Blend,
    report: dict[str, Any],
    spc: Path | None,
    c: float,
    alpha: float,
    inputs: str,
) -> None:
    scale = float(np.abs(fit.weights).max()) or 1.0
    packed = (fit.weights / scale).astype("<f2").tobytes()
    doc = {
        "format": HEAD_FORMAT,
        "schema": {"id": schema.id, "version": schema.version},
        "paths_digest": paths_digest(schema),
        "embedder": "minilm (sentence-transformers/all-MiniLM-L6-v2, unit vectors)",
        "dim": int(fit.weights.shape[1]),
        "scale": scale,
        "blend": asdict(blend),
        "trained_by": "python -m evaluation.placement_train",
        "training": {
            "C": c,
            "lex_alpha": alpha,
            "lex_min_count": LEX_MIN_COUNT,
            "lex_prune": LEX_PRUNE,
            "inputs_sha256": inputs,
            "data": [
                "personatree-default v1: leaf texts, examples, aliases",
                "evaluation/fixtures/leaf_labels.jsonl: clause and fact forms",
                "rule-labelled persona sentences (exactly one leaf's alias) of "
                "../shared/benchmarks/synthetic_persona_chat/valid.csv dialogues 0..799 not in the gold, "
                "none equal to a gold clause"
                if spc is not None
                else "(no SPC personas)",
            ],
            "cross_validated": {k: report[k] for k in ("clause", "fact")},
            "held_out": report.get("held_out"),
            "prior_only_blend": report["prior_only_blend"],
        },
        "paths": list(schema.paths),
        "bias": [round(float(b), 4) for b in fit.bias],
        "weights_f16": base64.b64encode(packed).decode("ascii"),
        "lexicon": {f: " ".join(f"{i}:{w:g}" for i, w in pairs) for f, pairs in fit.lexicon.items()},
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
    parser.add_argument(
        "--lex-alpha", type=float, default=LEX_ALPHA, help="word feature value (0: clause vector only)"
    )
    parser.add_argument("--errors", type=Path, default=None, help="write out-of-fold misplacements (JSONL)")
    args = parser.parse_args(argv)
    report = run(
        args.spc, args.out, args.cache, args.c, args.labels, alpha=args.lex_alpha, errors=args.errors
    )
    print(json.dumps(report, indent=1))
    counts = Counter(r["leaf"] for r in load_labels(args.labels))
    print(f"{len(counts)} distinct gold leaves", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
