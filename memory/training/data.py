"""Export JSONL (``personatree-training/1``) -> Hugging Face datasets for the trainers.

Only lines with a ``prompt`` and a ``target`` are used: full-enum lines of the audit export, and
teacher lines of either prompt (``memory.training.distill``); pointing lines of the audit export
have ``target: null`` (their model reply cited ids of a prompt that is only rebuilt approximately). Each row has the conversational ``prompt`` (system = the prompt's
static part, user = its dynamic part, as the listener sends them), the SFT ``completion`` (the
assistant's ``target``), and for the GRPO reward the scorer's inputs as JSON strings (``gold``,
``negatives``, ``tree``, ``turns``) plus ``schema_id`` / ``schema_version`` / ``chunk_id``: JSON
strings keep Arrow from inferring one struct type for every tree.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

FORMAT = "personatree-training/1"


def read_lines(
    path: str | Path,
    split: str | None = "train",
    max_examples: int | None = None,
    shuffle_seed: int | None = None,
):
    """Usable export lines of ``split`` (``None``: all) and the counts of the lines skipped.
    ``shuffle_seed``: shuffle the lines (deterministically) before ``max_examples`` cuts them, so
    a small budget samples every subject instead of the file's first one."""
    rows: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            line = json.loads(raw)
            if line.get("format") != FORMAT:
                skipped["format"] += 1
            elif split is not None and line.get("split") != split:
                skipped["other_split"] += 1
            elif not line.get("prompt") or not line.get("target"):
                skipped["no_prompt_or_target"] += 1
            else:
                rows.append(line)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(rows)
    if max_examples is not None:
        rows = rows[:max_examples]
    return rows, dict(skipped)


def to_row(line: dict[str, Any]) -> dict[str, Any]:
    prompt = line["prompt"]
    return {
        "prompt": [
            {"role": "system", "content": prompt["static"]},
            {"role": "user", "content": prompt["dynamic"]},
        ],
        "completion": [{"role": "assistant", "content": line["target"]}],
        "gold": json.dumps(line.get("gold") or [], ensure_ascii=False),
        "negatives": json.dumps(line.get("negatives") or [], ensure_ascii=False),
        "tree": json.dumps(line.get("tree") or {}, ensure_ascii=False),
        "turns": json.dumps(line.get("turns") or [], ensure_ascii=False),
        "pointing": json.dumps(line.get("pointing") or {}, ensure_ascii=False),
        "schema_id": line["schema_id"],
        "schema_version": int(line["schema_version"]),
        "chunk_id": int(line.get("chunk_id") or 0),
    }


def load_dataset(
    path: str | Path,
    split: str | None = "train",
    max_examples: int | None = None,
    shuffle_seed: int | None = None,
):
    """``(datasets.Dataset, info)``; ``info`` records the file's sha256, counts and prompt versions."""
    from datasets import Dataset

    lines, skipped = read_lines(path, split, max_examples, shuffle_seed)
    if not lines:
        raise ValueError(f"{path}: no usable line (split={split!r}; skipped {skipped})")
    info = {
        "path": str(path),
        "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
        "split": split,
        "shuffle_seed": shuffle_seed,
        "examples": len(lines),
        "skipped": skipped,
        "prompt_versions": sorted({ln.get("prompt_version", "") for ln in lines}),
    }
    return Dataset.from_list([to_row(ln) for ln in lines]), info
