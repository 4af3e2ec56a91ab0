"""Bulk import of whole histories (``manage.py backfill``): readers turn a file into
:class:`SubjectHistory` records, :mod:`memory.backfill.service` writes them, resumably (docs/BACKFILL.md).
"""

from __future__ import annotations

from pathlib import Path

from memory.backfill.jsonl import JsonlSource
from memory.backfill.locomo import LocomoSource
from memory.backfill.personamem import PersonamemSource
from memory.backfill.records import BackfillFormatError, BackfillSource

FORMATS = ("jsonl", "locomo", "personamem")


def source_open(
    path: str | Path, *, format: str, speakers: list[str] | None = None, label: str | None = None
) -> BackfillSource:
    """The reader for ``format``; ``speakers`` applies to LoCoMo only."""
    if format == "jsonl":
        return JsonlSource(path, label=label)
    if format == "locomo":
        return LocomoSource(path, speakers=speakers, label=label)
    if format == "personamem":
        return PersonamemSource(path, label=label)
    raise ValueError(f"unknown backfill format {format!r}; use one of {', '.join(FORMATS)}")


__all__ = ["FORMATS", "BackfillFormatError", "JsonlSource", "LocomoSource", "PersonamemSource", "source_open"]
