"""The only write path of the memory store: keyword-only ``<entity>_<action>`` functions, one
transaction each, signals after commit; bad input raises the exceptions below (mapped to HTTP by
``memory.api.errors``).
"""

from __future__ import annotations

import uuid


class ServiceError(Exception):
    """A request the store refuses, with a stable machine-readable code."""

    code = "invalid"
    http_status = 400

    def __init__(self, message: str, *, field: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        if code:
            self.code = code


class NotFoundError(ServiceError):
    code = "not_found"
    http_status = 404


class VersionConflict(ServiceError):
    """``base_version`` is stale: re-read the head (``current_version``) and retry."""

    code = "version_conflict"
    http_status = 409

    def __init__(self, current_version: int, base_version: int | None = None):
        self.current_version = current_version
        self.base_version = base_version
        super().__init__(
            f"Base version {base_version} is stale; the subject is at version {current_version}.",
            field="base_version",
        )


def new_error_id() -> str:
    """A short id that ties a generic error shown to a client to the log line holding its cause."""
    return uuid.uuid4().hex[:16]
