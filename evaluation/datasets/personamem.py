"""PersonaMem: the evaluation view (questions, four options, gold letter, end index into the shared context).

`questions_*.csv` columns used: `question_id, persona_id, question_type, topic,
user_question_or_message, correct_answer` (e.g. "(c)"), `all_options` (a JSON — or Python-literal — list of four
strings, each starting "(a) ".."(d) "), `shared_context_id, end_index_in_shared_context`.
`shared_contexts_*.jsonl`: one JSON object per line `{shared_context_id: [{role, content}, ...]}`.
A question's history is `context[:end_index]` — nothing after it may reach the answer.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from evaluation.datasets import DatasetError

LETTERS = ("a", "b", "c", "d")
_GOLD = re.compile(r"^\s*\(?([a-dA-D])\)?\s*$")
_OPTION_PREFIX = re.compile(r"^\s*\(([a-dA-D])\)\s*")
REQUIRED_COLUMNS = (
    "question_id",
    "question_type",
    "user_question_or_message",
    "correct_answer",
    "all_options",
    "shared_context_id",
    "end_index_in_shared_context",
)


@dataclass(frozen=True)
class PersonaMemQuestion:
    question_id: str
    persona_id: str
    question_type: str
    topic: str
    question: str
    options: tuple[str, ...]  # option texts without the "(x) " prefix, in letter order
    gold: str  # one of LETTERS
    shared_context_id: str
    end_index: int

    def options_block(self) -> str:
        return "\n".join(f"({letter}) {text}" for letter, text in zip(LETTERS, self.options, strict=False))


def _parse_options(raw: str, where: str) -> tuple[str, ...]:
    try:
        items = json.loads(raw)
    except json.JSONDecodeError:
        # Part of the published CSV writes the list as a Python literal (single quotes).
        try:
            items = ast.literal_eval(raw)
        except (ValueError, SyntaxError) as exc:
            raise DatasetError(
                f"PersonaMem: {where} all_options is not a JSON or Python list: {exc}"
            ) from exc
    if not isinstance(items, list) or len(items) != len(LETTERS):
        raise DatasetError(f"PersonaMem: {where} all_options must list exactly {len(LETTERS)} options")
    texts = []
    for expected, item in zip(LETTERS, items, strict=True):
        m = _OPTION_PREFIX.match(str(item))
        if m and m.group(1).lower() != expected:
            raise DatasetError(
                f"PersonaMem: {where} option '{item[:20]}' is out of order (expected ({expected}))"
            )
        texts.append(str(item)[m.end() :] if m else str(item))
    return tuple(texts)


def load_questions(path: str | Path, *, limit: int | None = None) -> list[PersonaMemQuestion]:
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"PersonaMem: no such questions file: {p}")
    out: list[PersonaMemQuestion] = []
    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DatasetError(f"PersonaMem: {p} lacks columns: {', '.join(missing)}")
        for row_no, row in enumerate(reader, start=2):
            where = f"{p.name} line {row_no}"
            gold = _GOLD.match(row["correct_answer"] or "")
            if not gold:
                raise DatasetError(
                    f"PersonaMem: {where} correct_answer '{row['correct_answer']}' is not (a)-(d)"
                )
            try:
                end_index = int(row["end_index_in_shared_context"])
            except ValueError as exc:
                raise DatasetError(
                    f"PersonaMem: {where} end_index_in_shared_context is not an integer"
                ) from exc
            if end_index < 0:
                raise DatasetError(f"PersonaMem: {where} end_index_in_shared_context is negative")
            out.append(
                PersonaMemQuestion(
                    question_id=row["question_id"],
                    persona_id=row.get("persona_id", ""),
                    question_type=row["question_type"],
                    topic=row.get("topic", ""),
                    question=row["user_question_or_message"],
                    options=_parse_options(row["all_options"], where),
                    gold=gold.group(1).lower(),
                    shared_context_id=row["shared_context_id"],
                    end_index=end_index,
                )
            )
            if limit is not None and len(out) >= limit:
                break
    return out


def load_contexts(path: str | Path, *, ids: Collection[str] | None = None) -> dict[str, list[dict]]:
    """Read the shared contexts, keeping only `ids` when given; every wanted id must be present."""
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"PersonaMem: no such contexts file: {p}")
    out: dict[str, list[dict]] = {}
    with p.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"PersonaMem: {p.name} line {line_no} is not JSON: {exc}") from exc
            if not isinstance(obj, dict):
                raise DatasetError(f"PersonaMem: {p.name} line {line_no} must be {{id: [messages]}}")
            for cid, messages in obj.items():
                if ids is not None and cid not in ids:
                    continue
                if not isinstance(messages, list) or not all(
                    isinstance(m, dict) and "role" in m and "content" in m for m in messages
                ):
                    raise DatasetError(
                        f"PersonaMem: {p.name} line {line_no} context {cid[:12]} needs {{role, content}}"
                    )
                out[cid] = messages
    if ids is not None:
        missing = set(ids) - set(out)
        if missing:
            raise DatasetError(
                f"PersonaMem: contexts missing from {p.name}: {', '.join(sorted(missing)[:5])}"
            )
    return out


def check_end_indices(questions: list[PersonaMemQuestion], contexts: dict[str, list[dict]]) -> None:
    for q in questions:
        n = len(contexts[q.shared_context_id])
        if q.end_index > n:
            raise DatasetError(
                f"PersonaMem: question {q.question_id} end index {q.end_index} beyond its context ({n} messages)"
            )
