"""``manage.py evidence_migrate [--drop]``: copy the layout-1 evidence collection into layout 2.

Thin: the copy is :func:`memory.recall.layout.migrate_layout1` (why the layout changed and what
moves: that module's docstring, docs/DEPLOY.md "Milvus"). Safe to re-run: rows are upserted under
their primary keys.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.recall.index import IndexUnavailable


class Command(BaseCommand):
    help = "Copy the evidence rows of the old single collection (layout 1) into the layout-2 collections."

    def add_arguments(self, parser):
        parser.add_argument(
            "--drop", action="store_true", help="Drop the layout-1 collection once every row is copied."
        )
        parser.add_argument("--batch-size", type=int, default=1000, help="Rows read and written per request.")

    def handle(self, *args, **opts):
        from memory.recall import runtime

        if opts["batch_size"] < 1:
            raise CommandError("--batch-size must be >= 1")
        index = runtime.configured_index()
        try:
            copied = index.migrate_layout1(drop=opts["drop"], batch_size=opts["batch_size"])
        except IndexUnavailable as exc:
            raise CommandError(f"evidence migration failed: {exc}") from exc
        where = ", ".join(index.collection_names()[:2]) + (", ..." if index.shards > 2 else "")
        dropped = "; layout-1 collection dropped" if opts["drop"] else ""
        self.stdout.write(f"copied {copied} evidence rows from {index.collection!r} into {where}{dropped}")
