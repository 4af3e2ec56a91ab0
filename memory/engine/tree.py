"""Immutable PersonaTree values and the pure functions that move between them.

A :class:`Tree` maps ``path -> value`` for the *non-empty* leaves only. It does not know its schema
(the gate ties ops to one); this module only does arithmetic:

- :func:`apply` ``(tree, ops) -> (new_tree, changes)`` applies gated ops in order, never mutating
  its input; an op that would break the invariant (a non-string or blank value) is a
  :class:`TreeError`; ``DELETE`` of an absent leaf and ``NO_OP`` change nothing;
- ``changes`` is the *net* effect, one :class:`Change` per path whose value differs, sorted by path,
  its ``op`` derived from the transition (an ``UPDATE`` to the same value is no change);
- :func:`diff` gives the same changes between any two trees, so ``diff(a, apply(a, ops)[0]) ==
  apply(a, ops)[1]``; :func:`replay` folds :func:`apply` over an op log, and
  ``replay(a, [changes_to_ops(diff(a, b))]) == b``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .ops import Op, OpType


class TreeError(ValueError):
    """A tree value or an op would break the tree invariant (paths -> non-empty strings)."""


class Tree(Mapping[str, str]):
    """Immutable mapping of leaf path -> non-empty value string.

    Equality and hashing ignore order. Iteration follows insertion order (new paths from
    :func:`apply` are appended); :meth:`to_dict` is sorted by path. Rendering uses schema order.
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        items = dict(data)
        for path, value in items.items():
            if not isinstance(path, str) or not path:
                raise TreeError(f"tree path must be a non-empty string, got {path!r}")
            if not isinstance(value, str) or not value.strip():
                raise TreeError(f"tree value at {path!r} must be a non-empty string, got {value!r}")
        self._data = items  # private and never mutated after construction
        self._hash: int | None = None

    @classmethod
    def _trusted(cls, data: dict[str, str]) -> Tree:
        """Build from an already-validated dict (internal fast path for :func:`apply`)."""
        tree = cls.__new__(cls)
        tree._data = data
        tree._hash = None
        return tree

    @classmethod
    def empty(cls) -> Tree:
        return _EMPTY

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Tree:
        """From a JSON snapshot. ``None`` and empty-string values are dropped (empty leaves)."""
        if data is None:
            return _EMPTY
        if not isinstance(data, Mapping):
            raise TreeError(f"a tree snapshot must be a JSON object, got {type(data).__name__}")
        return cls({k: v for k, v in data.items() if v is not None and v != ""})

    def to_dict(self) -> dict[str, str]:
        """A plain dict sorted by path (stable JSON snapshots)."""
        return dict(sorted(self._data.items()))

    def __getitem__(self, path: str) -> str:
        return self._data[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, path: object) -> bool:
        return path in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Tree):
            return self._data == other._data
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"Tree({self.to_dict()!r})"

    def set(self, path: str, value: str) -> Tree:
        return Tree({**self._data, path: value})

    def without(self, path: str) -> Tree:
        return Tree._trusted({k: v for k, v in self._data.items() if k != path})


_EMPTY = Tree()


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    old: str | None
    new: str | None
    op: OpType

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new, "op": str(self.op)}


def _change(path: str, old: str | None, new: str | None) -> Change:
    kind = OpType.ADD if old is None else OpType.DELETE if new is None else OpType.UPDATE
    return Change(path, old, new, kind)


def apply(tree: Tree, ops: Iterable[Op]) -> tuple[Tree, tuple[Change, ...]]:
    """Apply ``ops`` in order; return the new tree and the net changes (sorted by path)."""
    data = tree._data.copy()
    touched: set[str] = set()
    for op in ops:
        if op.type is OpType.NO_OP:
            continue
        path = op.path
        assert path is not None  # guaranteed by Op construction
        if op.type is OpType.DELETE:
            if path in data:
                del data[path]
                touched.add(path)
            continue
        value = op.value
        if not isinstance(value, str) or not value.strip():
            raise TreeError(f"{op.type} at {path!r} needs a non-empty string value, got {value!r}")
        data[path] = value
        touched.add(path)
    if not touched:
        return tree, ()
    changes = tuple(
        _change(p, tree._data.get(p), data.get(p))
        for p in sorted(touched)
        if tree._data.get(p) != data.get(p)
    )
    if not changes:
        return tree, ()
    return Tree._trusted(data), changes


def diff(a: Tree, b: Tree) -> tuple[Change, ...]:
    """Net changes turning ``a`` into ``b``, sorted by path."""
    paths = sorted(set(a._data) | set(b._data))
    return tuple(
        _change(p, a._data.get(p), b._data.get(p)) for p in paths if a._data.get(p) != b._data.get(p)
    )


def changes_to_ops(changes: Iterable[Change]) -> tuple[Op, ...]:
    """Ops that reproduce ``changes`` when applied to the tree they were computed from."""
    return tuple(Op(OpType.DELETE, c.path) if c.new is None else Op(c.op, c.path, c.new) for c in changes)


def replay(t0: Tree, batches: Iterable[Iterable[Op]]) -> Tree:
    """Fold :func:`apply` over an op log (one iterable of ops per batch/version)."""
    tree = t0
    for batch in batches:
        tree, _ = apply(tree, batch)
    return tree
