"""API-key authentication and scope permission.

Clients send ``Authorization: Bearer pt_live_xxxxxxxx_<secret>``. Only the
SHA-256 of a key is stored; lookup is one indexed query on that hash.
``request.user`` becomes an :class:`ApiKeyPrincipal` and ``request.auth`` the
:class:`~memory.models.ApiKey` (with its tenant loaded).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured
from rest_framework import authentication, exceptions, permissions

from memory.models import ApiKey, Tenant


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """What ``request.user`` is for API calls: the key's tenant, never a Django user."""

    api_key: ApiKey

    is_authenticated = True
    is_anonymous = False
    is_staff = False
    is_superuser = False

    @property
    def tenant(self) -> Tenant:
        return self.api_key.tenant

    @property
    def pk(self) -> int:
        return self.api_key.pk

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
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="api"'


class HasScope(permissions.BasePermission):
    """Grants access when the key holds every scope in ``view.required_scopes``.

    ``required_scopes`` may be a tuple (every method) or a dict keyed by HTTP
    method (``{"GET": ("read",), "DELETE": ("erase",)}``).
    """

    message = "This API key lacks a required scope."

    def has_permission(self, request, view) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return False
        required = required_scopes_for(view, request.method)
        if not key.has_scopes(required):
            missing = sorted(set(required) - set(key.scopes or ()))
            self.message = f"This API key lacks scope(s): {', '.join(missing)}."
            return False
        return True


def required_scopes_for(view, method: str) -> tuple[str, ...]:
    required = getattr(view, "required_scopes", None)
    if required is None:
        raise ImproperlyConfigured(f"{type(view).__name__} must declare required_scopes (use () for none).")
    if isinstance(required, dict):
        required = required.get(method.upper(), required.get("*", ()))
    return tuple(required)
