"""Schema migration benchmark on PostgreSQL: ``store.migrate_subjects_per_s``.

A tenant uploads ``bench-profile`` v1 (24 leaves) and v2 (three renames, a merge, a drop: 21 leaves);
10,000 subjects pinned to v1 hold ~20-leaf trees (seeded in bulk: one version each). The whole
migration (:func:`memory.services.schema_migrations.schema_migration_run`, the service's default
batch size) is timed end to end: batches locked, planned, gated, written (versions, op records, pins,
counts) and committed, with the ``version_applied`` follow-ups run on commit as in production.

``python bench/bench_schema.py --sweep`` times batch sizes against each other instead (several
rounds, interleaved, 1,000 subjects per trial) to choose the service's default. Runs its own Django
setup against a scratch database (``bench_schema_personatree``) that it creates and drops.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scratch import scratch_db  # noqa: E402

SCRATCH_DB = os.environ.get("PERSONATREE_BENCH_SCHEMA_DB", "bench_schema_personatree")
N_SUBJECTS = 10_000
TREE_LEAVES = 20
SCHEMA_ID = "bench-profile"
GROUPS = ("identity", "learning", "habits", "interests")
NAMES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
RENAMED = {"identity/basics/alpha": "identity/basics/first", "learning/basics/beta": "learning/basics/second",
           "habits/basics/gamma": "habits/basics/third"}  # fmt: skip
MERGED = (("interests/basics/delta", "interests/basics/epsilon"), "interests/basics/delta_and_epsilon")
DROPPED = "interests/basics/zeta"


def _documents() -> tuple[dict, dict, dict]:
    """Schema v1, schema v2 and the mapping between them."""
    v1 = [f"{group}/basics/{name}" for group in GROUPS for name in NAMES]

    def leaf(path: str) -> dict:
        return {"path": path, "description": f"bench leaf {path}", "budget": 160, "tier": "normal"}

    v2 = [RENAMED.get(p, p) for p in v1 if p not in MERGED[0] and p != DROPPED] + [MERGED[1]]
    steps = [{"op": "rename", "from": a, "to": b} for a, b in RENAMED.items()]
    steps += [{"op": "merge", "from": list(MERGED[0]), "to": MERGED[1]}, {"op": "drop", "path": DROPPED}]
    mapping = {"id": "bench-profile-v1-to-v2", "source": {"id": SCHEMA_ID, "version": 1},
               "target": {"id": SCHEMA_ID, "version": 2}, "steps": steps}  # fmt: skip
    return (
        {"id": SCHEMA_ID, "version": 1, "leaves": [leaf(p) for p in v1]},
        {"id": SCHEMA_ID, "version": 2, "leaves": [leaf(p) for p in v2]},
        mapping,
    )


def _seed(name: str, n: int):
    """A tenant with both schemas and ``n`` subjects pinned to v1, each with a ~20-leaf tree."""
    from django.db import connection

    from memory.models import Subject, TreeVersion
    from memory.services.schema_migrations import schema_migration_create
    from memory.services.schemas import schema_upload
    from memory.services.subjects import tenant_create

    tenant = tenant_create(name=name)
    v1, v2, mapping = _documents()
    schema_upload(tenant=tenant, document=v1)
    schema_upload(tenant=tenant, document=v2)
    paths = [leaf["path"] for leaf in v1["leaves"]]
    subjects = Subject.objects.bulk_create(
        [
            Subject(tenant=tenant, external_id=f"s{i}", schema_id=SCHEMA_ID, schema_version=1)
            for i in range(n)
        ],
        batch_size=2000,
    )
    versions = []
    for i, subject in enumerate(subjects):
        chosen = [paths[(i + k) % len(paths)] for k in range(TREE_LEAVES)]  # every step hit, in turns
        tree = {p: f"value {i} of {p.rsplit('/', 1)[-1]}" for p in chosen}
        versions.append(TreeVersion(subject=subject, number=1, snapshot=tree, created_by="import"))
    TreeVersion.objects.bulk_create(versions, batch_size=2000)
    with connection.cursor() as cur:
        cur.execute(
            f"UPDATE {Subject._meta.db_table} s SET head_id = v.id, head_version = 1 "
            f"FROM {TreeVersion._meta.db_table} v WHERE v.subject_id = s.id AND s.tenant_id = %s",
            [tenant.pk],
        )
        cur.execute("ANALYZE")
    row, _ = schema_migration_create(tenant=tenant, document=mapping, created_by="bench")
    return tenant, row


FOLLOW_UP_S = [0.0]  # time spent in the version_applied receivers (run on commit, inside the timing)


def _timed_follow_ups() -> None:
    from memory.services import tree

    send = tree.send_signal
    if getattr(send, "timed", False):
        return

    def timed(signal, **kwargs):
        started = time.perf_counter()
        try:
            send(signal, **kwargs)
        finally:
            FOLLOW_UP_S[0] += time.perf_counter() - started

    timed.timed = True  # type: ignore[attr-defined]
    tree.send_signal = timed


def _migrate(row, batch_size: int) -> tuple[float, dict]:
    from memory.services.schema_migrations import schema_migration_run

    _timed_follow_ups()
    FOLLOW_UP_S[0] = 0.0
    started = time.perf_counter()
    out = schema_migration_run(migration=row, batch_size=batch_size)
    return time.perf_counter() - started, out


def _measure() -> dict[str, dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.models import TreeVersion
    from memory.services.schema_migrations import DEFAULT_BATCH_SIZE, schema_migration_run

    # Statements per batch, on a small tenant of its own (capturing the big run would slow it down).
    _, probe = _seed("bench-probe", DEFAULT_BATCH_SIZE)
    with CaptureQueriesContext(connection) as captured:
        schema_migration_run(migration=probe, batch_size=DEFAULT_BATCH_SIZE)
    tenant, row = _seed("bench", N_SUBJECTS)
    load_before = os.getloadavg()[0]
    elapsed, out = _migrate(row, DEFAULT_BATCH_SIZE)
    follow_up = FOLLOW_UP_S[0]
    load_after = os.getloadavg()[0]
    assert out["status"] == "done" and out["counts"]["migrated"] == N_SUBJECTS, out
    assert out["counts"]["failed"] == 0
    written = TreeVersion.objects.filter(subject__tenant=tenant, created_by="migration").count()
    assert written == N_SUBJECTS, written
    rate = N_SUBJECTS / elapsed
    return {
        "store.migrate_subjects_per_s": {
            "value": round(rate, 1),
            "unit": "subjects/s",
            "target": ">= 500",
            "note": f"{N_SUBJECTS} subjects (~{TREE_LEAVES}-leaf trees, mapping: 3 renames, a merge, a drop) "
            f"migrated on Postgres in {elapsed:.1f} s, batch size {DEFAULT_BATCH_SIZE} "
            f"({len(captured.captured_queries)} statements for one batch incl. BEGIN/COMMIT and the run's "
            f"bookkeeping); {follow_up:.1f} s of it in the version_applied receivers run on commit; load average {load_before:.2f} before, {load_after:.2f} after (2 cores)",
        }
    }


def _sweep(sizes: list[int], rounds: int, per_trial: int) -> None:
    rates: dict[int, list[float]] = {size: [] for size in sizes}
    for r in range(rounds):
        for size in sizes if r % 2 == 0 else reversed(sizes):  # interleaved: load drifts hit all sizes
            _, row = _seed(f"sweep-{r}-{size}", per_trial)
            elapsed, out = _migrate(row, size)
            assert out["status"] == "done"
            rates[size].append(per_trial / elapsed)
            print(
                f"batch {size}: {per_trial / elapsed:.0f}/s, follow-ups {FOLLOW_UP_S[0] / elapsed:.0%}",
                flush=True,
            )
    print(f"load average {os.getloadavg()}")
    for size, got in rates.items():
        print(
            f"batch {size:>5}: median {statistics.median(got):7.1f} subjects/s  ({', '.join(f'{x:.0f}' for x in got)})"
        )


def run() -> dict[str, dict]:
    with scratch_db(SCRATCH_DB):
        return _measure()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweep", type=lambda s: [int(x) for x in s.split(",")], default=None,
                        help="batch sizes to compare, e.g. 50,100,200,400,1000")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-trial", type=int, default=1000)
    args = parser.parse_args()
    if args.sweep:
        with scratch_db(SCRATCH_DB):
            _sweep(args.sweep, args.rounds, args.per_trial)
    else:
        for name, result in run().items():
            print(
                f"{name}: {result['value']} {result['unit']} (target {result['target']}) — {result['note']}"
            )
