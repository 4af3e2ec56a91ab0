"""Scoring a leaf placer on hand-labelled clauses: signals, blends, folds, the held-out slice.

Used by ``evaluation/placement_train.py`` (see its docstring for what is reported). A clause is
right when the top-1 leaf is its label or an accepted ``alt``; an unfiled clause is wrong.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory.engine.placement import Blend, LeafPlacer
from memory.engine.schema import Schema

FOLDS = 5
SEED = 23
Embed = Callable[[Sequence[str]], np.ndarray]


def group_of(source: str) -> str:
    """``locomo:conv-26:D1:3`` -> ``locomo:conv-26``; ``spc:17:user 1:persona`` -> ``spc:17``."""
    return ":".join(source.split(":")[:2])


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
        self.barred = np.zeros_like(self.prior)  # as ``LeafPlacer.rank``: -inf where a leaf may not go
        for i, clause in enumerate(clauses):
            for path, (hit, barred) in placer.alias_signals(clause).items():
                self.alias[i, col[path]] = 1.0 if hit else 0.0
                self.barred[i, col[path]] = -np.inf if barred else 0.0
        self.head = np.zeros_like(self.prior)


def correct(pred: np.ndarray, rows: Sequence[dict[str, Any]], paths: Sequence[str]) -> np.ndarray:
    return np.array(
        [pred[i] >= 0 and paths[pred[i]] in {r["leaf"], *r.get("alt", [])} for i, r in enumerate(rows)]
    )


def blended(s: Signals, b: Blend, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    score = b.prior * s.prior[idx] + b.head * s.head[idx] + b.alias * s.alias[idx] + s.barred[idx]
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


def is_held_out(source: str) -> bool:
    """The held-out slice: LoCoMo conv-42 and SPC dialogues 100..199 of the fixture. Frozen before
    the word features and schema edits were tried, and never read for errors while tuning them."""
    group = group_of(source)
    if group.startswith("spc:"):
        return 100 <= int(group.split(":")[1]) <= 199
    return group == "locomo:conv-42"


def blend_right_oof(s: Signals, rows: Sequence[dict[str, Any]], folds: Sequence[np.ndarray]) -> np.ndarray:
    """Per labelled clause, whether the blend is right on it, each fold's blend picked on the other
    folds (as ``cross_validated`` does): its mean over any subset is that subset's CV accuracy."""
    everything = np.arange(len(rows))
    right = np.zeros(len(rows), dtype=bool)
    for test in folds:
        b = choose_blend(s, rows, np.setdiff1d(everything, test), use_head=True)
        pred, top = blended(s, b, test)
        right[test] = correct(np.where(top >= b.threshold, pred, -1), [rows[i] for i in test], s.paths)
    return right


def cross_validated(s: Signals, rows: Sequence[dict[str, Any]], folds: Sequence[np.ndarray]) -> dict:
    """Accuracy by component, each fold scored with blends picked on the other folds."""
    everything = np.arange(len(rows))
    per: dict[str, list[float]] = {"prior": [], "prior_alias": [], "head": [], "blend": []}
    for test in folds:
        others = np.setdiff1d(everything, test)
        per["prior"].append(accuracy(s, rows, test, Blend(1.0, 0.0, 0.0, -1.0)))
        per["head"].append(accuracy(s, rows, test, Blend(0.0, 1.0, 0.0, -1.0)))
        per["prior_alias"].append(accuracy(s, rows, test, choose_blend(s, rows, others, use_head=False)))
        per["blend"].append(accuracy(s, rows, test, choose_blend(s, rows, others, use_head=True)))
    sizes = np.array([len(f) for f in folds])
    return {name: round(float(np.dot(v, sizes) / sizes.sum()), 3) for name, v in per.items()}


def abstain_curve(s: Signals, rows: Sequence[dict[str, Any]], b: Blend) -> list[dict[str, float]]:
    """For thresholds at percentiles of the out-of-fold best scores: the share of labelled clauses
    filed, the accuracy among those filed, and the accuracy with unfiled counted wrong."""
    idx = np.arange(len(rows))
    pred, top = blended(s, b, idx)
    right = correct(pred, rows, s.paths)
    out = []
    for pct in (0, 2, 5, 10, 20):
        threshold = float(np.percentile(top, pct)) if pct else -1.0
        filed = top >= threshold
        out.append(
            {
                "percentile": pct,
                "threshold": round(threshold, 3),
                "filed": round(float(filed.mean()), 3),
                "accuracy_filed": round(float(right[filed].mean()), 3) if filed.any() else 0.0,
                "accuracy": round(float((right & filed).mean()), 3),
            }
        )
    return out


def write_errors(path: Path, s: Signals, rows: Sequence[dict[str, Any]], b: Blend) -> None:
    """Out-of-fold misplacements of the blend, held-out slice left out, worst score first."""
    pred, top = blended(s, b, np.arange(len(rows)))
    right = correct(pred, rows, s.paths)
    wrong = [i for i, r in enumerate(rows) if not right[i] and not is_held_out(r["source"])]
    lines = [
        {
            "clause": rows[i]["clause"],
            "source": rows[i]["source"],
            "leaf": rows[i]["leaf"],
            "got": s.paths[pred[i]],
            "score": round(float(top[i]), 4),
        }
        for i in sorted(wrong, key=lambda i: -top[i])
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
