"""API-key authentication (``Authorization: Bearer pt_live_xxxxxxxx_<secret>``; only the key's
SHA-256 is stored) and the scope permission."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions

from memory.models import ApiKey

#: How stale ``ApiKey.last_used_at`` may be: it is written at most once per this span per key.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def mark_used(key: ApiKey) -> None:
    """Record that ``key`` was used now, unless it was within the last minute: one conditional
    UPDATE, so a busy key costs one statement a minute however many requests run at once."""
    now = timezone.now()
    stale = now - LAST_USED_RESOLUTION
    if key.last_used_at is not None and key.last_used_at > stale:
        return
    ApiKey.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale), pk=key.pk).update(
        last_used_at=now
    )
    key.last_used_at = now


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """What ``request.user`` is for API calls: the key's tenant, never a Django user."""

    api_key: ApiKey

    is_authenticated = True
    is_anonymous = False
    is_staff = False
    is_superuser = False

    def __str__(self) -> str:
        return f"api_key:{self.api_key.prefix}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: expected 'Bearer <api key>'."
            )
        try:
            raw = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("API key contains invalid characters.") from exc
        # hashed is unique: no ORDER BY (first() would sort by ApiKey's default ordering, a second join)
        found = (
            ApiKey.objects.select_related("tenant")
            .filter(hashed=ApiKey.hash_key(raw), revoked_at__isnull=True, tenant__is_active=True)
            .order_by()[:1]
        )
        key = next(iter(found), None)
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        mark_used(key)
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="api"'


class HasScope(permissions.BasePermission):
    """Grants access when the key holds every scope in ``view.required_scopes``: a tuple, or a dict
    by HTTP method. HEAD needs GET's scopes; OPTIONS is answered only to a key that may call one
    of the endpoint's methods. A served method the dict does not list is a configuration error,
    never an open door."""

    message = "This API key lacks a required scope."

    def has_permission(self, request, view) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return False
        if request.method.upper() == "OPTIONS":
            choices = [
                required_scopes_for(view, m) for m in view.allowed_methods if m not in ("HEAD", "OPTIONS")
            ] or [()]
        else:
            choices = [required_scopes_for(view, request.method)]
        if any(key.has_scopes(required) for required in choices):
            return True
        fewest: tuple[str, ...] = min(choices, key=len)
        missing = sorted(set(fewest) - set(key.scopes or ()))
        self.message = f"This API key lacks scope(s): {', '.join(missing)}."
        return False


def required_scopes_for(view, method: str) -> tuple[str, ...]:
    required = getattr(view, "required_scopes", None)
    if required is None:
        raise ImproperlyConfigured(f"{type(view).__name__} must declare required_scopes (use () for none).")
    method = method.upper()
    if method == "HEAD":
        method = "GET"
    if isinstance(required, dict):
        if method in required:
            return tuple(required[method])
        served = method.lower() in getattr(view, "http_method_names", ()) and hasattr(view, method.lower())
        if served:  # a handler inherited but cut off by http_method_names is not served: a 405
            raise ImproperlyConfigured(f"{type(view).__name__}.required_scopes does not list {method}.")
        return ()  # a method the view does not serve: the 405 comes next
    return tuple(required)
