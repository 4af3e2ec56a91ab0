"""Store benchmarks on PostgreSQL: applying a 5-op chunk and reading the current tree.

Runs its own Django setup with the test settings against a scratch database
(``bench_personatree``) that it creates and drops.

- ``store.apply_chunk_ms``: median wall time of one ``tree_apply_ops`` call with 5 ops
  (lock, gate, version + 5 audit rows, chunk marked applied, commit, the after-commit receivers);
  the note adds this process's CPU time per call, which the machine's load and the disk's flush
  latency (the commit floor) move much less than wall time.
- ``store.read_tree_ms``: median wall time of ``subject_get`` + ``tree_current`` (one query).
- ``store.commit_floor_ms``: median of a bare one-row INSERT + COMMIT (autocommit, one round trip,
  one WAL flush), measured interleaved with the apply calls so both see the same machine load;
  no committed write can be faster. The apply note gives apply / floor.
- ``store.apply_chunk_queries``: statements one apply sends (BEGIN and COMMIT included).
- ``store.bytes_per_version``: median bytes a version row takes (``pg_column_size`` of the whole
  row) for a 150-leaf tree after 500 one-op versions (compact history: deltas, a checkpoint every
  ``CHECKPOINT_EVERY`` versions, the head's whole tree).
- ``store.read_as_of_ms``: median wall time of ``tree_at`` for versions in the middle of that
  history (226..275: every distance from a checkpoint; one range query + replay).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import print_rows  # noqa: E402
from bench.scratch import scratch_db  # noqa: E402

SCRATCH_DB = os.environ.get("PERSONATREE_BENCH_STORE_DB", "bench_personatree")
N_SUBJECTS = 20
ROUNDS = 10  # chunks per subject
HISTORY_LEAVES = 150
HISTORY_VERSIONS = 500  # one-op versions after the 150-leaf one


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
    apply_cpu_ms: list[float] = []  # this process's CPU: less sensitive to machine load and fsync latency
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
                started, cpu_started = time.perf_counter(), time.process_time()
                out = tree_apply_ops(
                    subject=subject, base_version=subject.head_version, ops=ops, actor=actor, source=source
                )
                apply_ms.append((time.perf_counter() - started) * 1000)
                apply_cpu_ms.append((time.process_time() - cpu_started) * 1000)
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
    history = _history(tenant, schema)
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
            f"INSERT+COMMIT); trivial ORM query {orm_floor:.2f} ms; CPU of this process per apply "
            f"{statistics.median(apply_cpu_ms):.2f} ms (median); load average {os.getloadavg()[0]:.1f}",
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
        **history,
    }


def _history(tenant, schema) -> dict[str, dict]:
    """A 150-leaf tree, then 500 one-op versions (admin UPDATEs rotating over the leaves); the rows'
    sizes and the time to read versions in the middle of the history."""
    from django.db import connection

    from memory import selectors
    from memory.engine.history import CHECKPOINT_EVERY
    from memory.engine.ops import Op, OpType
    from memory.models import TreeVersion
    from memory.services.subjects import subject_get_or_create
    from memory.services.tree import Actor, tree_apply_ops

    subject, _ = subject_get_or_create(tenant=tenant, external_id="history")
    actor = Actor.system("bench")
    leaves = [leaf for leaf in schema.leaves if leaf.tier != "special"][:HISTORY_LEAVES]

    def value(leaf, n: int) -> str:
        return f"value {n} for {leaf.path.rsplit('/', 1)[-1]}"[: leaf.budget]

    ops = [Op(OpType.ADD, leaf.path, value(leaf, 0)) for leaf in leaves]
    tree_apply_ops(subject=subject, base_version=0, ops=ops, actor=actor)
    for n in range(1, HISTORY_VERSIONS + 1):
        leaf = leaves[n % len(leaves)]
        op = Op(OpType.UPDATE, leaf.path, value(leaf, n))
        tree_apply_ops(subject=subject, base_version=subject.head_version, ops=[op], actor=actor)
    table = connection.ops.quote_name(TreeVersion._meta.db_table)
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT pg_column_size(v.*), coalesce(pg_column_size(v.tree), 0) + "
            f"coalesce(pg_column_size(v.delta), 0), v.tree IS NOT NULL FROM {table} v WHERE v.subject_id = %s",
            [subject.pk],
        )
        rows = cur.fetchall()
    row_bytes = statistics.median(r[0] for r in rows)
    json_bytes = statistics.median(r[1] for r in rows)
    whole = sum(1 for r in rows if r[2])
    head_tree_bytes = max(r[1] for r in rows if r[2])
    fresh = selectors.subject_get(tenant=tenant, external_id="history")
    assert fresh is not None and fresh.head_version == HISTORY_VERSIONS + 1
    middle = range(HISTORY_VERSIONS // 2 - 24, HISTORY_VERSIONS // 2 + 26)
    read_ms: list[float] = []
    for _ in range(4):
        for number in middle:
            started = time.perf_counter()
            got, tree = selectors.tree_at(fresh, number)
            read_ms.append((time.perf_counter() - started) * 1000)
            assert got == number and len(tree) == HISTORY_LEAVES
    read_med = statistics.median(read_ms)
    return {
        "store.bytes_per_version": {
            "value": float(row_bytes),
            "unit": "B",
            "target": "<= 1000",
            "note": f"median pg_column_size of the {len(rows)} version rows of a {HISTORY_LEAVES}-leaf tree "
            f"after {HISTORY_VERSIONS} one-op versions (JSON columns alone {json_bytes:.0f} B); {whole} rows "
            f"hold the whole tree (a checkpoint every {CHECKPOINT_EVERY} versions and the head, "
            f"~{head_tree_bytes} B each, what every row used to store)",
        },
        "store.read_as_of_ms": {
            "value": round(read_med, 3),
            "unit": "ms",
            "target": "<= 3",
            "note": f"median of {len(read_ms)} tree_at reads of versions {middle.start}..{middle.stop - 1} "
            f"(one range query from the nearest checkpoint + replay; max {max(read_ms):.2f} ms)",
        },
    }


@contextlib.contextmanager
def _nothing():
    yield None


def run() -> dict[str, dict]:
    with scratch_db(SCRATCH_DB):
        return _measure()


if __name__ == "__main__":
    print_rows(run())
