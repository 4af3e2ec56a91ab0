"""The responder as the harness calls it: one (system, user) exchange on a serving engine.

Used for the multiple-choice answer prompt and for the coverage judge; the engines are the
serving package's own (llama.cpp / OpenAI-compatible / recorded). A failed call comes back as
`Reply(text=None, error=...)` and is counted by the caller — it never becomes an answer.

Every call carries a stable `key` (the question and options, or the judged fact) as the prompt's
single "turn", so a recording keyed by `turns_key` survives changes in how the memory context is
worded. With `record_path`, successful replies are appended in the recorded engine's format.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

from evaluation.coverage import Reply
from serving.engines.base import Prompt, turns_key

ANSWER_PROMPT_VERSION = "eval-answer/1"

MC_SYSTEM = (
    "You are a personal assistant who knows the user from the memory given below. Read the user's "
    "message and the four candidate replies, then pick the reply that fits this user best. "
    'Reply with JSON only: {"answer": "<letter>"} where <letter> is a, b, c or d.'
)
MC_JSON_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["a", "b", "c", "d"]}},
    "required": ["answer"],
    "additionalProperties": False,
}


def mc_user_prompt(memory_text: str, question: str, options_block: str) -> str:
    memory = memory_text.strip() or "(no memory available)"
    return f"Memory:\n{memory}\n\nUser message: {question.strip()}\n\nCandidate replies:\n{options_block}\n"


class Responder:
    """Calls the recall runtime's responder engine (the one `answer_build` and query expansion use),
    so one model instance serves answers, expansion and the coverage judge."""

    def __init__(self, *, record_path: str | Path | None = None) -> None:
        self.record_path = Path(record_path) if record_path else None
        self._lock = threading.Lock()
        self.calls = 0
        self.failures = 0

    @property
    def engine(self):
        from memory.recall import runtime

        engine, why = runtime.responder_engine()
        if engine is None:
            raise RuntimeError(why)
        return engine

    @property
    def model_id(self) -> str | None:
        """The responder's model id as its engine reports it; None while no call was made."""
        if self.calls == 0:
            return None
        try:
            return self.engine.model_id
        except Exception as exc:  # engine could not start; the run records it
            return f"unavailable ({exc})"

    def ask(
        self, system: str, user: str, json_schema: dict | None = None, *, key: str | None = None
    ) -> Reply:
        prompt = Prompt(static=system, dynamic=user, prompt_version=ANSWER_PROMPT_VERSION)
        return self.ask_prompt(prompt, json_schema, key=key if key is not None else user)

    def ask_prompt(self, prompt: Prompt, json_schema: dict | None = None, *, key: str) -> Reply:
        """Send a ready prompt (e.g. the product's `answer_prompt`), named by `key` for recordings."""
        self.calls += 1
        turns = ({"role": "user", "content": key},)
        prompt = replace(prompt, turns=turns)
        try:
            (gen,) = self.engine.generate([prompt], json_schema)
        except Exception as exc:  # engine missing or dead: a failed call, counted by the caller
            self.failures += 1
            return Reply(None, error=f"responder unavailable: {exc}")
        if gen.error is not None:
            self.failures += 1
            return Reply(None, error=gen.error)
        if self.record_path:
            entry = {
                "key": turns_key(turns),
                "text": gen.text,
                "model_id": gen.model_id,
                "prompt_tokens": gen.prompt_tokens,
                "completion_tokens": gen.completion_tokens,
            }
            with self._lock, self.record_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return Reply(gen.text, prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens)
