"""Per-API-key rate limit (rate from ``REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']['api_key']``)."""

from __future__ import annotations

from rest_framework.throttling import SimpleRateThrottle

from memory.models import ApiKey


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
