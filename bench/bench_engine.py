"""Engine micro-benchmarks: the hot path of one tree update, and rendering.

Timings are medians of this process's CPU time per call (wall time is in the note).

- ``engine.apply_5ops_us``: parse (paper line format, with a fence and numbering) + gate
  (strict) + apply of a realistic 5-op batch (2 ADD on empty leaves, 2 UPDATE, 1 DELETE) on the
  default schema with ~90% of its leaves filled. Median over many runs, in microseconds.
- ``engine.render_full_tree_us``: grouped render of that full tree including the token count
  (real tokenizer when the optional one is installed, else the estimate; named in the note).
- ``engine.schema_leaf_count``: leaves in the default schema (informational).
- ``engine.segment_turn_us`` / ``engine.dates_clause_us``: the fact pipeline's pure steps, one chat
  turn cut into clauses (``segment``) and one clause's relative dates resolved (``with_dates``).
- ``engine.migration_plan_us``: a declared schema migration (``memory/engine/migration.py``, the
  test fixtures' v1 -> v2 mapping) planned and turned into ops for one 150-leaf tree: the pure
  share of each subject in ``store.migrate_subjects_per_s`` (>= 500/s leaves 2 ms per subject).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import print_rows  # noqa: E402
from memory.engine import Tree, apply, default_schema, gate, parse_ops, render  # noqa: E402
from memory.engine.dates import with_dates  # noqa: E402
from memory.engine.migration import load_migration, plan_migration  # noqa: E402
from memory.engine.render import token_counter_name  # noqa: E402
from memory.engine.schema import load_schema  # noqa: E402
from memory.engine.segment import segment  # noqa: E402

MIGRATION_FIXTURES = ROOT / "tests" / "memory" / "engine" / "fixtures"

KNOWN = {
    "identity/name/full_name": "Maria Alves",
    "identity/location/current_city": "Porto, Portugal; moved from Lisbon in 2023",
    "identity/occupation/current_role": "Senior data engineer on the payments team",
    "identity/family/pets": "A grey cat called Miso, 4 years old",
    "behaviour/habits/exercise": "Used to run 10k three times a week; knee trouble since May, switched to swimming",
    "body/health/conditions": "Mild asthma, uses an inhaler before exercise",
    "behaviour/food/favourite_foods": "Bacalhau, ramen, dark chocolate",
    "identity/relationships/partner": "Partner Tom, together 6 years, he is a nurse",
}

BATCH = """```
1. ADD(identity/education/current_studies, "Evening course in machine learning at the polytechnic")
2. UPDATE(behaviour/habits/exercise, "Used to run 10k; knee trouble since May, now swims twice a week and does yoga")
3. UPDATE(identity/family/pets, "A grey cat called Miso, 4, and a new puppy named Bolt")
4. DELETE(identity/relationships/partner, None)
5. ADD(behaviour/travel/planned_trips, "Trip to Kyoto in April with her sister")
```"""


def _full_tree() -> Tree:
    schema = default_schema()
    empty = {"identity/education/current_studies", "behaviour/travel/planned_trips"}
    data = {}
    for i, leaf in enumerate(schema.leaves):
        if leaf.path in empty or (i % 10 == 9 and leaf.path not in KNOWN):
            continue
        filler = f"Said in chat: {leaf.description.lower()}, with a concrete detail"
        data[leaf.path] = KNOWN.get(leaf.path, filler)[: leaf.budget]
    return Tree(data)


def _median_us(fn, rounds: int, inner: int) -> tuple[float, float]:
    """Median per-call (CPU time, wall time) in microseconds over ``rounds`` rounds of ``inner`` calls.

    CPU time of this process is the headline number: on a shared machine wall time also counts
    time spent waiting for a core. Both are reported."""
    cpu, wall = [], []
    for _ in range(rounds):
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        for _ in range(inner):
            fn()
        cpu.append((time.process_time_ns() - c0) / inner / 1000)
        wall.append((time.perf_counter_ns() - w0) / inner / 1000)
    return statistics.median(cpu), statistics.median(wall)


def run() -> dict[str, dict]:
    schema = default_schema()
    tree = _full_tree()

    def step():
        parsed = parse_ops(BATCH)
        gated = gate(schema, tree, parsed.ops)
        return apply(tree, gated.accepted)

    gated = gate(schema, tree, parse_ops(BATCH).ops)
    if len(gated.accepted) != 5:
        raise RuntimeError(f"benchmark batch must be fully accepted: {gated.rejected}")
    step_us, step_wall = _median_us(step, rounds=41, inner=50)
    render(tree, schema)  # warm the tokenizer
    rendered = render(tree, schema)
    render_us, render_wall = _median_us(lambda: render(tree, schema), rounds=21, inner=10)
    target = load_schema(MIGRATION_FIXTURES / "personatree-default.v2.json")
    mapping = json.loads((MIGRATION_FIXTURES / "personatree-default.v1-to-v2.json").read_text())
    migration = load_migration(mapping, schema, target)
    values = {p: f"value of {p.rsplit('/', 1)[1]} with some words" for p in schema.paths[:150]}
    migrate_us, migrate_wall = _median_us(
        lambda: plan_migration(values, migration).ops(), rounds=21, inner=10
    )
    turn = "Hey Priya! Wow, I lost my job, so I'm starting a bakery - pretty cool, huh? My sister helps. " * 3
    segment_us, segment_wall = _median_us(lambda: segment(turn, names=("Priya",)), rounds=21, inner=20)
    said = datetime(2023, 5, 8, 12, tzinfo=UTC)
    clause = "Went to the gym 3 days ago and to a party last weekend"
    dates_us, dates_wall = _median_us(lambda: with_dates(clause, said), rounds=21, inner=20)
    return {
        "engine.segment_turn_us": {
            "value": round(segment_us, 1),
            "unit": "us",
            "target": "<= 5000",
            "note": f"a {len(turn)}-character chat turn into clauses; median CPU time (wall {segment_wall:.0f} us)",
        },
        "engine.dates_clause_us": {
            "value": round(dates_us, 1),
            "unit": "us",
            "target": "<= 2000",
            "note": f"relative dates of one clause resolved (dateparser, cached); median CPU time "
            f"(wall {dates_wall:.0f} us)",
        },
        "engine.migration_plan_us": {
            "value": round(migrate_us, 1),
            "unit": "us",
            "target": "<= 2000",
            "note": f"plan + ops of {migration.id} for a {len(values)}-leaf tree; median CPU time "
            f"(wall {migrate_wall:.0f} us)",
        },
        "engine.apply_5ops_us": {
            "value": round(step_us, 2),
            "unit": "us",
            "target": "<= 100",
            "note": f"parse+gate+apply, 5 ops, tree with {len(tree)}/{len(schema)} leaves filled; "
            f"median CPU time (wall {step_wall:.1f} us)",
        },
        "engine.render_full_tree_us": {
            "value": round(render_us, 2),
            "unit": "us",
            "target": None,
            "note": f"{len(rendered.paths)} leaves, {len(rendered.text)} chars, {rendered.token_count} tokens "
            f"({token_counter_name()}); median CPU time (wall {render_wall:.0f} us)",
        },
        "engine.schema_leaf_count": {
            "value": float(len(schema)),
            "unit": "leaves",
            "target": None,
            "note": f"{schema.id} v{schema.version}, trunks: {', '.join(schema.trunks)}",
        },
    }


if __name__ == "__main__":
    print_rows(run())
