"""Coverage of LoCoMo's per-speaker `observation` facts by a final tree, judged by the responder model.

For every observation fact of a speaker, the judge reads the rendered tree and the fact and
answers yes/no (prompt: `prompts/observation_judge.v1.txt`, versioned by its file name). A reply
that is missing, failed, or neither yes nor no counts as `judge_failed` — never as covered —
and coverage = covered / facts (failed judgements stay in the denominator).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

JUDGE_PROMPT_FILE = Path(__file__).with_name("prompts") / "observation_judge.v1.txt"
JUDGE_PROMPT_VERSION = "observation-judge/1"
JUDGE_JSON_SCHEMA = {
    "type": "object",
    "properties": {"covered": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["covered"],
    "additionalProperties": False,
}
_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Reply:
    text: str | None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


# ask(system, user, json_schema, key=...) -> Reply; one responder call (`key` names it in recordings).
Ask = Callable[..., Reply]


def judge_system_prompt() -> str:
    return JUDGE_PROMPT_FILE.read_text(encoding="utf-8").strip()


def judge_user_prompt(tree_text: str, fact: str) -> str:
    return f"Profile:\n{tree_text.strip() or '(empty)'}\n\nFact: {fact.strip()}\n"


def read_verdict(text: str | None) -> bool | None:
    """True/False from the judge's reply, None when it cannot be read."""
    if not text or not text.strip():
        return None
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped).get("covered")
        except (json.JSONDecodeError, AttributeError):
            value = None
        if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
            return value.strip().lower() == "yes"
    words = {w.lower() for w in _WORD.findall(stripped)}
    if len(words) == 1:
        return words.pop() == "yes"
    return None


@dataclass(frozen=True)
class FactVerdict:
    fact: str
    covered: bool
    judge_failed: bool
    reply: str | None


def judge_coverage(
    tree_text: str, facts: Iterable[str], ask: Ask, *, key_prefix: str = ""
) -> tuple[dict, list[FactVerdict]]:
    system = judge_system_prompt()
    verdicts = []
    for fact in facts:
        reply = ask(system, judge_user_prompt(tree_text, fact), JUDGE_JSON_SCHEMA, key=f"{key_prefix}{fact}")
        verdict = None if reply.error else read_verdict(reply.text)
        verdicts.append(FactVerdict(fact, bool(verdict), verdict is None, reply.text))
    n = len(verdicts)
    covered = sum(v.covered for v in verdicts)
    summary = {
        "facts": n,
        "covered": covered,
        "judge_failed": sum(v.judge_failed for v in verdicts),
        "coverage": round(covered / n, 4) if n else None,
        "judge_prompt_version": JUDGE_PROMPT_VERSION,
    }
    return summary, verdicts
