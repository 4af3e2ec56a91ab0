"""Export JSONL (``personatree-training/1``) -> Hugging Face datasets for the trainers.

Only lines with a ``prompt`` and a ``target`` are used: full-enum lines of the audit export, and
teacher lines of either prompt (``evaluation.training.distill``); pointing lines of the audit export
have ``target: null`` (their model reply cited ids of a prompt that is only rebuilt approximately). Each row has the conversational ``prompt`` (system = the prompt's
static part, user = its dynamic part, as the listener sends them), the SFT ``completion`` (the
assistant's ``target``), and for the GRPO reward the scorer's inputs as JSON strings (``gold``,
``negatives``, ``tree``, ``turns``) plus ``schema_id`` / ``schema_version`` / ``chunk_id`` and
``schema_document`` (the canonical JSON of a tenant's own schema, None for a shipped one): JSON
strings keep Arrow from inferring one struct type for every tree.

A line names its schema by ``schema_id`` / ``schema_version``; a line of a subject pinned to a
schema the engine does not ship (a tenant's upload) also carries the document, ``schema_document``.
:func:`schema_of` turns those fields into an engine ``Schema`` for the scorer and the reward; a line
without the key (older files) names a shipped schema.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory.engine.schema import Schema, SchemaError, canonical_json, get_schema, schema_from_document

FORMAT = "personatree-training/1"


def document_of(value: Mapping[str, Any] | str | None) -> dict[str, Any] | None:
    """A line's ``schema_document`` (an object in the JSONL, a JSON string in a dataset column)
    as a dict; None (or an absent key) when the line names a shipped schema."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema_document is not valid JSON: {exc}") from exc
    if not isinstance(value, Mapping):
        raise SchemaError(f"schema_document must be a JSON object, got {type(value).__name__}")
    return dict(value)


def schema_of(
    schema_id: str,
    schema_version: int,
    document: Mapping[str, Any] | str | None = None,
    *,
    where: str = "line",
) -> Schema:
    """The engine schema of a line's ``schema_id`` / ``schema_version`` / ``schema_document``:
    the parsed document when there is one (cached by the digest of its canonical JSON), else the
    shipped schema. Raises ``SchemaError`` (naming ``where``) for a document that is invalid or
    names another schema than the line does, and for an unknown shipped id."""
    doc = document_of(document)
    if doc is None:
        try:
            return get_schema(schema_id, int(schema_version))
        except SchemaError as exc:
            raise SchemaError(
                f"{where}: {exc} (a line of a tenant's own schema carries schema_document)"
            ) from exc
    try:
        schema, _ = schema_from_document(doc)  # parsed once per digest of its canonical JSON
    except SchemaError as exc:
        raise SchemaError(f"{where}: invalid schema_document: {exc}") from exc
    if schema.key != (schema_id, int(schema_version)):
        raise SchemaError(
            f"{where}: schema_document is {schema.id} v{schema.version} but the line names "
            f"{schema_id} v{schema_version}"
        )
    return schema


def line_schema(line: Mapping[str, Any]) -> Schema:
    """:func:`schema_of` of an export line, errors naming its chunk."""
    where = f"line {line.get('chunk_key') or line.get('chunk_id')!r}"
    return schema_of(line["schema_id"], line["schema_version"], line.get("schema_document"), where=where)


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
        "schema_document": _column(line.get("schema_document")),
        "chunk_id": int(line.get("chunk_id") or 0),
    }


def _column(document: Any) -> str | None:
    doc = document_of(document)
    return None if doc is None else canonical_json(doc)


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
