"""The one place where an API request's tenant is resolved and enforced.

Every API view subclasses :class:`TenantScopedView`: it authenticates the key, checks
``required_scopes``, exposes ``self.tenant`` and reads the tenant's subjects, API keys and webhook
endpoints only through its methods (another tenant's is a 404, like a missing one). Once the key is
known, the tenant id and the hashed subject are bound to the request's log lines. Bodies and answers
are JSON only: DRF's browsable HTML renderer is off (``Accept: text/html`` alone is a 406).
"""

from __future__ import annotations

import re

from django.db.models import QuerySet
from rest_framework import exceptions, serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from memory import selectors
from memory.api.auth import ApiKeyAuthentication, HasScope
from memory.api.openapi import ProblemAutoSchema
from memory.api.parsers import ApiJSONParser
from memory.models import ApiKey, Subject, Tenant, WebhookEndpoint
from memory.services.ingest import external_id_validate
from personatree_site.ops import logging as logs

#: What a key's public prefix looks like (:meth:`ApiKey.generate`); anything else names no key.
KEY_PREFIX = re.compile(rf"{re.escape(ApiKey.PREFIX)}[0-9a-f]{{8}}")
#: What no stored text holds: NUL, and a surrogate code point (PostgreSQL text is UTF-8).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class TenantScopedView(APIView):
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsAuthenticated, HasScope]
    parser_classes = [ApiJSONParser]
    renderer_classes = [JSONRenderer]
    #: Scopes the key must hold: a tuple, or a dict keyed by HTTP method. Subclasses must set it.
    required_scopes: tuple[str, ...] | dict[str, tuple[str, ...]] | None = None
    #: The OpenAPI description adds the problem responses (400/401/403/404/413/429) it can answer.
    schema = ProblemAutoSchema()

    def initial(self, request, *args, **kwargs) -> None:
        """Authentication and scopes, then: a name in the URL holding NUL or a lone surrogate names
        nothing that can be stored (PostgreSQL refuses both), so it is a 404 before any query runs
        (a subject's id keeps its 400 from :meth:`get_subject`, a leaf path its unknown_leaf 404)."""
        super().initial(request, *args, **kwargs)
        for name, value in kwargs.items():
            if (
                name not in ("external_id", "leaf_path")
                and isinstance(value, str)
                and UNSTORABLE.search(value)
            ):
                raise exceptions.NotFound("Not found.")

    def perform_authentication(self, request) -> None:
        """Authenticate, then bind the tenant and the hashed subject to the request's log lines."""
        super().perform_authentication(request)
        key = request.auth
        if isinstance(key, ApiKey):
            external_id = self.kwargs.get("external_id")
            logs.bind(
                tenant_id=key.tenant_id,
                subject=logs.subject_hash(key.tenant_id, external_id) if external_id is not None else None,
            )

    @property
    def api_key(self) -> ApiKey:
        """The request's key (:class:`HasScope` admits no request without one)."""
        return self.request.auth

    @property
    def tenant(self) -> Tenant:
        return self.api_key.tenant

    def valid_body(self, serializer: type[serializers.Serializer]) -> dict:
        """The request body as ``serializer`` validates it (a 400 names every field error)."""
        data = serializer(data=self.request.data)
        data.is_valid(raise_exception=True)
        return data.validated_data

    def has_scope(self, scope: str) -> bool:
        return self.api_key.has_scopes((scope,))

    def tiers(self) -> tuple[str, ...]:
        """The leaf tiers this key may read (the special tier needs ``read_special``)."""
        return selectors.ALL_TIERS if self.has_scope("read_special") else selectors.PUBLIC_TIERS

    def subjects(self) -> QuerySet[Subject]:
        """The tenant's subjects (the one list of them the API reads)."""
        return Subject.objects.filter(tenant=self.tenant)

    def api_keys(self) -> QuerySet[ApiKey]:
        """The tenant's API keys, revoked ones included."""
        return ApiKey.objects.filter(tenant=self.tenant)

    def get_api_key(self, prefix: str) -> ApiKey:
        """The tenant's key named by its public prefix; 404 alike for a missing and a foreign key."""
        key = (
            self.api_keys().filter(prefix=prefix).order_by().first() if KEY_PREFIX.fullmatch(prefix) else None
        )
        if key is None:
            raise exceptions.NotFound("API key not found.")
        return key

    def webhook_endpoints(self) -> QuerySet[WebhookEndpoint]:
        return WebhookEndpoint.objects.filter(tenant=self.tenant)

    def get_webhook_endpoint(self, public_id) -> WebhookEndpoint:
        """The tenant's endpoint by its public id; 404 alike for a missing and a foreign one."""
        endpoint = self.webhook_endpoints().filter(public_id=public_id).order_by().first()
        if endpoint is None:
            raise exceptions.NotFound("Webhook endpoint not found.")
        return endpoint

    def get_subject(self, external_id: str) -> Subject:
        external_id_validate(external_id)
        subject = selectors.subject_get(tenant=self.tenant, external_id=external_id)
        if subject is None:
            raise exceptions.NotFound("Subject not found.")
        return subject
