"""Declared schema migrations: move a tree's values from schema A to schema B (pure arithmetic).

The mapping format, the step semantics and what makes a mapping invalid are in docs/SCHEMAS.md
("Migrations (engine)"). :func:`load_migration` validates a mapping against both schemas
(:class:`MigrationError` names the offending step or leaf); :func:`plan_migration` plans it for one
tree without writing anything (the dry run); a tree already pinned to B is a no-op plan.

CLI: ``python -m memory.engine.migration --dry-run MAPPING.json TREE.json [--source A.json]
[--target B.json]`` prints the report as JSON (default schemas: the shipped ones the mapping names).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .gate import normalise_value
from .ops import Op
from .schema import Schema, SchemaError, get_schema, load_schema
from .tree import Tree, changes_to_ops, diff

STEP_KINDS = ("rename", "move", "merge", "split", "drop")
SPLIT_RULES = ("copy", "separator")
JOIN = "; "


class MigrationError(ValueError):
    """The mapping (or a tree given to it) is invalid; the message names the offending step or path."""


@dataclass(frozen=True, slots=True)
class Step:
    kind: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    rule: str = ""
    separator: str = ";"

    def label(self, index: int) -> str:
        if self.kind == "drop":
            return f"steps[{index}] (drop {self.sources[0]})"
        return f"steps[{index}] ({self.kind} {', '.join(self.sources)} -> {', '.join(self.targets)})"


@dataclass(frozen=True)
class Migration:
    id: str
    source: Schema
    target: Schema
    steps: tuple[Step, ...]
    # Paths of A kept unchanged because B has them and no step names them.
    kept: tuple[str, ...] = field(default=())
    _order: tuple[tuple[str, int, tuple[str, ...] | None, str], ...] = field(
        init=False, repr=False, compare=False
    )
    _source_paths: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Per leaf of B, in B's order: (path, budget, tiers of its A sources when it needs review, tier).
        # Review: a value crossing the special tier's border, in either direction.
        origin: dict[str, tuple[str, ...]] = {p: (p,) for p in self.kept}
        origin.update({t: s.sources for s in self.steps for t in s.targets})
        tier_of = {leaf.path: leaf.tier for leaf in self.source.leaves}
        order = []
        for leaf in self.target.leaves:
            tiers = tuple(sorted({tier_of[p] for p in origin.get(leaf.path, ())}))
            raised = leaf.tier == "special" and tiers and tiers != ("special",)
            lowered = leaf.tier != "special" and "special" in tiers
            order.append((leaf.path, leaf.budget, tiers if raised or lowered else None, leaf.tier))
        object.__setattr__(self, "_order", tuple(order))
        object.__setattr__(self, "_source_paths", frozenset(self.source.paths))


def _key(data: Any, name: str) -> tuple[str, int]:
    if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
        raise MigrationError(f"mapping {name} must be {{'id': ..., 'version': ...}}, got {data!r}")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise MigrationError(f"mapping {name} version must be an integer, got {version!r}")
    return data["id"], version


def _paths(raw: Any, where: str, *, many: bool) -> tuple[str, ...]:
    items = raw if many else [raw]
    if not isinstance(items, list) or not items or not all(isinstance(p, str) and p for p in items):
        shape = "a non-empty list of paths" if many else "a path string"
        raise MigrationError(f"{where}: expected {shape}, got {raw!r}")
    if len(set(items)) != len(items):
        raise MigrationError(f"{where}: a path is listed twice")
    return tuple(items)


def _parse_step(index: int, raw: Any) -> Step:
    where = f"steps[{index}]"
    if not isinstance(raw, Mapping) or raw.get("op") not in STEP_KINDS:
        raise MigrationError(f"{where}: a step is an object with 'op' in {STEP_KINDS}, got {raw!r}")
    kind = raw["op"]
    allowed = {"drop": {"op", "path"}, "split": {"op", "from", "to", "rule", "separator"}}
    unknown = set(raw) - allowed.get(kind, {"op", "from", "to"})
    if unknown:
        raise MigrationError(f"{where} ({kind}): unknown fields {sorted(unknown)}")
    if kind == "drop":
        return Step(kind, _paths(raw.get("path"), where, many=False), ())
    sources = _paths(raw.get("from"), f"{where} ({kind}) 'from'", many=kind == "merge")
    targets = _paths(raw.get("to"), f"{where} ({kind}) 'to'", many=kind == "split")
    if kind == "merge" and len(sources) < 2 or kind == "split" and len(targets) < 2:
        raise MigrationError(f"{where} ({kind}): needs at least two paths on its many side")
    if kind != "split":
        return Step(kind, sources, targets)
    rule = raw.get("rule")
    if rule not in SPLIT_RULES:
        raise MigrationError(f"{where} (split): 'rule' must be one of {SPLIT_RULES}, got {rule!r}")
    separator = raw.get("separator", ";")
    if not isinstance(separator, str) or not separator.strip():
        raise MigrationError(f"{where} (split): 'separator' must be a non-blank string")
    return Step(kind, sources, targets, rule, separator)


def _claim(
    label: str, side: str, paths: tuple[str, ...], schema: Schema, seen: dict[str, str], clash: str
) -> None:
    """Each path must be a leaf of ``schema`` not yet claimed by another step (``seen``: path -> step)."""
    for path in paths:
        if not schema.is_leaf(path):
            raise MigrationError(f"{label}: {side} {path!r} is not a leaf of {schema.id} v{schema.version}")
        if path in seen:
            raise MigrationError(f"{label}: {side} {path!r} {clash} {seen[path]}")
        seen[path] = label


def load_migration(
    data: str | Path | Mapping[str, Any], source: Schema | None = None, target: Schema | None = None
) -> Migration:
    """Load and validate a mapping against schema A and B (default: the shipped ones it names)."""
    if not isinstance(data, Mapping):
        data = _load_json(data, "mapping ")
    if not isinstance(data, Mapping):
        raise MigrationError("a mapping must be a JSON object")
    unknown = set(data) - {"id", "source", "target", "steps", "doc"}
    if unknown:
        raise MigrationError(f"mapping has unknown fields {sorted(unknown)}")
    mapping_id = data.get("id")
    if not isinstance(mapping_id, str) or not mapping_id.strip():
        raise MigrationError(f"mapping id must be a non-empty string, got {mapping_id!r}")
    a_key, b_key = _key(data.get("source"), "source"), _key(data.get("target"), "target")
    try:
        a = source if source is not None else get_schema(*a_key)
        b = target if target is not None else get_schema(*b_key)
    except SchemaError as exc:
        raise MigrationError(f"mapping {mapping_id}: {exc}") from exc
    if a.key != a_key or b.key != b_key:
        raise MigrationError(f"mapping {mapping_id} is for {a_key} -> {b_key}, given {a.key} -> {b.key}")
    if a.id != b.id or b.version <= a.version:
        raise MigrationError(f"mapping {mapping_id}: target must be the same schema id at a higher version")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list):
        raise MigrationError(f"mapping {mapping_id}: 'steps' must be a list")
    steps = tuple(_parse_step(i, raw) for i, raw in enumerate(raw_steps))

    named: dict[str, str] = {}
    written: dict[str, str] = {}
    for i, step in enumerate(steps):
        _claim(step.label(i), "source", step.sources, a, named, "is already mapped by")
        _claim(step.label(i), "target", step.targets, b, written, "overlaps")
    kept = []
    for path in a.paths:
        if path in named:
            continue
        if not b.is_leaf(path):
            raise MigrationError(
                f"{path}: leaf of {a.id} v{a.version} is absent in v{b.version} and no step maps or drops it"
            )
        if path in written:
            raise MigrationError(f"{written[path]}: target {path!r} overlaps the unchanged leaf of that path")
        kept.append(path)
    return Migration(mapping_id, a, b, steps, tuple(kept))


def _load_json(path: str | Path, what: str = "") -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise MigrationError(f"cannot read {what}{path}: {exc}") from exc


def truncate(value: str, budget: int) -> str:
    """``value`` cut to at most ``budget`` characters, at a word boundary when there is one."""
    if len(value) <= budget:
        return value
    cut = value[:budget]
    if value[budget] != " " and " " in cut:
        cut = cut[: cut.rfind(" ")]
    cut = cut.rstrip(" ;,")
    return cut or value[:budget]


def _split(value: str, step: Step) -> list[str]:
    n = len(step.targets)
    if step.rule == "copy":
        return [value] * n
    parts = [p.strip() for p in value.split(step.separator) if p.strip()]
    if len(parts) > n:
        parts[n - 1 :] = [JOIN.join(parts[n - 1 :])]
    return parts + [""] * (n - len(parts))


@dataclass(frozen=True)
class MigrationPlan:
    """What a migration writes for one tree: the values under B and a report (the dry-run output)."""

    mapping_id: str
    before: Tree
    after: Tree
    report: dict[str, Any]

    def ops(self) -> tuple[Op, ...]:
        """Ops with ``apply(before, ops) == after``: DELETEs retire A's leaves B lacks, every other op
        names a leaf of B, fits its budget and passes B's gate against ``before``."""
        return changes_to_ops(diff(self.before, self.after))

    def to_dict(self) -> dict[str, Any]:
        return {**self.report, "values": self.after.to_dict()}


def _empty_report(migration: Migration) -> dict[str, Any]:
    return {
        "mapping": migration.id,
        "source": list(migration.source.key),
        "target": list(migration.target.key),
        "already_migrated": False,
        **{part: [] for part in ("moved", "merged", "split", "dropped", "truncated", "review")},
    }


def plan_migration(
    tree_values: Mapping[str, str], migration: Migration, *, pinned: tuple[str, int] | None = None
) -> MigrationPlan:
    """Plan ``migration`` for one tree (nothing is written). ``pinned``: the (id, version) the tree
    is stored under, when known: B gives a no-op plan, any other than A is refused."""
    a, b = migration.source, migration.target
    before = tree_values if isinstance(tree_values, Tree) else Tree.from_dict(tree_values)
    report = _empty_report(migration)
    if pinned is not None and tuple(pinned) == b.key:
        report["already_migrated"] = True
        return MigrationPlan(migration.id, before, before, report)
    if pinned is not None and tuple(pinned) != a.key:
        raise MigrationError(
            f"tree is pinned to {tuple(pinned)}, mapping {migration.id} migrates from {a.key}"
        )
    unknown = [p for p in before if p not in migration._source_paths]
    if unknown:
        raise MigrationError(f"tree value at {unknown[0]!r} is not a leaf of {a.id} v{a.version}")

    out: dict[str, str] = {p: before[p] for p in migration.kept if p in before}
    for step in migration.steps:
        values = [normalise_value(before[p]) for p in step.sources if p in before]
        if not values:
            continue
        if step.kind == "drop":
            report["dropped"].append({"path": step.sources[0], "length": len(values[0])})
        elif step.kind == "split":
            for target, part in zip(step.targets, _split(values[0], step), strict=True):
                if part:
                    out[target] = part
            report["split"].append({"from": step.sources[0], "to": list(step.targets), "rule": step.rule})
        elif step.kind == "merge":
            out[step.targets[0]] = JOIN.join(values)
            merged = [p for p in step.sources if p in before]
            report["merged"].append({"from": merged, "to": step.targets[0]})
        else:
            out[step.targets[0]] = values[0]
            report["moved"].append({"from": step.sources[0], "to": step.targets[0]})

    final: dict[str, str] = {}
    for path, budget, review, tier in migration._order:  # B's order, budgets, tiers
        value = out.get(path)
        if value is None:
            continue
        if len(value) > budget:
            cut = truncate(normalise_value(value), budget)
            report["truncated"].append(
                {"path": path, "budget": budget, "before": len(value), "after": len(cut)}
            )
            value = cut
        final[path] = value
        if review is not None:
            report["review"].append({"path": path, "from_tiers": list(review), "tier": tier})
    return MigrationPlan(migration.id, before, Tree._trusted(final), report)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memory.engine.migration", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--dry-run", action="store_true", required=True, help="print the plan's report")
    parser.add_argument("mapping")
    parser.add_argument("tree", help="a JSON object path -> value (a tree snapshot)")
    parser.add_argument("--source", help="schema A file (default: the shipped schema the mapping names)")
    parser.add_argument("--target", help="schema B file (default: the shipped schema the mapping names)")
    parser.add_argument("--values", action="store_true", help="also print the migrated values")
    args = parser.parse_args(argv)
    try:
        a = load_schema(args.source) if args.source else None
        b = load_schema(args.target) if args.target else None
        plan = plan_migration(_load_json(args.tree), load_migration(args.mapping, a, b))
    except ValueError as exc:  # MigrationError, SchemaError, TreeError
        print(json.dumps({"error": str(exc)}), file=sys.stderr)
        return 2
    print(json.dumps(plan.to_dict() if args.values else plan.report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
