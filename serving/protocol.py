"""Plain-data messages that cross the MemListener boundary (process, Ray RPC or HTTP).

Only JSON-able pydantic models live here: no Django, no Ray, no engine imports, so the
ingestion workers, the Ray Serve deployment and the HTTP client all share one shape.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ListenerTurn(BaseModel):
    """One dialogue turn of the chunk the MemListener reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant", "system"]
    content: str
    #: When the turn was said: the message's ``ts`` (or, unknown, when it was received). The pipeline
    #: turns "yesterday" into a date from it (``memory.engine.dates``); None = no date to resolve against.
    ts: datetime | None = None


class ListenerJob(BaseModel):
    """One chunk of one subject to turn into tree ops.

    ``tree`` is the subject's snapshot at ``base_version`` (path -> value, non-empty leaves only);
    the caller applies the returned ops with a compare-and-swap on ``base_version``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: str = Field(min_length=1, max_length=200)
    subject_id: str = Field(min_length=1, max_length=200)
    base_version: int = Field(ge=0)
    schema_id: str = Field(min_length=1)
    schema_version: int = Field(ge=1)
    #: The schema document when it is not one shipped with the engine (a tenant's own schema,
    #: ``memory/schema_models.py``); None: ``(schema_id, schema_version)`` names a shipped schema.
    schema_document: dict[str, Any] | None = None
    tree: dict[str, str] = Field(default_factory=dict)
    turns: list[ListenerTurn] = Field(min_length=1)


class ListenerResult(BaseModel):
    """What the MemListener made of one job.

    ``ops`` are the gate-accepted ops (``Op.to_dict()`` form), ``rejections`` carry
    ``{"op": {...}, "reason": <gate Reason>, "detail": str}``, ``parse_errors`` carry
    ``{"line_no", "line", "message"}``. ``error`` is set when no model output could be obtained
    at all (engine down, timeout, auth, unknown recording); then ``retryable`` tells the caller
    whether trying the same job later can help. ``model_id``, ``model_version`` and
    ``prompt_version`` go into the audit log with every applied op.
    """

    model_config = ConfigDict(extra="forbid")

    job_id: str
    ops: list[dict] = Field(default_factory=list)
    rejections: list[dict] = Field(default_factory=list)
    parse_errors: list[dict] = Field(default_factory=list)
    normalisations: list[dict] = Field(default_factory=list)
    raw_text: str = ""
    model_id: str = ""
    model_version: str = ""  # a trained checkpoint's version (its model card); "" otherwise
    prompt_version: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None
    retryable: bool = False
    # True when no model was called (no candidate leaf passed the threshold); ``note`` says why.
    skipped_model: bool = False
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


class ListenerBatch(BaseModel):
    """HTTP body of the Ray Serve endpoint: a list of jobs."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[ListenerJob] = Field(min_length=1, max_length=256)


class ListenerBatchResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    results: list[ListenerResult]
