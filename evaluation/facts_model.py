"""The fact classifier's model: embedding the clauses (cached), the design matrix, grouped
cross-validation of C and the keep threshold, the JSON artefact and held-out scores. Used by
``evaluation.facts_train``."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from evaluation.facts_data import Example
from memory.engine.facts import FEATURES, LABELS, FactClassifier, lexical_features

Embed = Callable[[Sequence[str]], np.ndarray]

SEED = 0
KEEP = frozenset({"self", "relation"})


def embed_texts(
    texts: Sequence[str], embed: Embed, cache: Path | None = None, batch: int = 2048
) -> dict[str, np.ndarray]:
    """``text -> unit vector`` for every text, embedding only what ``cache`` (an .npz) lacks."""
    known: dict[str, np.ndarray] = {}
    if cache is not None and cache.exists():
        with np.load(cache, allow_pickle=False) as data:
            known = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
    missing = [t for t in texts if t not in known]
    started = time.monotonic()
    for start in range(0, len(missing), batch):
        part = missing[start : start + batch]
        known.update(zip(part, np.asarray(embed(part), dtype=np.float32), strict=True))
        print(
            f"  embedded {start + len(part)}/{len(missing)} ({time.monotonic() - started:.0f}s)",
            file=sys.stderr,
        )
        if cache is not None:
            keys = sorted(known)
            np.savez(cache, texts=np.array(keys), vectors=np.stack([known[k] for k in keys]))
    return {t: known[t] for t in texts}


# --- model -----------------------------------------------------------------------------------------


def design(examples: Sequence[Example], vectors: dict[str, np.ndarray]) -> np.ndarray:
    return np.stack(
        [
            np.concatenate([vectors[e.text], np.array(lexical_features(e.text), dtype=np.float32)])
            for e in examples
        ]
    )


def source_weights(examples: Sequence[Example]) -> np.ndarray:
    """Each source gets the same total weight (mean 1 over all examples)."""
    counts = Counter(e.source for e in examples)
    n = len(examples)
    return np.array([n / (len(counts) * counts[e.source]) for e in examples], dtype=np.float64)


def keep_scores(
    truth: np.ndarray, predicted: np.ndarray, weights: np.ndarray | None = None
) -> dict[str, float]:
    """Keep-vs-drop accuracy, precision, recall and F1 (weighted when ``weights`` is given)."""
    w = np.ones(len(truth)) if weights is None else weights
    tp = float(w[truth & predicted].sum())
    fp = float(w[~truth & predicted].sum())
    fn = float(w[truth & ~predicted].sum())
    accuracy = float(w[truth == predicted].sum() / w.sum()) if len(w) else 0.0
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "accuracy": round(accuracy, 4),
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
    }


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=500, random_state=SEED)
    model.fit(x, y, sample_weight=w)
    return model


def _p_keep(model, x: np.ndarray) -> np.ndarray:
    proba = model.predict_proba(x)
    classes = [int(c) for c in model.classes_]
    columns = [classes.index(LABELS.index(label)) for label in sorted(KEEP) if LABELS.index(label) in classes]
    return proba[:, columns].sum(axis=1)


def best_threshold(truth: np.ndarray, p_keep: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """The threshold (0.05..0.95 by 0.01) with the best weighted keep F1, and that F1."""
    best = (0.5, -1.0)
    for t in np.round(np.arange(0.05, 0.951, 0.01), 2):
        f1 = keep_scores(truth, p_keep >= t, weights)["f1"]
        if f1 > best[1]:
            best = (float(t), f1)
    return best


def cross_validate(x: np.ndarray, examples: Sequence[Example], folds: int, grid: Sequence[float]) -> dict:
    """Grouped k-fold CV over ``grid``: the best C, its threshold and its out-of-fold keep scores."""
    from sklearn.model_selection import GroupKFold

    y = np.array([LABELS.index(e.label) for e in examples])
    truth = np.array([e.label in KEEP for e in examples])
    w = source_weights(examples)
    groups = np.array([e.group for e in examples])
    splits = list(GroupKFold(n_splits=folds).split(x, y, groups))
    results = []
    for c in grid:
        oof = np.zeros(len(examples))
        for train, test in splits:
            oof[test] = _p_keep(fit(x[train], y[train], w[train], c), x[test])
        t, f1 = best_threshold(truth, oof, w)
        results.append((f1, -c, c, t, oof))
    f1, _, c, t, oof = max(results, key=lambda r: (r[0], r[1]))
    by_source = {
        source: keep_scores(truth[mask], oof[mask] >= t)
        for source in sorted({e.source for e in examples})
        if (mask := np.array([e.source == source for e in examples])).any()
    }
    return {
        "C": c,
        "threshold": t,
        "grid_f1": {str(r[2]): round(r[0], 4) for r in results},
        "oof_weighted": keep_scores(truth, oof >= t, w),
        "oof_by_source": by_source,
    }


def _sig(value: float, digits: int = 5) -> float:
    return float(f"{value:.{digits}g}")


def artefact(model, dim: int, threshold: float, provenance: dict) -> dict:
    """The JSON artefact: weights in :data:`LABELS` order, rounded to 5 significant digits."""
    order = [list(model.classes_).index(i) if i in model.classes_ else None for i in range(len(LABELS))]
    width = dim + len(FEATURES)
    weights = [[_sig(v) for v in model.coef_[k]] if k is not None else [0.0] * width for k in order]
    bias = [_sig(float(model.intercept_[k])) if k is not None else -30.0 for k in order]
    return {
        "format": "personatree.facts/1",
        "labels": list(LABELS),
        "features": list(FEATURES),
        "dim": dim,
        "threshold": threshold,
        "weights": weights,
        "bias": bias,
        "provenance": provenance,
    }


def evaluate(classifier: FactClassifier, examples: Sequence[Example], vectors: dict[str, np.ndarray]) -> dict:
    """Keep-vs-drop scores of ``classifier`` on labelled examples, per source."""
    out: dict[str, dict] = {}
    for source in sorted({e.source for e in examples}):
        chosen = [e for e in examples if e.source == source]
        verdicts = classifier.classify([e.text for e in chosen], [vectors[e.text].tolist() for e in chosen])
        truth = np.array([e.label in KEEP for e in chosen])
        predicted = np.array([v.label in KEEP for v in verdicts])
        labels = dict(sorted(Counter(e.label for e in chosen).items()))
        out[source] = {**keep_scores(truth, predicted), "n": len(chosen), "labels": labels}
    return out
