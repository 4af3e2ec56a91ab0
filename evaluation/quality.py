"""LLM-free memory quality: are the written values the user's, does the tree hold the known facts,
and does a context hold the answer. Pure functions of their arguments (the embedder is injected).

- :func:`value_metrics` — per applied model ADD/UPDATE value: *grounded* (the gate's own
  ``check_grounding`` against the subject's turns of the op's chunk + the leaf's old value),
  *invented* (a number or proper noun that is in neither the subject's turns nor the old value;
  the other speaker's turns do not count as a source) and *wrong speaker* (not grounded in the
  subject's turns, grounded in the other speaker's turns of that chunk, old value included in both).
- :func:`observation_coverage` — the tree's clauses (every value split on ``;``) against a list of
  known facts (LoCoMo's per-speaker ``observation``): a fact is covered at τ when its best cosine
  against any clause is ≥ τ; precision is the share of clauses whose best cosine against any fact
  is ≥ ``precision_tau`` (0.5). ``tree_tokens`` counts ``path: value`` lines, one per non-empty leaf
  sorted by path, with ``memory.engine.render.count_tokens`` (the paths render style, no schema).
- :func:`context_answer_recall` — the share of the gold answer's distinct tokens (folded words,
  stopwords removed unless nothing else is left) that occur in a context text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from memory.engine.grounding import check_grounding, proper_nouns
from memory.engine.render import count_tokens
from memory.engine.text import STOPWORDS, fold, number_tokens, tokens_folded, words

Embed = Callable[[Sequence[str]], "np.ndarray"]  # texts -> (n, d) unit vectors
TAUS = (0.5, 0.6, 0.7)
PRECISION_TAU = 0.5
_EXAMPLES = 5


def _rate(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def invented_tokens(value: str, sources: Iterable[str | None]) -> list[str]:
    """Numbers and proper nouns of ``value`` found in none of ``sources`` (folded, possessive-tolerant)."""
    texts = [s for s in sources if s]
    numbers = set().union(*(number_tokens(t) for t in texts)) if texts else set()
    known = tokens_folded(texts)
    out = [n for n in sorted(number_tokens(value)) if n not in numbers]
    for name in proper_nouns(value):
        f = fold(name)
        base = f[:-2] if f.endswith("'s") else f
        if f not in known and base not in known and name not in out:
            out.append(name)
    return out


def value_metrics(rows: Iterable[Mapping]) -> dict:
    """Counts and rates over applied ADD/UPDATE values; each row has ``new_value``, ``old_value``
    (or None), ``user_text`` (the subject's turns of the op's chunk) and ``other_text`` (the other
    speaker's turns). Rates are None when there is no row."""
    n = grounded = invented = wrong = 0
    invented_examples, wrong_examples = [], []
    for row in rows:
        value, old = row["new_value"], row.get("old_value")
        user, other = row.get("user_text") or "", row.get("other_text") or ""
        n += 1
        in_user = check_grounding(value, [user], old).ok
        grounded += in_user
        made_up = invented_tokens(value, [user, old])
        if made_up:
            invented += 1
            if len(invented_examples) < _EXAMPLES:
                invented_examples.append({"value": value, "tokens": made_up})
        if not in_user and other and check_grounding(value, [other], old).ok:
            wrong += 1
            if len(wrong_examples) < _EXAMPLES:
                wrong_examples.append(value)
    return {
        "values": n,
        "grounded": grounded,
        "invented": invented,
        "wrong_speaker": wrong,
        "grounded_rate": _rate(grounded, n),
        "invented_rate": _rate(invented, n),
        "wrong_speaker_rate": _rate(wrong, n),
        "invented_examples": invented_examples,
        "wrong_speaker_examples": wrong_examples,
    }


def tree_clauses(tree: Mapping[str, str]) -> list[str]:
    return [c.strip() for value in tree.values() for c in (value or "").split(";") if c.strip()]


def tree_tokens(tree: Mapping[str, str]) -> int:
    """Tokens of the tree as ``path: value`` lines (non-empty leaves, sorted by path)."""
    lines = [f"{path}: {' '.join(value.split())}" for path, value in sorted(tree.items()) if value]
    return count_tokens("\n".join(lines))


def _tau_key(tau: float) -> str:
    return f"{tau:g}"


def observation_coverage(
    tree: Mapping[str, str],
    observations: Sequence[str],
    embed: Embed,
    taus: Sequence[float] = TAUS,
    *,
    precision_tau: float = PRECISION_TAU,
) -> dict:
    """Coverage of ``observations`` by the tree's clauses per τ, and the clauses' precision (see the
    module docstring). Coverage is None without facts, 0 for an empty tree; precision is None when
    there is no clause or no fact."""
    facts = [f.strip() for f in observations if f and f.strip()]
    clauses = tree_clauses(tree)
    covered = dict.fromkeys(map(_tau_key, taus), 0)
    precise = None
    if facts and clauses:
        sims = np.asarray(embed(facts)) @ np.asarray(embed(clauses)).T  # (facts, clauses)
        best_fact, best_clause = sims.max(axis=1), sims.max(axis=0)
        covered = {_tau_key(t): int((best_fact >= t - 1e-9).sum()) for t in taus}
        precise = int((best_clause >= precision_tau - 1e-9).sum())
    return {
        "facts": len(facts),
        "clauses": len(clauses),
        "tree_tokens": tree_tokens(tree),
        "covered": covered,
        "coverage": {k: _rate(v, len(facts)) for k, v in covered.items()},
        "precise_clauses": precise,
        "precision": _rate(precise, len(clauses)) if precise is not None else None,
        "precision_tau": precision_tau,
    }


def pool_coverage(parts: Sequence[dict]) -> dict:
    """Several subjects' :func:`observation_coverage` results as one (facts and clauses pooled,
    tree tokens summed)."""
    facts = sum(p["facts"] for p in parts)
    clauses = sum(p["clauses"] for p in parts)
    keys = list(parts[0]["covered"]) if parts else [_tau_key(t) for t in TAUS]
    covered = {k: sum(p["covered"][k] for p in parts) for k in keys}
    measured = [p["precise_clauses"] for p in parts if p["precise_clauses"] is not None]
    measured_clauses = sum(p["clauses"] for p in parts if p["precise_clauses"] is not None)
    precise = sum(measured) if measured else None
    return {
        "facts": facts,
        "clauses": clauses,
        "tree_tokens": sum(p["tree_tokens"] for p in parts),
        "covered": covered,
        "coverage": {k: _rate(v, facts) for k, v in covered.items()},
        "precise_clauses": precise,
        "precision": _rate(precise, measured_clauses) if precise is not None else None,
        "precision_tau": parts[0]["precision_tau"] if parts else PRECISION_TAU,
    }


def answer_tokens(answer: str | None) -> list[str]:
    """Distinct folded words of the answer, stopwords removed (all words if only stopwords)."""
    tokens = list(dict.fromkeys(fold(w) for w in words(answer or "")))
    content = [t for t in tokens if t not in STOPWORDS and t.replace("'", "") not in STOPWORDS]
    return content or tokens


def context_answer_recall(context: str | None, answer: str | None) -> float | None:
    """Share of the gold answer's tokens present in ``context``; None for an empty answer."""
    tokens = answer_tokens(answer)
    if not tokens:
        return None
    present = tokens_folded([context or ""])
    present |= {part for t in list(present) if "-" in t for part in t.split("-")}
    return round(sum(t in present for t in tokens) / len(tokens), 4)


def context_recall_section(items: Sequence[dict]) -> dict:
    """Per mode: mean context answer recall (overall and per category), the share of questions whose
    context holds every answer token, and how many could not be measured (no gold answer, or the
    context was not obtained)."""
    by_mode: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        by_mode[item["mode"]].append(item)
    out = {}
    for mode, rows in by_mode.items():
        values = [r["recall"] for r in rows if r["recall"] is not None]
        groups: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            if r["recall"] is not None:
                groups[r["category"]].append(r["recall"])
        out[mode] = {
            "n": len(values),
            "mean": round(float(np.mean(values)), 4) if values else None,
            "full": round(sum(v >= 1.0 for v in values) / len(values), 4) if values else None,
            "unmeasured": len(rows) - len(values),
            "per_group": {g: round(float(np.mean(v)), 4) for g, v in sorted(groups.items())},
        }
    return out


__all__ = [
    "TAUS",
    "answer_tokens",
    "context_answer_recall",
    "context_recall_section",
    "invented_tokens",
    "observation_coverage",
    "pool_coverage",
    "tree_clauses",
    "tree_tokens",
    "value_metrics",
]
