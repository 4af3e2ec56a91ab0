"""Tenant administration (keys with the ``admin`` scope): API keys and webhook endpoints.

:class:`AdminOperations` adds the plans of ``/v1/keys`` and ``/v1/webhooks`` to
:class:`~personatree_client._core.Operations` (same exchange, retries and typed errors); both
clients bind them. Raw secrets (an API key's ``key``, an endpoint's ``secret``) are in the answer
of the call that made them only: create and rotate. Those calls are not sent again after a lost
answer (a second one would mint a second key or secret).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

from personatree_client._core import Operations
from personatree_client._protocol import ApiRequest, Listing, Plan, dumps
from personatree_client.models import _dt

Scope = Literal["ingest", "read", "read_special", "write", "admin", "erase"]
EventType = Literal["version.applied", "review.decided", "subject.erased", "ingest.failed"]
WebhookId = str | uuid.UUID


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One API key of the tenant, named by its public ``prefix``. ``key`` (the raw secret) is set
    only in the answer of :meth:`create_api_key` and :meth:`rotate_api_key`."""

    prefix: str
    name: str
    scopes: tuple[str, ...]
    created_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    key: str | None = field(default=None, repr=False)

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ApiKey:
        return cls(
            prefix=data["prefix"],
            name=data["name"],
            scopes=tuple(data["scopes"]),
            created_at=_dt(data.get("created_at")),
            last_used_at=_dt(data.get("last_used_at")),
            revoked_at=_dt(data.get("revoked_at")),
            key=data.get("key"),
        )


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    """A registered webhook URL. ``secret`` (signs every delivery) is set only in the answer of
    :meth:`register_webhook` and :meth:`rotate_webhook_secret`."""

    id: uuid.UUID
    url: str
    event_types: tuple[str, ...]
    is_active: bool
    description: str
    created_at: datetime | None
    updated_at: datetime | None
    secret: str | None = field(default=None, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WebhookEndpoint:
        return cls(
            id=uuid.UUID(str(data["id"])),
            url=data["url"],
            event_types=tuple(data["event_types"]),
            is_active=bool(data["is_active"]),
            description=data.get("description") or "",
            created_at=_dt(data.get("created_at")),
            updated_at=_dt(data.get("updated_at")),
            secret=data.get("secret"),
        )


@dataclass(frozen=True, slots=True)
class DeliveryAttempt:
    number: int
    status_code: int | None
    error: str
    duration_ms: float
    created_at: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DeliveryAttempt:
        code = data.get("status_code")
        return cls(
            number=int(data["number"]),
            status_code=None if code is None else int(code),
            error=data.get("error") or "",
            duration_ms=float(data["duration_ms"]),
            created_at=_dt(data.get("created_at")),
        )


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One event sent (or being sent) to an endpoint, with every attempt."""

    event_id: uuid.UUID
    event_type: str
    status: str
    attempts: tuple[DeliveryAttempt, ...]
    created_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WebhookDelivery:
        return cls(
            event_id=uuid.UUID(str(data["event_id"])),
            event_type=data["event_type"],
            status=data["status"],
            attempts=tuple(DeliveryAttempt.from_json(a) for a in data["attempts"]),
            created_at=_dt(data.get("created_at")),
            finished_at=_dt(data.get("finished_at")),
        )


def _key_path(prefix: str, *rest: str) -> str:
    if not isinstance(prefix, str) or not prefix:
        raise ValueError("prefix must be an API key's public prefix, e.g. 'pt_live_ab12cd34'")
    return "/".join(["/v1/keys", quote(prefix, safe=""), *rest])


def _webhook_path(webhook_id: WebhookId, *rest: str) -> str:
    return "/".join(["/v1/webhooks", str(uuid.UUID(str(webhook_id))), *rest])


class AdminOperations(Operations):
    """:class:`Operations` plus the tenant administration plans (scope ``admin``)."""

    # --- API keys ---------------------------------------------------------------------------

    def api_keys(self, *, page_size: int | None = None) -> Listing[ApiKey]:
        """Every API key of the tenant, revoked ones too, oldest first (a page fetched as it is reached)."""
        return self._list("/v1/keys", page_size, "keys", ApiKey.from_json)

    def api_key(self, prefix: str) -> Plan[ApiKey]:
        """One API key by its prefix (another tenant's, or none: NotFoundError)."""
        return self._call(ApiRequest("GET", _key_path(prefix)), ApiKey.from_json)

    def create_api_key(self, scopes: Iterable[Scope], *, name: str = "") -> Plan[ApiKey]:
        """A new key with ``scopes`` (each held by the calling key, else PermissionDeniedError);
        its raw ``key`` is in this answer only."""
        body = dumps({"name": name, "scopes": sorted(set(scopes))})
        return self._call(ApiRequest("POST", "/v1/keys", content=body, idempotent=False), ApiKey.from_json)

    def rotate_api_key(self, prefix: str) -> Plan[ApiKey]:
        """A new key with the same name and scopes (raw ``key`` in this answer only); the old one
        is revoked. A revoked key: ConflictError (``key_revoked``)."""
        request = ApiRequest("POST", _key_path(prefix, "rotate"), idempotent=False)
        return self._call(request, ApiKey.from_json)

    def revoke_api_key(self, prefix: str) -> Plan[ApiKey]:
        """Revoke a key (idempotent; it stays listed with ``revoked_at``)."""
        return self._call(ApiRequest("DELETE", _key_path(prefix)), ApiKey.from_json)

    # --- webhooks ---------------------------------------------------------------------------

    def webhooks(self, *, page_size: int | None = None) -> Listing[WebhookEndpoint]:
        """Every webhook endpoint of the tenant, oldest first (a page fetched as it is reached)."""
        return self._list("/v1/webhooks", page_size, "webhooks", WebhookEndpoint.from_json)

    def webhook(self, webhook_id: WebhookId) -> Plan[WebhookEndpoint]:
        """One endpoint (another tenant's, or none: NotFoundError)."""
        return self._call(ApiRequest("GET", _webhook_path(webhook_id)), WebhookEndpoint.from_json)

    def register_webhook(
        self, url: str, event_types: Iterable[EventType], *, is_active: bool = True, description: str = ""
    ) -> Plan[WebhookEndpoint]:
        """Register ``url`` for ``event_types``; the signing ``secret`` is in this answer only.
        A URL that is not http(s) or not public: BadRequestError (``invalid_url``)."""
        body = {"url": url, "event_types": list(event_types), "is_active": is_active}
        body["description"] = description
        request = ApiRequest("POST", "/v1/webhooks", content=dumps(body), idempotent=False)
        return self._call(request, WebhookEndpoint.from_json)

    def update_webhook(
        self,
        webhook_id: WebhookId,
        *,
        url: str | None = None,
        event_types: Iterable[EventType] | None = None,
        is_active: bool | None = None,
        description: str | None = None,
    ) -> Plan[WebhookEndpoint]:
        """Change the given fields of an endpoint (the others stay)."""
        changes: dict[str, Any] = {"url": url, "is_active": is_active, "description": description}
        if event_types is not None:
            changes["event_types"] = list(event_types)
        body = dumps({k: v for k, v in changes.items() if v is not None})
        request = ApiRequest("PATCH", _webhook_path(webhook_id), content=body)
        return self._call(request, WebhookEndpoint.from_json)

    def rotate_webhook_secret(self, webhook_id: WebhookId) -> Plan[WebhookEndpoint]:
        """A new signing secret for the endpoint (in this answer only); the old one stops at once."""
        request = ApiRequest("POST", _webhook_path(webhook_id, "rotate-secret"), idempotent=False)
        return self._call(request, WebhookEndpoint.from_json)

    def delete_webhook(self, webhook_id: WebhookId) -> Plan[None]:
        """Delete an endpoint and its delivery log. Not sent again after a lost answer (a second
        delete answers NotFoundError)."""
        yield from self._exchange(ApiRequest("DELETE", _webhook_path(webhook_id), idempotent=False))
        return None

    def webhook_deliveries(
        self, webhook_id: WebhookId, *, page_size: int | None = None
    ) -> Listing[WebhookDelivery]:
        """The endpoint's deliveries, newest first, each with its attempts (a page fetched as it
        is reached)."""
        return self._list(
            _webhook_path(webhook_id, "deliveries"), page_size, "deliveries", WebhookDelivery.from_json
        )
