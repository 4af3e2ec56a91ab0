"""The extractive listener as an engine: rules instead of a language model (kind ``extractive``).

It reads the pointing context of each prompt (numbered user sentences, candidate leaves) and
writes pointer ops with :func:`memory.engine.extractive.extractive_pointers`; the listener maps,
gates and audits them like any model's output. Deterministic, no weights, milliseconds a chunk.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from memory.engine.extractive import extractive_pointers
from serving.engines.base import Generation, Prompt

EXTRACTIVE_MODEL_ID = "extractive/1"


class ExtractiveEngine:
    model_id = EXTRACTIVE_MODEL_ID

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        out = []
        for prompt in prompts:
            start = time.perf_counter()
            ctx = prompt.pointing
            if ctx is None:
                out.append(
                    Generation(error="the extractive engine needs the pointing pipeline", retryable=False)
                )
                continue
            items = extractive_pointers(ctx.sentences, ctx.candidates, ctx.budgets)
            out.append(
                Generation(
                    text=json.dumps({"ops": items}, ensure_ascii=False),
                    model_id=self.model_id,
                    latency_ms=(time.perf_counter() - start) * 1000,
                )
            )
        return out

    def check_health(self) -> None:
        return None

    def close(self) -> None:
        return None
