"""Atomic tree operations: the write protocol of the PersonaTree.

An :class:`Op` is immutable: ``ADD(path, "value")`` fills an empty leaf; ``UPDATE(path, "value")``
replaces a value (the *model* is asked to keep still-valid old content; the engine never does);
``DELETE(path, None)`` clears a leaf; ``NO_OP()`` says nothing in the chunk belongs in memory.

Construction checks only an op's *shape*, so every later stage can rely on it: a non-empty path
(``NO_OP`` carries neither path nor value), a confidence of None or in [0, 1]. Whether the path
exists, the value fits the budget or a DELETE wrongly carries a value are *gate* decisions with a
reason code (:mod:`memory.engine.gate`); a non-string scalar decoded from JSON is kept for the gate
to reject (``VALUE_NOT_STRING``).

Serialisation is lossless both ways: :meth:`Op.to_line` writes the paper's line format (the value a
JSON string literal, an optional ``, confidence=0.8``), which :func:`memory.engine.parser.parse_ops`
reads back to an equal op; :meth:`Op.to_dict` / :meth:`Op.from_dict` use ``{"op", "path", "value"[,
"confidence"][, "source"]}``. ``source`` (the user sentence a value was taken from) is not in the
line format.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class OpError(ValueError):
    """An op could not be constructed (bad type, missing path, NO_OP with arguments...)."""


class OpType(StrEnum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NO_OP = "NO_OP"


# Paths made of these characters are written bare; anything else is quoted so it round-trips.
_BARE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_/.\-]*")

_TYPE_ALIASES = {"NOOP": OpType.NO_OP, "NO-OP": OpType.NO_OP, "NONE": OpType.NO_OP}


def _coerce_type(raw: Any) -> OpType:
    if isinstance(raw, OpType):
        return raw
    if isinstance(raw, str):
        key = raw.strip().upper()
        if key in OpType.__members__:
            return OpType[key]
        if key in _TYPE_ALIASES:
            return _TYPE_ALIASES[key]
    raise OpError(f"unknown op type {raw!r}; expected one of ADD, UPDATE, DELETE, NO_OP")


@dataclass(frozen=True, slots=True)
class Op:
    type: OpType
    path: str | None = None
    value: str | None = None
    confidence: float | None = None
    # The user's sentence the value was taken from (set by the listener from the chunk, never by
    # the model's own text); the grounding check reads it and the audit log shows it.
    source: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", _coerce_type(self.type))
        if self.type is OpType.NO_OP:
            if self.path is not None or self.value is not None:
                raise OpError("NO_OP carries no path and no value")
        elif not isinstance(self.path, str) or not self.path.strip():
            raise OpError(f"{self.type} needs a non-empty path, got {self.path!r}")
        if self.confidence is not None:
            c = self.confidence
            if isinstance(c, bool) or not isinstance(c, int | float) or math.isnan(c) or not 0 <= c <= 1:
                raise OpError(f"confidence must be a number in [0, 1], got {c!r}")
            object.__setattr__(self, "confidence", float(c))
        if self.source is not None and not isinstance(self.source, str):
            raise OpError(f"op source must be a string, got {type(self.source).__name__}")

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def add(cls, path: str, value: str, confidence: float | None = None) -> Op:
        return cls(OpType.ADD, path, value, confidence)

    @classmethod
    def update(cls, path: str, value: str, confidence: float | None = None) -> Op:
        return cls(OpType.UPDATE, path, value, confidence)

    @classmethod
    def delete(cls, path: str, confidence: float | None = None) -> Op:
        return cls(OpType.DELETE, path, None, confidence)

    @classmethod
    def no_op(cls) -> Op:
        return cls(OpType.NO_OP)

    # -- serialisation --------------------------------------------------------------------------
    def to_line(self) -> str:
        """The paper's line format; values are JSON string literals (escaped quotes/newlines)."""
        if self.type is OpType.NO_OP:
            return "NO_OP()"
        value = "None" if self.value is None else json.dumps(self.value, ensure_ascii=False)
        conf = "" if self.confidence is None else f", confidence={self.confidence!r}"
        path = (
            self.path if _BARE_PATH.fullmatch(self.path or "") else json.dumps(self.path, ensure_ascii=False)
        )
        return f"{self.type}({path}, {value}{conf})"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": str(self.type), "path": self.path, "value": self.value}
        if self.confidence is not None:
            d["confidence"] = self.confidence
        if self.source is not None:
            d["source"] = self.source
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Op:
        """Build an op from ``{"op"|"type", "path", "value", "confidence"}``; raises :class:`OpError`."""
        if not isinstance(d, Mapping):
            raise OpError(f"an op must be a JSON object, got {type(d).__name__}")
        raw_type = d.get("op", d.get("type"))
        if raw_type is None:
            raise OpError("op object has no 'op' field")
        unknown = set(d) - {"op", "type", "path", "value", "confidence", "source"}
        if unknown:
            raise OpError(f"op object has unknown fields: {', '.join(sorted(map(str, unknown)))}")
        op_type = _coerce_type(raw_type)
        path = d.get("path")
        value = d.get("value")
        if op_type is OpType.NO_OP and path in ("", None) and value in ("", None):
            path = value = None
        if path is not None and not isinstance(path, str):
            raise OpError(f"op path must be a string, got {type(path).__name__}")
        return cls(op_type, path, value, d.get("confidence"), d.get("source"))

    def __str__(self) -> str:
        return self.to_line()
