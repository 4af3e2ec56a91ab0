"""The one record of an incoming message, shared by the ingest API and the backfill readers.

Plain data (no Django), so backfill readers can build it without touching the database; the
ingest service validates and stores it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class IncomingMessage:
    role: str
    content: str
    idempotency_key: str
    ts: datetime | None = None
    session_id: str = ""
