"""The API's one body parser: JSON within the byte limit (else 413; 0 = no limit), nesting the decoder
can handle, and no unpaired surrogate (neither PostgreSQL nor UTF-8 can store one: 400 invalid_text)."""

from __future__ import annotations

import json
import re

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from memory import conf
from memory.services import ServiceError
from memory.services.ingest import PayloadTooLarge

SURROGATE = re.compile("[\ud800-\udfff]")


def max_request_bytes() -> int:
    return conf.get().ingest.max_request_bytes


def too_large(size: int | None, limit: int, what: str = "request body") -> PayloadTooLarge:
    """The 413 for a body of ``size`` bytes (None: not known) over ``limit``."""
    told = f"{size} bytes" if size else "over the limit"
    return PayloadTooLarge(f"The {what} is {told}; at most {limit} bytes are allowed.")


def read_within(stream, limit: int, what: str = "request body") -> bytes:
    """The body's bytes (DRF calls no parser for an empty body); a 413 when there are more than
    ``limit`` (0: no limit)."""
    raw = stream.read(limit + 1) if limit > 0 else stream.read()
    if limit > 0 and len(raw) > limit:
        raise too_large(None, limit, what)
    return raw


def declared_length(request) -> int:
    """The request's ``Content-Length`` (0 when absent or not a number)."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
    except (TypeError, ValueError):
        return 0


def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def unpaired_surrogate_path(data) -> str | None:
    """Where the first string (value or key) holding an unpaired surrogate is, else None: a path like
    the API's error fields (``messages[2].content``, a bad key backslash-escaped; ``""``: the whole body)."""
    stack = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if SURROGATE.search(value):
                return path
        elif isinstance(value, dict):
            for key in value:
                if SURROGATE.search(key):
                    return _join(path, key.encode("utf-8", "backslashreplace").decode("utf-8"))
            stack.extend((_join(path, k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((_join(path, i), v) for i, v in reversed(list(enumerate(value))))
    return None


class ApiJSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = max_request_bytes()
        declared = declared_length((parser_context or {}).get("request"))
        if limit > 0 and declared > limit:
            raise too_large(declared, limit)
        raw = read_within(stream, limit)
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        try:
            data = json.loads(text, parse_constant=parsers.json.strict_constant if self.strict else None)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        except RecursionError as exc:
            raise ParseError("JSON parse error - the body is nested too deeply.") from exc
        where = unpaired_surrogate_path(data)
        if where is not None:
            raise ServiceError(
                "is not valid Unicode text (unpaired surrogate)."
                if not where
                else f"{where} is not valid Unicode text (unpaired surrogate).",
                field=where or None,
                code="invalid_text",
            )
        return data
