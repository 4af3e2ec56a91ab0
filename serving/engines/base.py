"""The one interface every MemListener engine implements: prompts in, raw model text out (parsing
and gating happen in ``serving.listener`` for every engine alike)."""

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
    """A shared ``static`` prefix (computed once by engines with prefix caching) and a per-call
    ``dynamic`` part; ``turns``, ``tree`` and ``pointing`` (``serving.facts.PointingContext``) are
    the structured job, for engines that work on it (stand-in, extractive)."""

    static: str
    dynamic: str
    prompt_version: str
    turns: tuple[Mapping[str, str], ...] = ()
    tree: Mapping[str, str] = field(default_factory=dict)
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
        return [{"role": "system", "content": self.static}, {"role": "user", "content": self.dynamic}]


@dataclass(frozen=True)
class Generation:
    """Raw output for one prompt, or an error. ``items``: the pointing reply's op items built by the
    engine (extractive), used as they are; ``text`` is then that reply written out for recordings."""

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
    """An engine with nothing to load or connect to: always healthy, nothing to close."""

    def check_health(self) -> None:
        return None

    def close(self) -> None:
        return None
