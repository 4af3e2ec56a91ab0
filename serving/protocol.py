"""Plain-data messages that cross the MemListener boundary (process, Ray RPC or HTTP).

Only JSON-able pydantic models live here: no Django, no Ray, no model engine (only the pure-Python
``memory.engine`` for the op and gate types), so the ingestion workers, the Ray Serve deployment
and the HTTP client all share one shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory.engine.gate import Reason, Rejection
from memory.engine.ops import Op, OpType


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


class ListenerOp(BaseModel):
    """One op of the model's output as it was written: the engine's :class:`Op` in a form that
    crosses the boundary (a non-string ``value`` is kept for the store's gate to reject).

    ``precheck`` is the listener's own gate verdict, for its metrics: None when it would accept
    the op, else the reason it would reject it (``detail`` says why). It decides nothing: the
    store gates every op again under the subject's tenant policy and records that verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: OpType
    path: str | None = None
    value: Any = None
    confidence: float | None = None
    source: str | None = None
    precheck: Reason | None = None
    detail: str = ""

    @model_validator(mode="after")
    def _is_an_op(self) -> ListenerOp:
        self.to_op()  # an OpError (a ValueError) is a validation error: every ListenerOp is an Op
        return self

    @classmethod
    def of(cls, op: Op, rejection: Rejection | None = None) -> ListenerOp:
        return cls(
            op=op.type,
            path=op.path,
            value=op.value,
            confidence=op.confidence,
            source=op.source,
            precheck=None if rejection is None else rejection.reason,
            detail="" if rejection is None else rejection.detail,
        )

    def to_op(self) -> Op:
        return Op(self.op, self.path, self.value, self.confidence, self.source)


class ListenerResult(BaseModel):
    """What the MemListener made of one job.

    ``ops`` are every op read from the model's output, in its order (:class:`ListenerOp`, each
    with the listener's pre-check); the caller hands them to the store as they are, whose gate
    decides and records every rejection. ``parse_errors`` carry ``{"line_no", "line", "message"}``
    (lines or items that are no op; the store records them too). ``error`` is set when no model
    output could be obtained at all (engine down, timeout, auth, unknown recording); then
    ``retryable`` tells the caller whether trying the same job later can help. ``model_id``,
    ``model_version`` and ``prompt_version`` go into the audit log with every applied op;
    ``raw_text`` is what the model wrote (recordings and diagnostics).
    """

    model_config = ConfigDict(extra="forbid")

    job_id: str
    ops: list[ListenerOp] = Field(default_factory=list)
    parse_errors: list[dict] = Field(default_factory=list)
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

    @property
    def accepted(self) -> list[ListenerOp]:
        """The ops the listener's pre-check would accept."""
        return [o for o in self.ops if o.precheck is None]

    @property
    def rejected(self) -> list[ListenerOp]:
        """The ops the listener's pre-check would reject (``precheck`` holds the reason)."""
        return [o for o in self.ops if o.precheck is not None]

    @classmethod
    def failed(cls, jobs: Sequence[ListenerJob], message: str, *, retryable: bool) -> list[ListenerResult]:
        """One error result per job: no output could be had for any of them."""
        return [cls(job_id=j.job_id, error=message, retryable=retryable) for j in jobs]


class ListenerBatch(BaseModel):
    """HTTP body of the Ray Serve endpoint: a list of jobs."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[ListenerJob] = Field(min_length=1, max_length=256)


class ListenerBatchResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    results: list[ListenerResult]
