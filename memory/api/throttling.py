"""Per-API-key rate limit in the shared cache; while it is down, counted per process (requests do not
each wait on a dead connection) and the shared cache retried every ``RETRY_SHARED_AFTER_S`` seconds."""

from __future__ import annotations

import logging
import threading
import time

from django.core.cache.backends.locmem import LocMemCache
from redis.exceptions import RedisError
from rest_framework.throttling import SimpleRateThrottle

from memory.models import ApiKey

log = logging.getLogger("personatree.throttle")

RETRY_SHARED_AFTER_S = 5.0
#: What Django's cache backends raise when their server is unreachable.
CACHE_ERRORS = (OSError, RedisError)

_fallback = LocMemCache("personatree-throttle-fallback", {"OPTIONS": {"MAX_ENTRIES": 100_000}})
_lock = threading.Lock()
_failed_at: float | None = None  # time.monotonic() of the last failure of the shared cache


def shared_cache_down() -> bool:
    """Whether the throttle is counting per process because the shared cache failed."""
    return _failed_at is not None


def reset_fallback() -> None:
    """Forget the per-process counters and the outage (tests)."""
    global _failed_at
    with _lock:
        _failed_at = None
    _fallback.clear()


def _skip_shared() -> bool:
    failed_at = _failed_at
    return failed_at is not None and time.monotonic() - failed_at < RETRY_SHARED_AFTER_S


def _shared_failed(exc: BaseException) -> None:
    global _failed_at
    with _lock:
        first = _failed_at is None
        _failed_at = time.monotonic()
    if first:
        log.warning(
            "rate-limit cache unreachable (%s); counting per-process until it is back", type(exc).__name__
        )


def _shared_ok() -> None:
    global _failed_at
    if _failed_at is None:
        return
    with _lock:
        was_down, _failed_at = _failed_at is not None, None
    if was_down:
        log.info("rate-limit cache reachable again; counting in the shared cache")


class ApiKeyRateThrottle(SimpleRateThrottle):
    scope = "api_key"

    def get_cache_key(self, request, view):
        key = request.auth
        if isinstance(key, ApiKey):
            ident = f"key:{key.pk}"
        else:
            # Session-authenticated or anonymous requests are limited per client address.
            ident = f"ip:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request, view) -> bool:
        if not _skip_shared():
            try:
                allowed = super().allow_request(request, view)
            except CACHE_ERRORS as exc:
                _shared_failed(exc)
            else:
                _shared_ok()
                return allowed
        self.cache = _fallback
        return super().allow_request(request, view)
