"""Request fields shared by several endpoints."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import UTC

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memory.api.openapi import EXTERNAL_ID
from memory.services import NotFoundError, ServiceError

#: Tree version numbers are stored in a PositiveIntegerField (PostgreSQL ``integer``).
MAX_VERSION = 2**31 - 1


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 0, "maximum": MAX_VERSION},
            {"type": "string", "format": "date-time"},
        ],
        "description": "Tree version number, or an ISO 8601 datetime (naive = UTC).",
    }
)
class AsOfField(serializers.Field):
    """A version number (0..2**31-1) or an ISO 8601 datetime (naive = UTC); anything else (month 13,
    ``²``, a number too large, a datetime out of range once in UTC) is a 400 naming the field."""

    default_error_messages = {
        "invalid": "as_of must be a version number or an ISO 8601 datetime.",
        "version_range": f"as_of as a version number must be between 0 and {MAX_VERSION}.",
        "datetime_range": "as_of is a datetime outside the supported range.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, int):
            return self._version(data)
        if isinstance(data, str):
            raw = data.strip()
            if raw.isascii() and raw.isdigit():
                # The length check keeps int() away from Python's 4300-digit conversion limit.
                return self._version(int(raw) if len(raw) <= len(str(MAX_VERSION)) else MAX_VERSION + 1)
            try:
                parsed = parse_datetime(raw)
            except ValueError:  # well-formed but not a date: 2024-13-01, 25:00, offset out of range
                parsed = None
            if parsed is not None:
                if timezone.is_naive(parsed):
                    return parsed.replace(tzinfo=UTC)
                try:
                    return parsed.astimezone(UTC)
                except OverflowError:
                    self.fail("datetime_range")
        self.fail("invalid")

    def _version(self, number: int) -> int:
        if not 0 <= number <= MAX_VERSION:
            self.fail("version_range")
        return number

    def to_representation(self, value):
        return value


@contextmanager
def as_of_found():
    """Inside: reading a subject ``as_of`` a version it does not have is a 404 ``not_found``
    naming ``as_of`` (the selectors raise ``LookupError``, the query service a 400 ServiceError)."""
    try:
        yield
    except LookupError as exc:
        raise NotFoundError(str(exc), field="as_of") from exc
    except ServiceError as exc:
        if exc.code == "not_found" and exc.field == "as_of" and exc.http_status != 404:
            raise NotFoundError(exc.message, field="as_of") from exc
        raise


class TextField(serializers.CharField):
    """A JSON string and nothing else: a number or a boolean is a 400, not its text."""

    default_error_messages = {"not_a_string": "Must be a JSON string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


@extend_schema_field(EXTERNAL_ID)
class ExternalIdField(serializers.CharField):
    """A subject id in a body: the schema states what ``external_id_validate`` checks."""

    def __init__(self, **kwargs):
        super().__init__(max_length=255, trim_whitespace=False, **kwargs)
