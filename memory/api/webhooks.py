"""Webhook endpoints of one's own tenant and their delivery log (docs/WEBHOOKS.md); the ``secret``
is in the answers of creation and rotation only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from memory.api.base import TenantScopedView
from memory.api.pagination import paged
from memory.models import WebhookDelivery, WebhookEndpoint
from memory.services import webhooks as service
from memory.services.tree import Actor

EVENT_TYPES = WebhookEndpoint.EVENT_TYPES


class EndpointOut(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    url = serializers.CharField()
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=EVENT_TYPES))
    is_active = serializers.BooleanField()
    description = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class EndpointWithSecretOut(EndpointOut):
    secret = serializers.CharField(help_text="Signs every delivery; shown in this answer only.")


class EndpointIn(serializers.Serializer):
    url = serializers.CharField(max_length=2000, help_text="http(s) URL of a public host.")
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_TYPES), min_length=1, max_length=len(EVENT_TYPES)
    )
    is_active = serializers.BooleanField(required=False, default=True)
    description = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class EndpointPatch(EndpointIn):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, partial=True, **kwargs)


class AttemptOut(serializers.Serializer):
    number = serializers.IntegerField()
    status_code = serializers.IntegerField(allow_null=True)
    error = serializers.CharField()
    duration_ms = serializers.FloatField()
    created_at = serializers.DateTimeField()


class DeliveryOut(serializers.Serializer):
    event_id = serializers.UUIDField()
    event_type = serializers.CharField()
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.choices)
    attempts = AttemptOut(source="attempt_log.all", many=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class _WebhookView(TenantScopedView):
    required_scopes = ("admin",)

    @property
    def actor(self) -> Actor:
        return Actor.for_api_key(self.api_key)


class WebhookListView(_WebhookView):
    @paged(
        "WebhookList",
        {"webhooks": EndpointOut(many=True)},
        operation_id="v1_webhooks_list",
        summary="List the tenant's webhook endpoints",
    )
    def get(self, request):
        return self.page(self.owned(WebhookEndpoint), EndpointOut, member="webhooks")

    @extend_schema(
        request=EndpointIn,
        responses={201: EndpointWithSecretOut},
        summary="Register a webhook endpoint (its secret is in this answer only)",
        description=(
            "400 invalid_url for a URL that is not http(s) or does not reach a public address; "
            "409 webhook_endpoint_limit when the tenant holds WEBHOOK_MAX_ENDPOINTS_PER_TENANT endpoints."
        ),
    )
    def post(self, request):
        endpoint, _secret = service.webhook_endpoint_create(
            tenant=self.tenant, actor=self.actor, **self.valid_body(EndpointIn)
        )
        return Response(EndpointWithSecretOut(endpoint).data, status=201)


class WebhookDetailView(_WebhookView):
    @extend_schema(responses=EndpointOut, summary="One webhook endpoint")
    def get(self, request, public_id):
        return Response(EndpointOut(self.get_webhook_endpoint(public_id)).data)

    @extend_schema(request=EndpointPatch, responses=EndpointOut, summary="Change a webhook endpoint")
    def patch(self, request, public_id):
        endpoint = self.get_webhook_endpoint(public_id)
        changes = self.valid_body(EndpointPatch)
        endpoint = service.webhook_endpoint_update(endpoint=endpoint, actor=self.actor, **changes)
        return Response(EndpointOut(endpoint).data)

    @extend_schema(request=None, responses={204: None}, summary="Delete a webhook endpoint and its log")
    def delete(self, request, public_id):
        service.webhook_endpoint_delete(endpoint=self.get_webhook_endpoint(public_id), actor=self.actor)
        return Response(status=204)


class WebhookRotateSecretView(_WebhookView):
    @extend_schema(
        request=None, responses=EndpointWithSecretOut, summary="Give the endpoint a new secret (shown once)"
    )
    def post(self, request, public_id):
        endpoint = self.get_webhook_endpoint(public_id)
        service.webhook_endpoint_rotate_secret(endpoint=endpoint, actor=self.actor)
        return Response(EndpointWithSecretOut(endpoint).data)


class WebhookDeliveriesView(_WebhookView):
    @paged(
        "WebhookDeliveryList",
        {"deliveries": DeliveryOut(many=True)},
        summary="The endpoint's deliveries, newest first, with every attempt",
    )
    def get(self, request, public_id):
        deliveries = self.get_webhook_endpoint(public_id).deliveries.prefetch_related("attempt_log")
        return self.page(deliveries, DeliveryOut, member="deliveries", key="before")
