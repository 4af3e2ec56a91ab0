"""Store benchmarks on PostgreSQL: applying a 5-op chunk and reading the current tree.

Runs its own Django setup with the test settings against a scratch database
(``bench_personatree``) that it creates and drops.

- ``store.apply_chunk_ms``: median wall time of one ``tree_apply_ops`` call with 5 ops
  (lock, gate, version + 5 audit rows, chunk marked applied, commit).
- ``store.read_tree_ms``: median wall time of ``subject_get`` + ``tree_current`` (one query).
- ``store.commit_floor_ms``: median of a bare one-row INSERT + COMMIT (autocommit, one round trip,
  one WAL flush), measured interleaved with the apply calls so both see the same machine load;
  no committed write can be faster. The apply note gives apply / floor.
- ``store.apply_chunk_queries``: statements one apply sends (BEGIN and COMMIT included).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scratch import scratch_db  # noqa: E402

SCRATCH_DB = os.environ.get("PERSONATREE_BENCH_STORE_DB", "bench_personatree")
N_SUBJECTS = 20
ROUNDS = 10  # chunks per subject


def _chunk_pairs(schema, round_no: int) -> list[tuple[str, str]]:
    """Five (path, value) pairs; rounds rotate over the normal-tier leaves (ADDs, later UPDATEs)."""
    leaves = [leaf for leaf in schema.leaves if leaf.tier == "normal"]
    ops = []
    for i in range(5):
        leaf = leaves[(round_no * 5 + i) % len(leaves)]
        ops.append((leaf.path, f"value {round_no}-{i} for {leaf.path.rsplit('/', 1)[-1]}"[: leaf.budget]))
    return ops


def _measure() -> dict[str, dict]:
    from memory import selectors
    from memory.engine.ops import Op, OpType
    from memory.models import Chunk
    from memory.services.subjects import subject_get_or_create, tenant_create
    from memory.services.tree import Actor, Source, tree_apply_ops

    tenant = tenant_create(name="bench")
    actor = Actor.for_model(model_id="bench", prompt_version="bench")
    subjects = [subject_get_or_create(tenant=tenant, external_id=f"u{i}")[0] for i in range(N_SUBJECTS)]
    schema = selectors.subject_schema(subjects[0])
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with connection.cursor() as cur:
        cur.execute("CREATE TABLE bench_floor (x int)")
    apply_ms: list[float] = []
    commit_ms: list[float] = []
    for round_no in range(ROUNDS):
        pairs = _chunk_pairs(schema, round_no)
        for s_no, subject in enumerate(subjects):
            chunk = Chunk.objects.create(
                subject=subject,
                chunk_key=f"{round_no:08d}{s_no:056d}",
                start_seq=round_no * 6,
                end_seq=round_no * 6 + 5,
            )
            current = selectors.tree_current(subject)
            ops = [Op(OpType.UPDATE if p in current else OpType.ADD, p, v) for p, v in pairs]
            source = Source(chunk.pk, chunk.start_seq, chunk.end_seq)
            last = round_no == ROUNDS - 1 and s_no == len(subjects) - 1
            with CaptureQueriesContext(connection) if last else _nothing() as captured:
                started = time.perf_counter()
                out = tree_apply_ops(
                    subject=subject, base_version=subject.head_version, ops=ops, actor=actor, source=source
                )
                apply_ms.append((time.perf_counter() - started) * 1000)
            assert len(out.applied) == 5 and out.version is not None, out
            with connection.cursor() as cur:  # the floor, right after, under the same load
                started = time.perf_counter()
                cur.execute("INSERT INTO bench_floor VALUES (%s)", [s_no])
                commit_ms.append((time.perf_counter() - started) * 1000)
    apply_queries = len(captured.captured_queries)
    with connection.cursor() as cur:
        cur.execute("DROP TABLE bench_floor")
    read_ms: list[float] = []
    for _ in range(10):
        for subject in subjects:
            started = time.perf_counter()
            fresh = selectors.subject_get(tenant=tenant, external_id=subject.external_id)
            tree = selectors.tree_current(fresh)
            read_ms.append((time.perf_counter() - started) * 1000)
            assert len(tree) > 0
    # A trivial ORM query: the round-trip floor of a read in the same run.
    from memory.models import Tenant

    orm_ms: list[float] = []
    for _ in range(200):
        started = time.perf_counter()
        Tenant.objects.filter(pk=tenant.pk).exists()
        orm_ms.append((time.perf_counter() - started) * 1000)
    orm_floor, commit_floor = statistics.median(orm_ms), statistics.median(commit_ms)
    apply_med, read_med = statistics.median(apply_ms), statistics.median(read_ms)
    return {
        "store.apply_chunk_ms": {
            "value": round(apply_med, 3),
            "unit": "ms",
            "target": "<= 5",
            "note": f"median of {len(apply_ms)} tree_apply_ops calls (5 ops, Postgres, {apply_queries} "
            f"statements incl. BEGIN/COMMIT; p90 {statistics.quantiles(apply_ms, n=10)[-1]:.2f} ms) = "
            f"{apply_med / commit_floor:.1f}x the same-run commit floor ({commit_floor:.2f} ms, one-row "
            f"INSERT+COMMIT); trivial ORM query {orm_floor:.2f} ms",
        },
        "store.read_tree_ms": {
            "value": round(read_med, 3),
            "unit": "ms",
            "target": "<= 2",
            "note": f"median of {len(read_ms)} subject_get + tree_current reads (1 query); "
            f"{read_med / orm_floor:.1f}x a trivial ORM query ({orm_floor:.2f} ms) in the same run",
        },
        "store.commit_floor_ms": {
            "value": round(commit_floor, 3),
            "unit": "ms",
            "target": None,
            "note": f"median of {len(commit_ms)} one-row autocommit INSERTs (one round trip + WAL flush, "
            "synchronous_commit on), interleaved with the apply calls",
        },
        "store.apply_chunk_queries": {
            "value": float(apply_queries),
            "unit": "statements",
            "target": None,
            "note": "statements one 5-op tree_apply_ops sends, BEGIN and COMMIT included",
        },
    }


@contextlib.contextmanager
def _nothing():
    yield None


def run() -> dict[str, dict]:
    with scratch_db(SCRATCH_DB):
        return _measure()


if __name__ == "__main__":
    for name, row in run().items():
        print(f"{name}: {row['value']} {row['unit']} (target {row['target']}) — {row['note']}")
