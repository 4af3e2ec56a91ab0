"""The extractive listener as an engine: rules instead of a language model (kind ``extractive``).

It reads the pointing context of each prompt and writes pointer ops: from the fact pipeline's
kept, placed clauses (:func:`memory.engine.extractive.fact_pointers`: short dated third-person
facts), or, for a context built without it, whole sentences by rule
(:func:`memory.engine.extractive.extractive_pointers`). It hands the items over as they are
(``Generation.items``: no JSON to parse back); the listener maps them to ops like any model's
pointers, and the store gates and audits them. Deterministic, no generative model, milliseconds a chunk.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from serving.syntax import import_spacy_without_torch

import_spacy_without_torch()  # before the engine's rewrite imports lemminflect, and so spaCy

from memory.engine.extractive import extractive_pointers, fact_pointers  # noqa: E402
from serving.engines.base import Generation, InProcessEngine, Prompt  # noqa: E402

EXTRACTIVE_MODEL_ID = "extractive/2"


class ExtractiveEngine(InProcessEngine):
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
            if ctx.facts:
                items = fact_pointers(
                    ctx.sentences, ctx.facts, ctx.candidates, ctx.tree, ctx.budgets, ctx.singles
                )
            else:
                items = extractive_pointers(ctx.sentences, ctx.candidates, ctx.budgets)
            out.append(
                Generation(
                    text=json.dumps({"ops": items}, ensure_ascii=False),  # for recordings only
                    items=tuple(items),
                    model_id=self.model_id,
                    latency_ms=(time.perf_counter() - start) * 1000,
                )
            )
        return out
