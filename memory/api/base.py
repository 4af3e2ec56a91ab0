"""The one place where an API request's tenant is resolved and enforced: every view subclasses
:class:`TenantScopedView`, which reads the tenant's rows only (another tenant's is a 404, like a
missing one). JSON only: ``Accept: text/html`` alone is a 406."""

from __future__ import annotations

import re

from django.db.models import QuerySet
from rest_framework import exceptions, serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import selectors
from memory.api.auth import ApiKeyAuthentication, HasScope
from memory.api.openapi import ProblemAutoSchema
from memory.api.pagination import Pager
from memory.api.parsers import ApiJSONParser
from memory.models import ApiKey, Import, Subject, Tenant, WebhookEndpoint
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
        """A name in the URL holding NUL or a lone surrogate names nothing storable: a 404 before any
        query (a subject's id keeps its 400 from :meth:`get_subject`, a leaf path its unknown_leaf)."""
        super().initial(request, *args, **kwargs)
        names = (v for k, v in kwargs.items() if k not in ("external_id", "leaf_path") and isinstance(v, str))
        if any(UNSTORABLE.search(name) for name in names):
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
        return self.request.auth  # HasScope admits no request without one

    @property
    def tenant(self) -> Tenant:
        return self.api_key.tenant

    def valid_body(self, serializer: type[serializers.Serializer]) -> dict:
        """The request body as ``serializer`` validates it (a 400 names every field error)."""
        data = serializer(data=self.request.data)
        data.is_valid(raise_exception=True)
        return data.validated_data

    def tiers(self) -> tuple[str, ...]:
        """The leaf tiers this key may read (the special tier needs ``read_special``)."""
        return selectors.ALL_TIERS if self.api_key.has_scopes(("read_special",)) else selectors.PUBLIC_TIERS

    def page(
        self,
        rows: QuerySet,
        out: type[serializers.Serializer],
        *,
        member: str,
        field: str = "id",
        key: str = "after",
        kind: type = int,
        **extra,
    ) -> Response:
        """One page of list ``member``: ``rows`` by the unique ``field``, oldest first after the cursor
        (``key`` "before": newest first), answered as ``{**extra, member: [out], "next": url}``."""
        pager = Pager(self.request, member, {key: kind})
        items, more = pager.take(rows, field, key=key, descending=key == "before")
        next_page = pager.next_link({key: getattr(items[-1], field)} if more else None)
        return Response({**extra, member: out(items, many=True).data, "next": next_page})

    def owned(self, model: type[Subject | ApiKey | WebhookEndpoint | Import]) -> QuerySet:
        """The tenant's rows of ``model``: the one way the API reads subjects, keys, endpoints, imports."""
        return model.objects.filter(tenant=self.tenant)

    def get_owned(self, rows: QuerySet, what: str, **lookup):
        """The row of ``rows`` matching ``lookup``; 404 alike for a missing and another tenant's."""
        found = rows.filter(**lookup).order_by().first() if lookup else None
        if found is None:
            raise exceptions.NotFound(f"{what} not found.")
        return found

    def get_api_key(self, prefix: str) -> ApiKey:
        lookup = {"prefix": prefix} if KEY_PREFIX.fullmatch(prefix) else {}
        return self.get_owned(self.owned(ApiKey), "API key", **lookup)

    def get_webhook_endpoint(self, public_id) -> WebhookEndpoint:
        return self.get_owned(self.owned(WebhookEndpoint), "Webhook endpoint", public_id=public_id)

    def get_subject(self, external_id: str) -> Subject:
        external_id_validate(external_id)
        subject = selectors.subject_get(tenant=self.tenant, external_id=external_id)
        if subject is None:
            raise exceptions.NotFound("Subject not found.")
        return subject
