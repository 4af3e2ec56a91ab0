"""Key management for one's own tenant. A key hands out no scope it does not hold itself, but may
revoke any key of the tenant (how a leaked one is cut off); a rotation revokes the old key at once."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from memory.api.base import TenantScopedView
from memory.api.openapi import problems
from memory.api.pagination import paged
from memory.models import ApiKey
from memory.services.keys import api_key_create, api_key_rotate, api_keys_revoke
from memory.services.tree import Actor


class KeyOut(serializers.Serializer):
    prefix = serializers.CharField(help_text="The key's public part: how it is named here and in logs.")
    name = serializers.CharField()
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=ApiKey.SCOPES))
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True, help_text="To the minute.")
    revoked_at = serializers.DateTimeField(allow_null=True)


class KeyCreatedOut(KeyOut):
    key = serializers.CharField(help_text="The raw key: shown in this answer only, never again.")


class KeyIn(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=ApiKey.SCOPES), min_length=1, max_length=len(ApiKey.SCOPES)
    )


class _KeyView(TenantScopedView):
    required_scopes = ("admin",)

    def grantable(self, scopes) -> list[str]:
        """``scopes`` (sorted, unique), if the calling key holds each of them; else a 403."""
        missing = sorted(set(scopes) - set(self.api_key.scopes or ()))
        if missing:
            raise exceptions.PermissionDenied(
                f"This API key cannot hand out scope(s) it does not hold: {', '.join(missing)}."
            )
        return sorted(set(scopes))

    def created(self, key: ApiKey, raw: str) -> Response:
        return Response(KeyCreatedOut({**KeyOut(key).data, "key": raw}).data, status=201)


class ApiKeyListView(_KeyView):
    @paged(
        "ApiKeyList",
        {"keys": KeyOut(many=True)},
        operation_id="v1_keys_list",
        summary="List the tenant's API keys (revoked ones too)",
    )
    def get(self, request):
        return self.page(self.owned(ApiKey), KeyOut, member="keys")

    @extend_schema(
        request=KeyIn,
        responses={201: KeyCreatedOut},
        summary="Create an API key (the raw key is in this answer only)",
        description="403 when asking for a scope the calling key does not hold.",
    )
    def post(self, request):
        valid = self.valid_body(KeyIn)
        scopes = self.grantable(valid["scopes"])
        key, raw = api_key_create(
            tenant=self.tenant,
            scopes=scopes,
            name=valid["name"],
            actor=Actor.for_api_key(self.api_key),
        )
        return self.created(key, raw)


class ApiKeyDetailView(_KeyView):
    @extend_schema(responses=KeyOut, summary="One API key")
    def get(self, request, prefix: str):
        return Response(KeyOut(self.get_api_key(prefix)).data)

    @extend_schema(
        responses={200: KeyOut},
        summary="Revoke an API key (idempotent; the key stays listed with revoked_at)",
    )
    def delete(self, request, prefix: str):
        key = self.get_api_key(prefix)
        api_keys_revoke(keys=[key], actor=Actor.for_api_key(self.api_key))
        key.refresh_from_db(fields=["revoked_at", "last_used_at"])
        return Response(KeyOut(key).data)


class ApiKeyRotateView(_KeyView):
    @extend_schema(
        request=None,
        responses={201: KeyCreatedOut, **problems({409: "key_revoked: the key was revoked."})},
        summary="Replace an API key by a new one with the same name and scopes; the old one is revoked",
        description="409 key_revoked for a revoked key; 403 when the key has a scope the calling key "
        "does not hold.",
    )
    def post(self, request, prefix: str):
        key = self.get_api_key(prefix)
        new, raw = api_key_rotate(
            key=key, scopes=self.grantable(key.scopes or ()), actor=Actor.for_api_key(self.api_key)
        )
        return self.created(new, raw)
