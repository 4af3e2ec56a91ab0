"""Ingestion backend benchmarks (PostgreSQL; not a timed test).

What is measured: the dispatcher loop (:func:`workers.dispatcher.dispatch_round`) run in this
process, one loop = one worker, against a scratch Postgres database (``bench_pt_ingest``,
created and dropped here). The MemListener is the real in-process ``MemListener`` (prompt,
parse, gate) on the **zero-latency stand-in engine** (``serving/engines/standin.py``, mode
``derived``: one deterministic op per chunk, so every chunk writes a version). That is not a
model: its time, and the listener's own prompt/parse/gate time, count as *model time*; the
rest of a round -- claiming, loading subjects and messages, ``tree_apply_ops`` per chunk,
commits -- is *backend time*.

- ``ingest.backend_chunks_per_s``: chunks applied per second of backend time (wall time minus the
  MemListener call), zero-latency stand-in; the note also gives the wall-time rate.
- ``ingest.backend_ms_per_chunk``: median over rounds of backend wall time / chunks in the round.
- ``ingest.backend_cpu_ms_per_chunk``: this process's CPU time per chunk outside the MemListener
  call (the Postgres server's CPU is not included).
- ``ingest.backend_share_at_500ms``: with the stand-in sleeping 500 ms per batch (a simulated
  model), backend time / wall time over the whole run.
- ``ingest.messages_ingest_ms``: median time of one ``messages_ingest`` call of 6 messages.
- ``ingest.fair_wait_rounds``: a tenant with ``FAIR_BACKLOG`` pending chunks (``FAIR_SUBJECTS``
  subjects, written in bulk) and then one with a single chunk: dispatch rounds (batches of
  ``BATCH``) until the small tenant's chunk is applied (stand-in engine). Per-tenant fair claiming
  (:func:`workers.ordering.fair_order`) makes it 1; oldest-first claiming made it about
  ``FAIR_BACKLOG / BATCH``. The note gives the claim statement's time at that backlog.

Broker queue wait is not part of this in-process loop; the workers record it per task
(``task_queue_wait_seconds`` in :mod:`workers.metrics`).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Timed, load_note, print_rows  # noqa: E402
from bench.scratch import scratch_db  # noqa: E402

SCRATCH_DB = "bench_pt_ingest"
SUBJECTS = 32
CHUNKS_PER_SUBJECT = 12
SLOW_SUBJECTS = 32
SLOW_CHUNKS = 3
BATCH = 16
FAIR_BACKLOG = 10_000
FAIR_SUBJECTS = 1_000
FAIR_MAX_ROUNDS = 20  # oldest-first would need ~FAIR_BACKLOG / BATCH rounds: stop counting here
FAIR_MIN_ROUNDS = 8  # rounds run in any case, for the claim statement's median time


def _ingest(tenant, prefix: str, subjects: int, chunks: int) -> list[float]:
    from memory.services.ingest import IncomingMessage, messages_ingest

    times = []
    for s in range(subjects):
        for c in range(chunks):
            msgs = []
            for p in range(3):
                i = c * 3 + p
                msgs.append(
                    IncomingMessage("user", f"I started learning skill {i} for my job as nurse {s}", f"u{i}")
                )
                msgs.append(IncomingMessage("assistant", f"Great, how is skill {i} going?", f"a{i}"))
            started = time.perf_counter()
            messages_ingest(tenant=tenant, external_id=f"{prefix}{s}", messages=msgs, enqueue=False)
            times.append(time.perf_counter() - started)
    return times


class _CpuClock:
    """Wraps a client and adds up this process's CPU time spent inside ``run`` (the MemListener)."""

    def __init__(self, inner):
        self.inner = inner
        self.cpu_s = 0.0

    def run(self, jobs):
        started = time.process_time()
        try:
            return self.inner.run(jobs)
        finally:
            self.cpu_s += time.process_time() - started


def _loop(client, expected: int) -> tuple[float, list, float]:
    """Rounds until ``expected`` chunks are applied: (wall s, reports, backend CPU s of this process)."""
    from workers.dispatcher import dispatch_round

    clock = _CpuClock(client)
    reports = []
    started, cpu_started = time.perf_counter(), time.process_time()
    done = 0
    while done < expected:
        r = dispatch_round(client=clock, max_jobs=BATCH, max_wait_ms=0, index=False)
        if not r.claimed:
            break
        done += r.applied
        reports.append(r)
    backend_cpu = time.process_time() - cpu_started - clock.cpu_s
    return time.perf_counter() - started, reports, backend_cpu


def _bulk_backlog(tenant, subjects: int, chunks: int) -> None:
    """``subjects`` x ``chunks`` pending chunks of 3 pairs each, written in bulk (not timed)."""
    from memory.models import Chunk, Message, Subject

    rows = Subject.objects.bulk_create(
        [Subject(tenant=tenant, external_id=f"backlog{s}") for s in range(subjects)], batch_size=2000
    )
    messages, chunk_rows = [], []
    for subject in rows:
        for c in range(chunks):
            for p in range(6):
                seq = c * 6 + p + 1
                role, text = (
                    ("user", f"I practise skill {seq} every day")
                    if p % 2 == 0
                    else (
                        "assistant",
                        f"How is skill {seq} going?",
                    )
                )
                messages.append(
                    Message(subject=subject, seq=seq, role=role, content=text, idempotency_key=f"k{seq}")
                )
            chunk_rows.append(
                Chunk(subject=subject, chunk_key=f"backlog{c}", start_seq=c * 6 + 1, end_seq=c * 6 + 6)
            )
    Message.objects.bulk_create(messages, batch_size=5000)
    Chunk.objects.bulk_create(chunk_rows, batch_size=5000)
    from django.db import connection

    with connection.cursor() as cursor:  # planner statistics, as autovacuum would have them by now
        cursor.execute(f"ANALYZE {Chunk._meta.db_table}, {Subject._meta.db_table}, {Message._meta.db_table}")


def _fair_wait(client) -> dict[str, dict]:
    """Rounds until a 1-chunk tenant's chunk is applied behind a FAIR_BACKLOG-chunk tenant."""
    import workers.dispatcher as dispatcher
    from memory.models import Chunk
    from memory.services.subjects import tenant_create

    big = tenant_create(name="bench-ingest-backlog")
    _bulk_backlog(big, FAIR_SUBJECTS, FAIR_BACKLOG // FAIR_SUBJECTS)
    small = tenant_create(name="bench-ingest-small")
    _ingest(small, "small", 1, 1)
    [chunk_id] = Chunk.objects.filter(subject__tenant=small).values_list("pk", flat=True)
    rounds, applied, done = 0, False, 0
    with Timed(dispatcher, "chunks_claim") as claims:  # the claim statements' wall time
        while done < FAIR_MIN_ROUNDS or (done < FAIR_MAX_ROUNDS and not applied):
            dispatcher.dispatch_round(client=client, max_jobs=BATCH, max_wait_ms=0, index=False)
            done += 1
            if not applied and Chunk.objects.filter(pk=chunk_id, status="applied").exists():
                applied, rounds = True, done
    claim_ms = statistics.median(claims.times) * 1000
    load = load_note()
    return {
        "ingest.fair_wait_rounds": {
            "value": rounds if applied else f">{FAIR_MAX_ROUNDS}",
            "unit": "rounds",
            "target": "<= 1",
            "note": f"dispatch rounds (batches of {BATCH}) until a 1-chunk tenant's chunk is applied behind "
            f"another tenant's {FAIR_BACKLOG} pending chunks ({FAIR_SUBJECTS} subjects, older ids), stand-in "
            f"engine; {'applied' if applied else f'NOT applied within {FAIR_MAX_ROUNDS} rounds'}; "
            f"median claim statement {claim_ms:.1f} ms over {done} rounds with {FAIR_SUBJECTS} ready subjects; {load}",
        }
    }


def _measure() -> dict[str, dict]:
    import workers.dispatcher as dispatcher
    from memory.models import Chunk
    from memory.services.subjects import tenant_create
    from serving.config import EngineConfig
    from serving.listener import InProcessClient

    tenant = tenant_create(name="bench-ingest")
    ingest_times = _ingest(tenant, "fast", SUBJECTS, CHUNKS_PER_SUBJECT)
    total = SUBJECTS * CHUNKS_PER_SUBJECT
    assert Chunk.objects.filter(status="pending").count() == total
    fast = InProcessClient(EngineConfig(kind="standin", standin_mode="derived"))
    # this process's CPU time in the store's write path (the batch form of tree_apply_ops)
    with Timed(dispatcher, "tree_apply_ops_batch", time.process_time) as apply:
        wall, reports, backend_cpu = _loop(fast, total)
    apply_cpu_s = sum(apply.times)
    applied = sum(r.applied for r in reports)
    if applied != total:
        raise RuntimeError(f"only {applied}/{total} chunks applied")
    per_chunk = [r.backend_s / r.claimed * 1000 for r in reports]
    model_s = sum(r.model_s for r in reports)

    slow_tenant = tenant_create(name="bench-ingest-500ms")
    _ingest(slow_tenant, "slow", SLOW_SUBJECTS, SLOW_CHUNKS)
    slow = InProcessClient(EngineConfig(kind="standin", standin_mode="derived", standin_latency_ms=500))
    slow_wall, slow_reports, _cpu = _loop(slow, SLOW_SUBJECTS * SLOW_CHUNKS)
    slow_backend = sum(r.backend_s for r in slow_reports)
    load = f"{load_note()} during the run"
    fair = _fair_wait(fast)
    return {
        **fair,
        "ingest.backend_chunks_per_s": {
            "value": round(applied / (wall - model_s), 1),
            "unit": "chunks/s",
            "target": ">= 300",
            "note": f"chunks applied per second of backend time (wall minus the MemListener call, which runs "
            f"in Ray Serve in production): {SUBJECTS} subjects x {CHUNKS_PER_SUBJECT} chunks, batches of {BATCH}, "
            f"one in-process dispatcher loop on Postgres, zero-latency stand-in engine (not a model). "
            f"Including the in-process listener's prompt/parse/gate time: {applied / wall:.1f} chunks/s "
            f"({len(reports)} rounds in {wall:.2f}s); {load}",
        },
        "ingest.backend_ms_per_chunk": {
            "value": round(statistics.median(per_chunk), 3),
            "unit": "ms",
            "target": None,
            "note": "median over rounds of (round wall - MemListener call) / chunks: claim, load, apply, commit",
        },
        "ingest.backend_cpu_ms_per_chunk": {
            "value": round(backend_cpu / applied * 1000, 3),
            "unit": "ms",
            "target": None,
            "note": "CPU time of this (Django/dispatcher) process per chunk outside the MemListener call; "
            "excludes the Postgres server's CPU; less sensitive to machine load than wall time; of it, "
            f"{apply_cpu_s / applied * 1000:.2f} ms in the store's tree_apply_ops_batch, "
            f"{(backend_cpu - apply_cpu_s) / applied * 1000:.2f} ms in the dispatcher (claim, load, jobs)",
        },
        "ingest.backend_share_at_500ms": {
            "value": round(slow_backend / slow_wall, 4),
            "unit": "ratio",
            "target": "<= 0.05",
            "note": f"stand-in sleeping 500 ms per batch; {SLOW_SUBJECTS} subjects x {SLOW_CHUNKS} chunks, "
            f"{len(slow_reports)} batches of <= {BATCH}; backend {slow_backend:.2f}s of {slow_wall:.2f}s wall; {load}",
        },
        "ingest.messages_ingest_ms": {
            "value": round(statistics.median(ingest_times) * 1000, 3),
            "unit": "ms",
            "target": None,
            "note": "one messages_ingest call of 6 messages (3 pairs): lock, dedupe, append, cut a chunk, commit",
        },
    }


def run() -> dict[str, dict]:
    with scratch_db(SCRATCH_DB):
        from django.conf import settings

        settings.PERSONATREE["EVIDENCE_INDEXING"] = False  # the recall benchmark measures indexing
        return _measure()


if __name__ == "__main__":
    print_rows(run())
