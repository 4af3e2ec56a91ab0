"""The JSON-able messages that cross the MemListener boundary (process, Ray RPC or HTTP): no Django,
no Ray, no engine, only the pure ``memory.engine`` for the op and gate types."""

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
    #: When it was said (else received): "yesterday" is dated from it; None: no date to resolve against.
    ts: datetime | None = None


class ListenerJob(BaseModel):
    """One chunk of one subject; ``tree`` is its non-empty leaves at ``base_version``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: str = Field(min_length=1, max_length=200)
    subject_id: str = Field(min_length=1, max_length=200)
    base_version: int = Field(ge=0)
    schema_id: str = Field(min_length=1)
    schema_version: int = Field(ge=1)
    #: A tenant's own schema document; None: ``(schema_id, schema_version)`` names a shipped one.
    schema_document: dict[str, Any] | None = None
    tree: dict[str, str] = Field(default_factory=dict)
    turns: list[ListenerTurn] = Field(min_length=1)


class ListenerOp(BaseModel):
    """One op of the model's output as written (a non-string ``value`` kept for the store's gate).
    ``precheck``: the listener's gate verdict, for metrics only (None: accepted; else the reason,
    ``detail`` says why); the store gates every op again and records its own."""

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
    """What the MemListener made of one job: every op read, in order, for the store to gate;
    ``parse_errors`` (``{"line_no", "line", "message"}``) for what was no op; ``error`` when no output
    was had at all (``retryable``: whether a later try can help). The model and prompt versions go
    into the audit log with every applied op."""

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
        return [o for o in self.ops if o.precheck is None]

    @property
    def rejected(self) -> list[ListenerOp]:
        return [o for o in self.ops if o.precheck is not None]

    @classmethod
    def failed(cls, jobs: Sequence[ListenerJob], message: str, *, retryable: bool) -> list[ListenerResult]:
        return [cls(job_id=j.job_id, error=message, retryable=retryable) for j in jobs]


class ListenerBatch(BaseModel):
    """HTTP body of the Ray Serve endpoint."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[ListenerJob] = Field(min_length=1, max_length=256)


class ListenerBatchResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    results: list[ListenerResult]
