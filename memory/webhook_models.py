"""Webhook endpoints and their delivery log (re-exported by :mod:`memory.models`; the service is
:mod:`memory.services.webhooks`, the contract docs/WEBHOOKS.md)."""

from __future__ import annotations

import base64
import secrets
import uuid

from django.db import models


class WebhookEndpoint(models.Model):
    """A URL of a tenant's that is sent signed events. ``secret`` (kept in clear: signing needs it,
    shown once) is ``whsec_`` and the base64 of 24 random bytes, the Standard Webhooks HMAC key."""

    EVENT_TYPES = ("version.applied", "review.decided", "subject.erased", "ingest.failed")
    SECRET_PREFIX = "whsec_"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    tenant = models.ForeignKey("memory.Tenant", on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=100, editable=False)
    event_types = models.JSONField(default=list)
    is_active = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "is_active"], name="webhook_tenant_active")]
        ordering = ["tenant", "created_at"]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return f"{self.url} ({self.tenant})"

    @classmethod
    def generate_secret(cls) -> str:
        return f"{cls.SECRET_PREFIX}{base64.b64encode(secrets.token_bytes(24)).decode('ascii')}"


class WebhookDelivery(models.Model):
    """One event for one endpoint, and its outcome. ``subject_external_id`` is emptied once it is finished
    (the log keeps ``subject_key``, the tombstone's keyed hash of it)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    event_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_type = models.CharField(max_length=32)
    subject_external_id = models.CharField(max_length=255, blank=True, default="")
    subject_key = models.CharField(max_length=64, blank=True, default="", db_index=True)
    payload = models.JSONField(default=dict, help_text="The event's data, without the subject id.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_endpoint"),
            # The webhooks backlog gauge, read at every scrape (personatree_site/ops/backlog.py);
            # deliveries are kept once done.
            models.Index(
                fields=["created_at"], condition=models.Q(status="pending"), name="webhook_delivery_pending"
            ),
        ]
        ordering = ["-created_at"]
        verbose_name = "webhook delivery"
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} [{self.status}]"


class WebhookAttempt(models.Model):
    """One POST of a delivery: what the receiver answered (or the transport error) and how long it took."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")
    duration_ms = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_number_unique")
        ]
        ordering = ["delivery", "number"]
        verbose_name = "webhook attempt"

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}"
