"""Train the fact classifier (``memory.engine.facts``) and write its artefact, with provenance.

Run from the repository root::

    .venv/bin/python -m evaluation.facts_train \\
        --locomo ../shared/benchmarks/locomo/locomo_dev5.json \\
        --spc ../shared/benchmarks/synthetic_persona_chat/valid.csv \\
        --out memory/engine/models/facts.json

Training data (development data only; the held-out parts are scored once, at the end):

- LoCoMo conv-26, conv-30, conv-41, conv-42 (conv-43 is held out). For each speaker X, X's turns
  (with an image's caption appended as the product does: ``[shares an image: ...]``) are cut into
  clauses with the listener's segmenter. A statement (no "?", no image caption) of a turn that is
  the evidence of one of X's observations is ``self`` when its cosine to one of them is >= 0.5, or
  when it is the turn's best statement for that observation (cosine >= 0.3) and says I/me/my/we —
  both sides neutralised (X's name, first-person words on the clause side, third-person pronouns
  on the observation side all become "someone") — and ``relation`` instead when that observation
  names the other speaker and the clause states it ("we've been friends", "we met"...; left out
  when it only says we/us/our). Other statements of an evidence turn with
  a cosine in [0.35, 0.5) are ambiguous and left out. Every other clause is ``third_party`` when it
  opens with he/she/they/his/her/their and says nothing in the first person, ``relation`` when it
  says "we've been friends", "our friendship", "known each other", "we met"..., else ``none``
  (questions and captions always ``none``).
- Synthetic-Persona-Chat valid dialogues 0..799 (800..999 are held out): a speaker's statement is
  ``self`` when its cosine to one of that speaker's persona sentences is >= 0.6; a first-person
  statement in [0.5, 0.6) is ambiguous and left out; everything else (questions included) is
  ``none``. Both sides already speak in the first person, so they are compared as said
  (neutralising both the same way changes nothing in kind and would double the embedding cost).

The model is a multinomial logistic regression (scikit-learn) over [MiniLM vector + the lexical
features of ``memory.engine.facts``]. C and the keep threshold (``P(self) + P(relation) >= t``,
best keep-vs-drop F1 of the out-of-fold predictions) are chosen by 5-fold cross-validation grouped
by LoCoMo session / SPC dialogue; the two sources get equal total weight. Fixed seeds, sorted inputs.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evaluation.facts_data import (
    NEUTRAL,
    Example,
    clause_splitter,
    is_caption,
    locomo_turns,
    neutral_clause,
    neutral_observation,
    read_spc,
    spc_turns,
    turn_text,
)
from evaluation.facts_labels import (
    AMBIGUOUS_COS,
    BEST_COS,
    POSITIVE_COS,
    SPC_AMBIGUOUS_COS,
    SPC_COS,
    label_all,
    label_turn,
    texts_to_embed,
)
from evaluation.facts_model import (
    KEEP,
    SEED,
    Embed,
    artefact,
    best_threshold,
    cross_validate,
    design,
    embed_texts,
    evaluate,
    fit,
    keep_scores,
    source_weights,
)
from memory.engine.facts import FEATURES, LABELS, FactClassifier

__all__ = [
    "NEUTRAL", "Example", "clause_splitter", "is_caption", "locomo_turns", "neutral_clause",
    "neutral_observation", "read_spc", "spc_turns", "turn_text", "label_all", "label_turn",
    "texts_to_embed", "KEEP", "SEED", "artefact", "best_threshold", "cross_validate", "design",
    "embed_texts", "evaluate", "keep_scores", "source_weights", "train", "main",
]  # fmt: skip

TRAIN_CONVS = ("conv-26", "conv-30", "conv-41", "conv-42")
VALID_CONVS = ("conv-43",)
SPC_TRAIN = range(0, 800)
SPC_VALID = range(800, 1000)
C_GRID = (0.25, 1.0, 4.0)
FOLDS = 5


def train(
    locomo_records: Sequence[dict],
    spc_rows: Sequence[dict],
    embed: Embed,
    *,
    locomo_name: str,
    spc_name: str,
    train_convs: Sequence[str] | None = None,
    valid_convs: Sequence[str] | None = None,
    spc_train: Sequence[int] | None = None,
    spc_valid: Sequence[int] | None = None,
    held_out: bool = True,
    cache: Path | None = None,
    folds: int | None = None,
    grid: Sequence[float] | None = None,
    command: str = "",
) -> tuple[dict, dict]:
    """Label, embed, cross-validate, fit; the artefact and a summary (held-out scores if ``held_out``).

    The splits, folds and C grid default to the module's constants (read at call time)."""
    import sklearn

    train_convs = TRAIN_CONVS if train_convs is None else train_convs
    valid_convs = VALID_CONVS if valid_convs is None else valid_convs
    spc_train = SPC_TRAIN if spc_train is None else spc_train
    spc_valid = SPC_VALID if spc_valid is None else spc_valid
    folds = FOLDS if folds is None else folds
    grid = C_GRID if grid is None else grid

    splitter_name, split = clause_splitter()
    train_turns = locomo_turns(locomo_records, train_convs, split) + spc_turns(spc_rows, spc_train, split)
    valid_turns = []
    if held_out:
        valid_turns = locomo_turns(locomo_records, valid_convs, split) + spc_turns(spc_rows, spc_valid, split)
    vectors = embed_texts(texts_to_embed(train_turns + valid_turns), embed, cache)
    examples = label_all(train_turns, vectors)
    if len({e.label in KEEP for e in examples}) < 2:
        raise ValueError("the training data needs both kept and dropped clauses")
    x = design(examples, vectors)
    dim = x.shape[1] - len(FEATURES)
    cv = cross_validate(x, examples, folds, grid)
    y = np.array([LABELS.index(e.label) for e in examples])
    model = fit(x, y, source_weights(examples), cv["C"])
    provenance = {
        "data": {
            "locomo": {
                "file": locomo_name,
                "conversations": list(train_convs),
                "held_out": list(valid_convs),
            },
            "spc": {
                "file": spc_name,
                "dialogues": _span(spc_train),
                "held_out": _span(spc_valid),
            },
        },
        "clauses": splitter_name,
        "embedder": "all-MiniLM-L6-v2 (serving.embedder, minilm)",
        "counts": {
            source: dict(sorted(Counter(e.label for e in examples if e.source == source).items()))
            for source in sorted({e.source for e in examples})
        },
        "rules": {
            "locomo_positive_cos": POSITIVE_COS,
            "locomo_best_clause_cos": BEST_COS,
            "locomo_ambiguous_from": AMBIGUOUS_COS,
            "spc_self_cos": SPC_COS,
            "spc_ambiguous_from": SPC_AMBIGUOUS_COS,
        },
        "command": command,
        "sklearn": sklearn.__version__,
        "model": "LogisticRegression (multinomial, lbfgs, L2), source-balanced sample weights",
        "C": cv["C"],
        "seed": SEED,
        "cv": {"folds": folds, "grouped_by": "LoCoMo session / SPC dialogue", **cv},
    }
    data = artefact(model, dim, cv["threshold"], provenance)
    summary = {"counts": provenance["counts"], "cv": provenance["cv"]}
    if held_out:
        classifier = FactClassifier.from_dict(data)
        summary["held_out"] = evaluate(classifier, label_all(valid_turns, vectors), vectors)
        data["provenance"]["held_out"] = summary["held_out"]
    return data, summary


def _span(indices: Sequence[int]) -> str:
    values = list(indices)
    return f"{values[0]}..{values[-1]}" if values else ""


def _display_name(path: str) -> str:
    """``../shared/benchmarks/...`` for the shared data, else the file's name (never an absolute path)."""
    parts = Path(path).resolve().parts
    if "benchmarks" in parts:
        return "../shared/benchmarks/" + "/".join(parts[parts.index("benchmarks") + 1 :])
    return Path(path).name


def main(argv: Sequence[str] | None = None, embed: Embed | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.facts_train", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--locomo", required=True, help="LoCoMo JSON (../shared/benchmarks/locomo/locomo_dev5.json)"
    )
    parser.add_argument("--spc", required=True, help="Synthetic-Persona-Chat valid.csv")
    parser.add_argument(
        "--out", required=True, help="where to write the artefact (memory/engine/models/facts.json)"
    )
    parser.add_argument("--cache", default="", help="an .npz of embeddings to reuse between runs (optional)")
    parser.add_argument(
        "--skip-held-out", action="store_true", help="do not embed or score the held-out data"
    )
    args = parser.parse_args(argv)
    np.random.seed(SEED)
    if embed is None:
        from serving.embedder import get_embedder

        embed = get_embedder("minilm").embed
    records = json.loads(Path(args.locomo).read_text(encoding="utf-8"))
    rows = read_spc(args.spc)
    command = (
        "python -m evaluation.facts_train --locomo ../shared/benchmarks/locomo/locomo_dev5.json "
        "--spc ../shared/benchmarks/synthetic_persona_chat/valid.csv --out memory/engine/models/facts.json"
    )
    data, summary = train(
        records,
        rows,
        embed,
        locomo_name=_display_name(args.locomo),
        spc_name=_display_name(args.spc),
        held_out=not args.skip_held_out,
        cache=Path(args.cache) if args.cache else None,
        command=command,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    print(
        f"wrote {out} ({out.stat().st_size} bytes, threshold {data['threshold']}, C {data['provenance']['C']})"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
