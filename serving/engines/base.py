"""The one interface every MemListener engine implements.

An engine turns prompts into raw model text. It knows nothing about trees or the gate:
parsing and gating happen in ``serving.listener`` for every engine alike.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def turns_key(turns: Sequence[Mapping[str, str]]) -> str:
    """Stable key of a chunk's turns (role + content), independent of prompt wording."""
    canon = [{"role": t["role"], "content": t["content"]} for t in turns]
    return sha256_text(json.dumps(canon, ensure_ascii=False, sort_keys=True, separators=(",", ":")))


@dataclass(frozen=True)
class Prompt:
    """A MemListener prompt split in a shared static prefix and a per-call suffix.

    ``static`` (rules + schema leaves) is identical for every call with the same schema and prompt
    version, so engines with prefix caching (vLLM, llama.cpp's KV reuse) compute it once.
    ``dynamic`` holds the non-empty leaves and the chunk. ``tree`` and ``turns`` are carried
    for engines that need the structured job (the stand-in); model engines read only the text.
    """

    static: str
    dynamic: str
    prompt_version: str
    turns: tuple[Mapping[str, str], ...] = ()
    tree: Mapping[str, str] = field(default_factory=dict)
    # Pointing prompts: the numbered sentences, candidate leaves and leaf budgets of the chunk
    # (``serving.facts.PointingContext``), for engines that work on the structure (extractive).
    pointing: Any = None

    @property
    def text(self) -> str:
        return self.static + self.dynamic

    @property
    def key(self) -> str:
        """sha256 of the per-call part: the primary key of a recording."""
        return sha256_text(self.dynamic)

    @property
    def turns_key(self) -> str:
        return turns_key(self.turns)

    def messages(self) -> list[dict[str, str]]:
        """Chat form: static part as the system message, per-call part as the user message."""
        return [{"role": "system", "content": self.static}, {"role": "user", "content": self.dynamic}]


@dataclass(frozen=True)
class Generation:
    """Raw output for one prompt, or an error when no output could be obtained.

    ``items``: an engine that builds the pointing reply's op items itself (extractive) hands them
    over here and the listener uses them as they are; ``text`` is then the same reply written out,
    for recordings (``evaluation.record``, ``evaluation.counting``) and never parsed back."""

    text: str = ""
    model_id: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None
    retryable: bool = False
    items: tuple[Any, ...] | None = None  # last: positional construction keeps its meaning


class EngineError(RuntimeError):
    """An engine could not produce output. ``retryable`` says whether retrying later can help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class EngineUnavailable(EngineError):
    """The engine is dead or unreachable (always retryable: another replica or a restart helps)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


@runtime_checkable
class Engine(Protocol):
    model_id: str

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        """One Generation per prompt, same order. Per-prompt failures are Generation(error=...);
        an engine-wide failure raises EngineError."""
        ...

    def check_health(self) -> None:
        """Raise EngineUnavailable when the engine cannot serve."""
        ...

    def close(self) -> None: ...


class InProcessEngine:
    """What an engine with nothing to load or connect to shares: it is always healthy and has
    nothing to close (the extractive, recorded and stand-in engines)."""

    def check_health(self) -> None:
        return None

    def close(self) -> None:
        return None
