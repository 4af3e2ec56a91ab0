"""RecordedEngine: replays what a real engine once wrote (tests, demos), never invents text.

A recording is JSONL of :func:`recording_entry` lines (``python -m evaluation.record``), keyed by
``Prompt.key``, else by ``Prompt.turns_key`` (which survives prompt rewording); an unknown key is a
non-retryable error."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from serving.engines.base import Generation, InProcessEngine, Prompt

RECORDED_PREFIX = "recorded:"


class RecordingError(ValueError):
    """The recording file is missing or malformed (names the file and line)."""


def load_recording(path: str | Path) -> dict[str, dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise RecordingError(f"recording file not found: {p}")
    entries: dict[str, dict[str, Any]] = {}
    for line_no, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordingError(f"{p}:{line_no}: not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict) or not all(isinstance(obj.get(k), str) for k in ("key", "text")):
            raise RecordingError(f"{p}:{line_no}: needs string fields 'key' and 'text'")
        entries[obj["key"]] = obj
    return entries


class RecordedEngine(InProcessEngine):
    """Replays recorded outputs by key; unknown keys fail with retryable=False."""

    def __init__(
        self,
        *,
        path: str | Path | None = None,
        entries: Iterable[Mapping[str, Any]] | None = None,
        model_id: str = "recording",
    ) -> None:
        self._entries: dict[str, dict[str, Any]] = {}
        if path is not None:
            self._entries.update(load_recording(path))
        for e in entries or ():
            self._entries[str(e["key"])] = dict(e)
        self._source = str(path) if path is not None else "<in-memory>"
        self.model_id = RECORDED_PREFIX + model_id

    def __len__(self) -> int:
        return len(self._entries)

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        return [self._replay(prompt) for prompt in prompts]

    def _replay(self, prompt: Prompt) -> Generation:
        start = time.perf_counter()
        entry = self._entries.get(prompt.key) or (
            self._entries.get(prompt.turns_key) if prompt.turns else None
        )
        if entry is None:
            keys = f"prompt key {prompt.key[:12]} / turns key {prompt.turns_key[:12]}"
            return Generation(model_id=self.model_id, error=f"no recording for {keys} in {self._source}")
        return Generation(
            text=entry["text"],
            model_id=RECORDED_PREFIX + str(entry.get("model_id", "unknown")),
            prompt_tokens=int(entry.get("prompt_tokens", 0)),
            completion_tokens=int(entry.get("completion_tokens", 0)),
            latency_ms=(time.perf_counter() - start) * 1000,
        )


def recording_entry(prompt: Prompt, text: str, *, model_id: str, by: str = "prompt", **extra: Any) -> dict:
    """Build one recording line for ``prompt`` (``by="prompt"`` or ``"turns"``)."""
    key = prompt.key if by == "prompt" else prompt.turns_key
    return {"key": key, "text": text, "model_id": model_id, **extra}
