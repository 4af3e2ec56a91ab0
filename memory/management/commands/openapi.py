"""``manage.py openapi [--check]``: write the OpenAPI document served at ``/api/schema/`` to
``docs/openapi.json``, rendered the same way every time so an API change reads as a diff."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from drf_spectacular.generators import SchemaGenerator

REGENERATE = "make openapi  (or: .venv/bin/python manage.py openapi)"


def document_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "openapi.json"


def document_text() -> str:
    """The OpenAPI document the code generates, as the committed file holds it."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def document_diff(committed: str, generated: str, *, path: str = "docs/openapi.json") -> str:
    """The unified diff from the committed document to the generated one ("" when equal)."""
    return "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            generated.splitlines(keepends=True),
            fromfile=f"{path} (committed)",
            tofile=f"{path} (generated from the code)",
        )
    )


class Command(BaseCommand):
    help = "Write the OpenAPI document to docs/openapi.json, or --check that it is up to date."

    def add_arguments(self, parser):
        parser.add_argument(
            "--check", action="store_true", help="Write nothing; exit 1 with the diff if stale."
        )
        parser.add_argument("--file", type=Path, default=None, help="Another path than docs/openapi.json.")

    def handle(self, *args, check: bool = False, file: Path | None = None, **options):
        path = file or document_path()
        generated = document_text()
        if check:
            committed = path.read_text(encoding="utf-8") if path.exists() else ""
            diff = document_diff(committed, generated, path=str(path))
            if diff:
                self.stdout.write(diff)
                raise CommandError(f"{path} is not what the code generates; regenerate it: {REGENERATE}")
            self.stdout.write(f"{path} is up to date.")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(generated, encoding="utf-8")
        self.stdout.write(f"wrote {path}")
