"""StandInEngine: a model stand-in for backend benchmarks, never a default. ``"no_op"`` answers NO_OP;
``"derived"`` one op on a leaf of the ``path`` enum picked by a hash of the turns, valued with the last
user turn's first words. ``latency_ms`` sleeps per call to emulate a model's cost."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Literal

from serving.engines.base import Generation, InProcessEngine, Prompt

NO_OP_TEXT = json.dumps({"ops": [{"op": "NO_OP", "path": None, "value": None}]})


def _schema_paths_and_cap(json_schema: dict[str, Any] | None) -> tuple[list[str], int]:
    paths: list[str] = []
    cap = 60
    items = (json_schema or {}).get("properties", {}).get("ops", {}).get("items", {})
    for variant in items.get("anyOf", [items]):
        props = variant.get("properties", {})
        enum = props.get("path", {}).get("enum")
        if enum and not paths:
            paths = [p for p in enum if p is not None]
        if max_len := props.get("value", {}).get("maxLength"):
            cap = int(max_len)
    return paths, cap


class StandInEngine(InProcessEngine):
    def __init__(self, *, mode: Literal["no_op", "derived"] = "no_op", latency_ms: float = 0.0) -> None:
        if mode not in ("no_op", "derived"):
            raise ValueError(f"unknown stand-in mode {mode!r}; use 'no_op' or 'derived'")
        self.mode = mode
        self.latency_ms = float(latency_ms)
        self.model_id = f"standin:{mode}"

    def _derive(self, prompt: Prompt, paths: list[str], cap: int) -> str:
        user_turns = [
            t["content"] for t in prompt.turns if t.get("role") == "user" and t.get("content", "").strip()
        ]
        if not paths or not user_turns:
            return NO_OP_TEXT
        path = paths[int(prompt.turns_key[:8], 16) % len(paths)]
        words = " ".join(user_turns[-1].split()[:8])
        value = words[:cap].strip() or "mentioned"
        op = "UPDATE" if path in prompt.tree else "ADD"
        return json.dumps({"ops": [{"op": op, "path": path, "value": value}]})

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)
        paths, cap = _schema_paths_and_cap(json_schema)
        texts = (NO_OP_TEXT if self.mode == "no_op" else self._derive(p, paths, cap) for p in prompts)
        return [Generation(text=t, model_id=self.model_id, latency_ms=self.latency_ms) for t in texts]
