"""``manage.py backfill PATH --tenant NAME --format jsonl|locomo|personamem [...]``: resumable bulk
import by :mod:`memory.backfill.service` (formats and resume guarantees: docs/BACKFILL.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.backfill import FORMATS, BackfillFormatError, source_open
from memory.backfill.service import backfill_run
from memory.models import Tenant


class Command(BaseCommand):
    help = "Import whole conversation histories (JSONL, LoCoMo, PersonaMem); safe to kill and re-run."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="Source file.")
        parser.add_argument("--tenant", required=True, help="Tenant name (create it with create_tenant).")
        parser.add_argument("--format", choices=FORMATS, default="jsonl")
        parser.add_argument(
            "--speaker",
            action="append",
            default=None,
            help="LoCoMo: build the tree of this speaker (name, or a/b); repeatable; default both.",
        )
        parser.add_argument("--limit", type=int, default=None, help="Import at most this many subjects.")
        parser.add_argument("--dry-run", action="store_true", help="Read and validate only; write nothing.")
        parser.add_argument(
            "--max-chunks-per-s", type=float, default=None, help="Rate limit (chunks per second)."
        )
        parser.add_argument(
            "--process",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="Also run the MemListener here, synchronously (default: leave chunks to the workers).",
        )
        parser.add_argument(
            "--source-id", default=None, help="Label for derived idempotency keys (default: the file name)."
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")
        parser.add_argument(
            "--no-reclaim",
            action="store_true",
            help="With --process: leave chunks a killed earlier run had in flight until their lease expires.",
        )
        parser.add_argument(
            "--no-index",
            action="store_true",
            help="With --process: do not queue evidence indexing (tests, benchmarks).",
        )
        parser.add_argument(
            "--no-wait",
            action="store_true",
            help="Without --process: return once the chunks are enqueued (default: follow the workers "
            "until the run's chunks are applied, with rate and ETA).",
        )
        parser.add_argument(
            "--wait-timeout",
            type=float,
            default=None,
            help="Stop following the workers after this many seconds.",
        )

    def handle(self, *args, **opts):
        path: Path = opts["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        if opts["speaker"] and opts["format"] != "locomo":
            raise CommandError("--speaker applies to --format locomo only")
        if opts["limit"] is not None and opts["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        if opts["wait_timeout"] is not None and opts["wait_timeout"] <= 0:
            raise CommandError("--wait-timeout must be positive")
        tenant = Tenant.objects.filter(name=opts["tenant"]).first()
        if tenant is None:
            raise CommandError(f"unknown tenant {opts['tenant']!r} (create it: manage.py create_tenant)")
        source = source_open(path, format=opts["format"], speakers=opts["speaker"], label=opts["source_id"])
        try:
            total = len(source)
            report = backfill_run(
                tenant=tenant,
                histories=source,
                total=total,
                dry_run=opts["dry_run"],
                process=opts["process"],
                limit=opts["limit"],
                max_chunks_per_s=opts["max_chunks_per_s"],
                progress=not opts["no_progress"],
                index=not opts["no_index"],
                reclaim=not opts["no_reclaim"],
                wait=not (opts["no_wait"] or opts["dry_run"]),
                wait_timeout_s=opts["wait_timeout"],
            )
        except BackfillFormatError as exc:
            raise CommandError(
                f"{exc} -- fix the input and re-run: what was imported stays, nothing repeats"
            ) from exc
        line = [
            f"{'would import' if report.dry_run else 'imported'} {report.subjects} subjects, {report.messages} "
            f"messages ({report.new_messages} new, {report.duplicates} already present), {report.chunks} chunks"
        ]
        if opts["process"]:
            line.append(f", applied {report.applied} ({report.failed} failed, {report.versions} versions)")
        if report.reclaimed:
            line.append(f", took back {report.reclaimed} in-flight chunks of an earlier run")
        self.stdout.write("".join(line) + f" in {report.elapsed_s:.1f}s")
        if report.model is not None and not opts["process"]:
            m = report.model
            self.stdout.write(
                f"model phase: {m.applied}/{m.total} chunks applied, {m.failed} failed, {m.remaining} pending"
                + (" (stopped waiting: --wait-timeout; the workers go on)" if report.wait_timed_out else "")
            )
        if report.wait_skipped:
            self.stdout.write(f"not waiting for the model phase: {report.wait_skipped}")
