"""One step of the tree update, as a pure function: model text -> parse -> gate -> apply.

:func:`process_text` is what a MemListener result goes through before anything is stored:
it parses the model output (:func:`memory.engine.parser.parse_ops`, never raises), gates the
ops against the schema and the current tree (:func:`memory.engine.gate.gate`) and applies the
accepted ones (:func:`memory.engine.tree.apply`). It does no I/O; persisting the new version
and its audit rows is the job of ``memory/services/tree.py``, which re-runs the gate against
the tree it locked, so this function is safe to call speculatively (e.g. in the listener).
The result is a :class:`PipelineResult` named tuple, so ``parsed, gated, new_tree, changes =
process_text(...)`` works.
"""

from __future__ import annotations

from typing import NamedTuple

from .gate import STRICT, GatePolicy, GateResult, gate
from .parser import ParseResult, parse_ops
from .schema import Schema
from .tree import Change, Tree, apply

__all__ = ["PipelineResult", "process_text"]


class PipelineResult(NamedTuple):
    parsed: ParseResult
    gated: GateResult
    tree: Tree
    changes: tuple[Change, ...]


def process_text(schema: Schema, tree: Tree, model_text: str, policy: GatePolicy = STRICT) -> PipelineResult:
    """Parse, gate and apply ``model_text`` against ``tree``; pure."""
    parsed = parse_ops(model_text)
    gated = gate(schema, tree, parsed.ops, policy)
    new_tree, changes = apply(tree, gated.accepted)
    return PipelineResult(parsed, gated, new_tree, changes)
