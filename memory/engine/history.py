"""Compact version history: how a version's tree is stored and read back (pure arithmetic).

A version is stored as a *delta* against the version before it -- ``{path: new value}``, with
``None`` for a leaf that was emptied: exactly ``diff(parent, tree)`` with the old values left out --
or as a *checkpoint*, the whole tree. A version is a checkpoint when its number is a multiple of
:data:`CHECKPOINT_EVERY` or when its delta would be at least as large as the tree itself (the
first version, a revert to an early or empty tree). So the tree of version ``n`` is the nearest
stored tree at or below ``n`` with at most ``CHECKPOINT_EVERY - 1`` deltas applied on top:
:func:`rebuild` folds :func:`memory.engine.tree.apply` over them.

``apply_delta(a, delta_of(a, b)) == b`` for any two trees (the property tests check it over
random op sequences), so a replay equals the full snapshot the version used to store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .ops import Op, OpType
from .tree import Tree, TreeError, apply, diff

#: Every version whose number is a multiple of this stores its whole tree; reading any version
#: replays at most ``CHECKPOINT_EVERY - 1`` deltas.
CHECKPOINT_EVERY = 50

Delta = dict[str, str | None]


def delta_of(a: Tree, b: Tree) -> Delta:
    """The leaves that differ from ``a`` to ``b``: new value, or None when emptied (sorted by path)."""
    return {change.path: change.new for change in diff(a, b)}


def apply_delta(tree: Tree, delta: Mapping[str, Any]) -> Tree:
    """``tree`` with ``delta`` applied (through the engine's :func:`apply`)."""
    if not isinstance(delta, Mapping):
        raise TreeError(f"a stored delta must be a JSON object, got {type(delta).__name__}")
    ops = [
        Op(OpType.DELETE, path) if value is None else Op(OpType.UPDATE, path, value)
        for path, value in delta.items()
    ]
    return apply(tree, ops)[0]


def _size(entries: Mapping[str, str | None]) -> int:
    return sum(len(path) + len(value or "") + 6 for path, value in entries.items())


def is_checkpoint(number: int, delta: Mapping[str, str | None], tree: Tree) -> bool:
    """Store version ``number`` whole (see the module docstring; sizes roughly as JSON)."""
    return number % CHECKPOINT_EVERY == 0 or _size(delta) >= _size(tree)


def stored_form(number: int, parent: Tree, tree: Tree) -> tuple[dict[str, str], Delta | None]:
    """``(tree, delta)`` to store for a new head version: its whole tree (kept until the next
    version) and its delta against ``parent``, None for a checkpoint."""
    delta = delta_of(parent, tree)
    return tree.to_dict(), None if is_checkpoint(number, delta, tree) else delta


def rebuild(
    rows: Iterable[tuple[int, Mapping[str, Any] | None, Mapping[str, Any] | None]],
) -> Iterable[tuple[int, Tree]]:
    """``(number, tree)`` per stored row ``(number, tree, delta)`` in number order.

    A row with a whole tree starts from it; a row with only a delta applies it to the tree of the
    row before (the empty tree before the first row). A row with neither is corrupt history.
    """
    current = Tree.empty()
    for number, whole, delta in rows:
        if whole is not None:
            current = Tree.from_dict(whole)
        elif delta is not None:
            current = apply_delta(current, delta)
        else:
            raise TreeError(f"version {number} stores neither a tree nor a delta")
        yield number, current
