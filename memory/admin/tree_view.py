"""Build the nested, readable tree the moderator sees (pure presentation helpers)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.admin.access import MASK, SPECIAL_TIER
from memory.models import OpRecord


@dataclass
class LeafRow:
    path: str
    name: str
    value: str
    tier: str
    budget: int
    last: OpRecord | None
    masked: bool = False


@dataclass
class Node:
    name: str
    path: str
    children: dict[str, Node] = field(default_factory=dict)
    leaves: list[LeafRow] = field(default_factory=list)

    @property
    def child_nodes(self) -> list[Node]:
        return list(self.children.values())

    @property
    def count(self) -> int:
        return len(self.leaves) + sum(c.count for c in self.children.values())


def build_nodes(tree, schema, last_changes: dict[str, OpRecord], *, mask_special: bool = False) -> list[Node]:
    """Nest the filled leaves of ``tree`` under their schema prefixes (schema order); ``mask_special``
    shows special-tier values as a mask (the template offers no edit form for them)."""
    root = Node("", "")
    for leaf in schema.leaves:
        value = tree.get(leaf.path)
        if value is None:
            continue
        parts = leaf.path.split("/")
        node = root
        for i, part in enumerate(parts[:-1]):
            prefix = "/".join(parts[: i + 1])
            node = node.children.setdefault(part, Node(part, prefix))
        masked = mask_special and leaf.tier == SPECIAL_TIER
        node.leaves.append(
            LeafRow(
                leaf.path,
                parts[-1],
                MASK if masked else value,
                leaf.tier,
                leaf.budget,
                last_changes.get(leaf.path),
                masked,
            )
        )
    # Paths no longer in the schema are still shown, under "(not in schema)".
    for path in sorted(set(tree) - set(schema.paths)):
        orphan = root.children.setdefault("(not in schema)", Node("(not in schema)", ""))
        orphan.leaves.append(
            LeafRow(
                path, path, MASK if mask_special else tree[path], "?", 0, last_changes.get(path), mask_special
            )
        )
    return root.child_nodes
