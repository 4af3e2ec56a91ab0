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
import csv
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memory.engine.facts import FEATURES, LABELS, FactClassifier, lexical_features

Embed = Callable[[Sequence[str]], np.ndarray]

TRAIN_CONVS = ("conv-26", "conv-30", "conv-41", "conv-42")
VALID_CONVS = ("conv-43",)
SPC_TRAIN = range(0, 800)
SPC_VALID = range(800, 1000)
C_GRID = (0.25, 1.0, 4.0)
FOLDS = 5
SEED = 0
POSITIVE_COS = 0.5  # any clause of an evidence turn this close to one of its observations
BEST_COS = 0.3  # the best clause of the turn for an observation, if at least this close
AMBIGUOUS_COS = 0.35  # evidence-turn clauses in [AMBIGUOUS_COS, POSITIVE_COS) are left out
SPC_COS = 0.6
SPC_AMBIGUOUS_COS = 0.5  # a first-person SPC statement in [0.5, 0.6) is left out
NEUTRAL = "someone"
KEEP = frozenset({"self", "relation"})

_DIA = re.compile(r"D\d+:\d+")
_SESSION = re.compile(r"^session_(\d+)$")
_FIRST = re.compile(r"\b(?:I'm|I've|I'd|I'll|I|me|my|mine|myself)\b", re.IGNORECASE)
_THIRD = re.compile(r"\b(?:he|she|him|her|his|hers|himself|herself|they|them|their)\b", re.IGNORECASE)
_WE = re.compile(r"\b(?:we|we're|we've|us|our|ours)\b", re.IGNORECASE)
_THIRD_SUBJECT = re.compile(r"\s*(?:he|she|they|he's|she's|they're|they've|his|her|their)\b", re.IGNORECASE)
_RELATION = re.compile(
    r"\b(?:we(?:'ve| have)? (?:been|are|were|became) (?:\w+ )?friends|our friendship|known each other"
    r"|we (?:first )?met|since we met|you and I (?:have|are|met|were))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Example:
    """One labelled clause."""

    text: str
    label: str
    source: str  # "locomo" | "spc"
    group: str  # the CV group: a LoCoMo session or an SPC dialogue


@dataclass(slots=True)
class _Turn:
    """One speaker turn cut into clauses, with what its clauses are compared against."""

    source: str
    group: str
    speaker: str
    other: str
    clauses: list[str]
    references: list[str] = field(default_factory=list)  # observations (LoCoMo) / persona sentences (SPC)


# --- clauses ---------------------------------------------------------------------------------------


def clause_splitter() -> tuple[str, Callable[[str, Sequence[str]], list[str]]]:
    """The listener's segmenter when it is there, else sentence splitting; and its name."""
    try:
        from memory.engine.segment import segment
    except ImportError:  # pragma: no cover - before step 1 lands
        from memory.engine.text import split_sentences

        return "memory.engine.text.split_sentences", lambda text, names: split_sentences(text)
    return "memory.engine.segment.segment", lambda text, names: [c.text for c in segment(text, names=names)]


def turn_text(turn: dict) -> str:
    """A LoCoMo turn as the product receives it: the text, then the image's caption if any."""
    text = str(turn.get("text") or "").strip()
    caption = str(turn.get("blip_caption") or "").strip()
    return f"{text} [shares an image: {caption}]".strip() if caption else text


def is_caption(clause: str) -> bool:
    return "[shares an image" in clause


def neutral_clause(text: str, name: str) -> str:
    """The speaker's own words with "I/me/my" and their name replaced by one neutral word."""
    out = _FIRST.sub(NEUTRAL, text)
    return _replace_name(out, name)


def neutral_observation(text: str, name: str) -> str:
    """An observation about the speaker with their name and third-person pronouns neutralised."""
    out = _replace_name(text, name)
    return _THIRD.sub(NEUTRAL, out)


def _replace_name(text: str, name: str) -> str:
    first = name.split()[0] if name.split() else ""
    if not first:
        return text
    return re.sub(rf"\b{re.escape(first)}(?:'s)?\b", NEUTRAL, text)


# --- reading the data ------------------------------------------------------------------------------


def locomo_turns(records: Iterable[dict], conv_ids: Sequence[str], split: Callable) -> list[_Turn]:
    """Every turn of both speakers of the chosen conversations, with the observations it evidences."""
    turns: list[_Turn] = []
    chosen = set(conv_ids)
    for record in sorted(records, key=lambda r: str(r.get("sample_id"))):
        conv_id = str(record.get("sample_id"))
        if conv_id not in chosen:
            continue
        conversation = record["conversation"]
        names = (str(conversation["speaker_a"]), str(conversation["speaker_b"]))
        evidence: dict[tuple[str, str], list[str]] = {}  # (speaker, dia_id) -> observations
        for _session, per_speaker in sorted((record.get("observation") or {}).items()):
            for speaker, facts in sorted((per_speaker or {}).items()):
                for item in facts or []:
                    fact, dia = (
                        (item[0], item[1]) if isinstance(item, list | tuple) and len(item) >= 2 else ("", "")
                    )
                    for dia_id in _DIA.findall(str(dia)):
                        evidence.setdefault((speaker, dia_id), []).append(str(fact))
        sessions = sorted(
            (int(m.group(1)), value)
            for key, value in conversation.items()
            if (m := _SESSION.match(key)) and isinstance(value, list)
        )
        for number, session in sessions:
            for turn in session:
                speaker = str(turn.get("speaker", ""))
                if speaker not in names:
                    continue
                other = names[1] if speaker == names[0] else names[0]
                clauses = [c for c in split(turn_text(turn), names) if c.strip()]
                if not clauses:
                    continue
                refs = evidence.get((speaker, str(turn.get("dia_id", ""))), [])
                turns.append(_Turn("locomo", f"{conv_id}/s{number}", speaker, other, clauses, refs))
    return turns


def spc_turns(rows: Sequence[dict], indices: Iterable[int], split: Callable) -> list[_Turn]:
    """Every turn of the chosen Synthetic-Persona-Chat dialogues, with the speaker's persona sentences."""
    turns: list[_Turn] = []
    for index in indices:
        if index >= len(rows):
            break
        row = rows[index]
        personas = {
            "User 1": [s.strip() for s in row["user 1 personas"].splitlines() if s.strip()],
            "User 2": [s.strip() for s in row["user 2 personas"].splitlines() if s.strip()],
        }
        for line in row["Best Generated Conversation"].splitlines():
            speaker, _, text = line.partition(":")
            speaker = speaker.strip()
            if speaker not in personas or not text.strip():
                continue
            other = "User 2" if speaker == "User 1" else "User 1"
            clauses = [c for c in split(text.strip(), ()) if c.strip()]
            if clauses:
                turns.append(_Turn("spc", f"spc-{index}", speaker, other, clauses, personas[speaker]))
    return turns


def read_spc(path: str | Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# --- labelling -------------------------------------------------------------------------------------


def texts_to_embed(turns: Sequence[_Turn]) -> list[str]:
    """Every text the labelling and the model need, once, sorted."""
    texts: set[str] = set()
    for turn in turns:
        texts.update(turn.clauses)
        if turn.source == "locomo" and turn.references:
            texts.update(neutral_clause(c, turn.speaker) for c in turn.clauses)
            texts.update(neutral_observation(r, turn.speaker) for r in turn.references)
        elif turn.source == "spc":
            texts.update(turn.references)
    return sorted(texts)


def _cue_label(clause: str) -> str:
    """The label of a clause no observation or persona sentence matched: reliable cues, else none."""
    if is_caption(clause) or "?" in clause:
        return "none"
    if _THIRD_SUBJECT.match(clause) and not _FIRST.search(clause) and not _WE.search(clause):
        return "third_party"
    if _RELATION.search(clause):
        return "relation"
    return "none"


def label_turn(turn: _Turn, vec: Callable[[str], np.ndarray]) -> list[Example]:
    """The labelled clauses of one turn (ambiguous ones left out); see the module doc for the rules."""
    out: list[Example] = []
    if turn.source == "spc":
        refs = np.stack([vec(r) for r in turn.references]) if turn.references else None
        for clause in turn.clauses:
            best = float((refs @ vec(clause)).max()) if refs is not None else 0.0
            if "?" in clause:
                label = "none"
            elif best >= SPC_COS:
                label = "self"
            elif best >= SPC_AMBIGUOUS_COS and _FIRST.search(clause):
                continue
            else:
                label = "none"
            out.append(Example(clause, label, turn.source, turn.group))
        return out
    if not turn.references:
        return [Example(c, _cue_label(c), turn.source, turn.group) for c in turn.clauses]
    obs = np.stack([vec(neutral_observation(r, turn.speaker)) for r in turn.references])
    sims = np.stack([obs @ vec(neutral_clause(c, turn.speaker)) for c in turn.clauses])  # clauses x obs
    usable = np.array([not is_caption(c) and "?" not in c for c in turn.clauses])
    best_of: set[int] = set()
    if usable.any():
        masked = np.where(usable[:, None], sims, -np.inf)
        for j in range(obs.shape[0]):
            i = int(masked[:, j].argmax())
            if masked[i, j] >= BEST_COS and (_FIRST.search(turn.clauses[i]) or _WE.search(turn.clauses[i])):
                best_of.add(i)
    other_first = turn.other.split()[0].lower() if turn.other.split() else ""
    for i, clause in enumerate(turn.clauses):
        score = float(sims[i].max())
        if usable[i] and (i in best_of or score >= POSITIVE_COS):
            matched = turn.references[int(sims[i].argmax())]
            names_other = bool(other_first) and re.search(rf"\b{re.escape(other_first)}\b", matched.lower())
            if names_other and _WE.search(clause) and not _RELATION.search(clause):
                continue  # about both speakers, but not a stated relation: left out
            label = "relation" if names_other and _RELATION.search(clause) else "self"
        elif usable[i] and score >= AMBIGUOUS_COS:
            continue
        else:
            label = _cue_label(clause)
        out.append(Example(clause, label, turn.source, turn.group))
    return out


def label_all(turns: Sequence[_Turn], vectors: dict[str, np.ndarray]) -> list[Example]:
    examples: list[Example] = []
    for turn in turns:
        examples.extend(label_turn(turn, vectors.__getitem__))
    return examples


# --- embedding -------------------------------------------------------------------------------------


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


def _fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float):
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


def cross_validate(
    x: np.ndarray, examples: Sequence[Example], folds: int = FOLDS, grid: Sequence[float] = C_GRID
) -> dict:
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
            oof[test] = _p_keep(_fit(x[train], y[train], w[train], c), x[test])
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


# --- the command -----------------------------------------------------------------------------------


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
    model = _fit(x, y, source_weights(examples), cv["C"])
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
