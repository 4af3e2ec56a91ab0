"""The chaos soak (issue 15): ``python -m tests.soak.run [--short] [--results bench/results/latest.json]``.

``make soak`` runs the full soak (2,000 chunks: 4 tenants x 50 subjects x 10 chunks; >= 100
faults) and merges its ``reliability.*`` figures into ``bench/results/latest.json``; the short
one (200 chunks, 6 faults) runs in ``make test`` through ``tests/soak/test_soak_short.py``.

Everything is private and on loopback: a ``redis-server`` (the broker, no persistence), a
PostgreSQL cluster made with ``initdb`` and run with ``pg_ctl`` in a temporary directory, the
stand-in MemListener HTTP server (``tests/workers/listener_server.py``) and two Celery worker
processes (one pool process each; the first runs the beat that sweeps every second). Nothing of
the machine's shared PostgreSQL or Redis is stopped. Without ``initdb``/``pg_ctl`` the soak's
database is a temporary one on the server ``--fallback-database-url`` names (dropped at the end)
and the ``postgres_restart`` fault is skipped, with the reason in the output.

Evidence indexing (Milvus) is **off** in the soak: Milvus Lite is one process per file, so the
two workers cannot share one; a Milvus outage is therefore not injected (``skipped`` says so).

Exit status 0 when nothing was lost, double-applied or stuck and every head equals its replay.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHORT = {"tenants": 4, "subjects_per_tenant": 10, "calls": 5, "faults": 6}
FULL = {"tenants": 4, "subjects_per_tenant": 50, "calls": 10, "faults": 100}
MILVUS_SKIPPED = (
    "evidence indexing is off in the soak (Milvus Lite is one process per file; two workers cannot share it)"
)


def _log_to(path: Path):
    started = time.monotonic()

    def log(line: str) -> None:
        stamped = f"[{time.monotonic() - started:7.1f}s] {line}"
        with path.open("a") as f:
            f.write(stamped + "\n")
        if not line.startswith(("schedule", "fault {")):
            print(stamped, flush=True)

    return log


def _log_records_to(path: Path) -> None:
    import logging

    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root.addHandler(handler)


def _create_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')


def _drop_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--short", action="store_true", help="the short soak of make test")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--faults", type=int, help="override the number of faults")
    parser.add_argument(
        "--latency-ms", type=float, default=150.0, help="stand-in MemListener sleep per batch"
    )
    parser.add_argument("--results", type=Path, help="merge reliability.* into this bench JSON")
    parser.add_argument("--json", type=Path, help="write the full report here")
    parser.add_argument(
        "--fallback-database-url",
        default=os.environ.get(
            "PERSONATREE_SOAK_FALLBACK_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"
        ),
        help="server for a temporary database when initdb/pg_ctl are missing (never restarted)",
    )
    args = parser.parse_args(argv)
    size = dict(SHORT if args.short else FULL)
    if args.faults is not None:
        size["faults"] = args.faults
    workdir = Path(tempfile.mkdtemp(prefix="pt-soak-"))
    log = _log_to(workdir / "soak.log")
    load_before = _load()
    log(f"chaos soak {'short' if args.short else 'full'} {size}, workdir {workdir}, load {load_before}")

    sys.path.insert(0, str(ROOT))
    from tests.workers.processes import (
        CeleryWorker,
        PostgresServer,
        RedisServer,
        StandinListenerServer,
    )

    skipped = {"milvus_outage": MILVUS_SKIPPED}
    kinds = ("worker_kill", "redis_restart", "postgres_restart", "listener_stop")
    postgres = None
    fallback_db = None
    redis = RedisServer(workdir).start()
    listener = None
    workers: list = []
    try:
        reason = PostgresServer.unavailable_reason()
        if reason is None:
            postgres = PostgresServer().init().start()
            _create_database(postgres.url(), "soak")
            database_url = postgres.url("soak")
        else:
            skipped["postgres_restart"] = f"skipped: {reason}"
            kinds = tuple(k for k in kinds if k != "postgres_restart")
            fallback_db = f"pt_soak_{uuid.uuid4().hex[:10]}"
            _create_database(args.fallback_database_url, fallback_db)
            database_url = args.fallback_database_url.rsplit("/", 1)[0] + f"/{fallback_db}"
            log(f"postgres_restart skipped: {reason}; database {fallback_db} on the fallback server")
        os.environ.update(
            {
                "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
                "DATABASE_URL": database_url,
                "CELERY_BROKER_URL": redis.url,
                "CELERY_TASK_ALWAYS_EAGER": "false",
                "PERSONATREE_EVIDENCE_INDEXING": "false",
            }
        )
        import django

        django.setup()
        _log_records_to(workdir / "driver.log")  # the broker's and database's outages are expected here
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        log("database migrated")
        listener = StandinListenerServer(workdir, latency_ms=args.latency_ms).start()
        workers = [
            CeleryWorker(
                broker_url=redis.url,
                listener_url=listener.url,
                workdir=workdir,
                concurrency=1,
                database_url=database_url,
                beat=i == 0,
            )
            for i in range(2)
        ]
        for worker in workers:
            worker.start(wait=False)
        for worker in workers:
            worker.wait_ready()
        log(
            f"services up: redis, {'private postgres' if postgres else fallback_db}, stand-in listener, 2 celery workers"
        )

        from tests.soak.chaos import Services, soak

        report = soak(
            services=Services(workers=workers, redis=redis, listener=listener, postgres=postgres),
            tenants=size["tenants"],
            subjects_per_tenant=size["subjects_per_tenant"],
            calls=size["calls"],
            faults=size["faults"],
            seed=args.seed,
            kinds=kinds,
            log=log,
        )
    finally:
        for worker in workers:
            worker.stop()
        if listener is not None:
            listener.stop()
        redis.stop()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:
            pass
        if postgres is not None:
            postgres.destroy()
        if fallback_db is not None:
            _drop_database(args.fallback_database_url, fallback_db)

    report.update(
        short=args.short,
        skipped=skipped,
        load_before=load_before,
        load_after=_load(),
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        latency_ms=args.latency_ms,
        size=size,
    )
    report["worker_logs"] = worker_log_evidence(workdir)
    ok = not (report["lost"] or report["double_applied"] or report["stuck"] or report["head_mismatch"])
    _print(report, log)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.results:
        merge_results(args.results, report)
    if ok:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        log(f"FAILED; logs kept in {workdir}")
    return 0 if ok else 1


EVIDENCE = {  # what the workers' logs say the faults did (lines counted over every worker log)
    "outage_rounds": "released without counting an attempt",
    "task_retries": " retry: Retry in ",
    "database_errors": "OperationalError",
    "replayed_applies": "was already applied",
    "broker_reconnects": "Connection to broker lost",
}


def worker_log_evidence(workdir: Path) -> dict[str, int]:
    text = "\n".join(p.read_text(errors="replace") for p in sorted(workdir.glob("worker-*.log")))
    return {name: text.count(needle) for name, needle in EVIDENCE.items()}


def _print(report: dict, log) -> None:
    for key in (
        "faults_injected",
        "chunks",
        "lost",
        "double_applied",
        "stuck",
        "quarantined",
        "head_mismatch",
        "wall_s",
    ):
        log(f"reliability.{key} = {report[key]}")
    log(f"faults by kind: {report['faults_by_kind']}; skipped: {report['skipped']}")
    log(f"faults injected while a batch was in flight: {report['faults_on_work_in_flight']}")
    log(f"workers that exited by themselves (started again): {len(report['worker_crashes'])}")
    for crash in report["worker_crashes"]:
        log(f"  {crash}")
    log(
        f"chunks claimed more than once: {report['chunks_claimed_again']} (max attempts "
        f"{report['max_attempts']}); with a last_error: {report['chunks_with_last_error']}; "
        f"ingest calls retried: {report['ingest_retries']}; anomalies: {report['ingest_anomalies']}"
    )
    log(f"worker logs: {report['worker_logs']}")
    for problem in report["problems"]:
        log(f"  {problem}")


def merge_results(path: Path, report: dict) -> None:
    """Merge ``reliability.*`` rows (bench/run.py's row format) into ``path``; other metrics stay."""
    by_kind = ", ".join(f"{k} {v}" for k, v in sorted(report["faults_by_kind"].items()))
    where = (
        f"{report['size']['tenants']} tenants x {report['size']['subjects_per_tenant']} subjects x "
        f"{report['size']['calls']} chunks, stand-in {report['latency_ms']:g} ms/batch, 2 Celery workers; "
        f"{report['date']}, load average {report['load_before']} before, {report['load_after']} after, 2 cores"
    )
    rows = {
        "reliability.faults_injected": (report["faults_injected"], "faults", ">= 100", f"{by_kind}; {report['faults_on_work_in_flight']} while a batch was in flight; seed {report['seed']}; {where}"),
        "reliability.chunks": (report["chunks"], "chunks", ">= 2000", f"{report['applied']} applied, {report['versions']} versions; {where}"),
        "reliability.lost": (report["lost"], "chunks", "0", "accepted and never applied, or a message not stored"),
        "reliability.double_applied": (report["double_applied"], "chunks", "0", "more than one apply or version per chunk, or a message stored twice"),
        "reliability.stuck": (report["stuck"], "chunks", "0", "not applied once every fault healed (a poison chunk not failed counts)"),
        "reliability.quarantined": (report["quarantined"], "chunks", f"= {report['poison_expected']}", "poison chunks (each crashes its whole MemListener batch) failed alone, the rest of their batches applied"),
        "reliability.head_mismatch": (report["head_mismatch"], "subjects", "0", "head or a version differs from the engine's replay of the op log"),
        "reliability.soak_wall_s": (report["wall_s"], "s", None, f"faults {report['faults_s']} s, drain {report['drain_s']} s"),
        "reliability.worker_crashes": (len(report["worker_crashes"]), "exits", None, "Celery workers that exited by themselves during the soak (started again, as a supervisor would)"),
    }  # fmt: skip
    data = json.loads(path.read_text()) if path.exists() else {}
    for name, (value, unit, target, note) in rows.items():
        data[name] = {"value": value, "unit": unit, "target": target, "note": note}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
