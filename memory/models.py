"""Storage of PersonaTree memory: data and small helpers, never business rules (writes go through
``memory/services/``). Every subject-scoped row carries ``subject``, so erasure and the tenant scope
are one indexed filter away. The models of the sibling modules are importable from here.
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils.crypto import salted_hmac

from memory import conf
from memory.import_models import Import
from memory.schema_models import SchemaMigration, TenantSchema
from memory.versions import TreeVersion
from memory.webhook_models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

__all__ = [
    "ApiKey",
    "Chunk",
    "Import",
    "Message",
    "OpRecord",
    "ReviewItem",
    "SchemaMigration",
    "Subject",
    "Tenant",
    "TenantSchema",
    "TenantStaff",
    "Tombstone",
    "TreeVersion",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEndpoint",
]


def _default_review_special() -> bool:
    return conf.get().review.special_tier


def _default_mass_delete() -> int:
    return conf.get().review.mass_delete_over


def _default_chunk_pairs() -> int:
    return conf.get().ingest.chunk_pairs


class Tenant(models.Model):
    """An organisation using the API, with its memory policy."""

    name = models.CharField(max_length=200, unique=True)
    is_active = models.BooleanField(default=True)
    review_special_tier = models.BooleanField(
        default=_default_review_special,
        help_text="Hold model ops on special-tier leaves for human review.",
    )
    mass_delete_threshold = models.PositiveIntegerField(
        default=_default_mass_delete,
        help_text="A batch deleting more than this many leaves waits for review.",
    )
    chunk_pairs = models.PositiveSmallIntegerField(
        default=_default_chunk_pairs, help_text="User/assistant pairs per chunk (w)."
    )
    gate_lenient = models.BooleanField(
        default=False, help_text="Lenient gate: ADD on occupied becomes UPDATE, UPDATE on empty becomes ADD."
    )
    require_grounding = models.BooleanField(
        default=True,
        help_text="Model values must be supported by the user's words of their chunk (gate reason UNGROUNDED).",
    )
    default_schema_id = models.CharField(
        max_length=100, default="personatree-default", help_text="Schema new subjects are pinned to."
    )
    default_schema_version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """An API key. Only its SHA-256 is stored; the raw key is shown once at creation."""

    #: ``write``: set and empty single leaves through the API; ``admin``: manage the tenant's keys and
    #: webhook endpoints.
    SCOPES = ("ingest", "read", "read_special", "write", "admin", "erase")
    PREFIX = "pt_live_"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=32, unique=True, help_text="Visible part of the key, for humans.")
    hashed = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["tenant", "prefix"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.tenant})"

    @staticmethod
    def hash_key(raw: str) -> str:
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    @classmethod
    def generate(cls) -> tuple[str, str, str]:
        """Return ``(raw_key, prefix, hashed)`` for a new key: ``pt_live_<8 id chars>_<secret>``."""
        ident = secrets.token_hex(4)
        raw = f"{cls.PREFIX}{ident}_{secrets.token_urlsafe(32)}"
        return raw, f"{cls.PREFIX}{ident}", cls.hash_key(raw)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def has_scopes(self, required) -> bool:
        return set(required) <= set(self.scopes or ())


class Subject(models.Model):
    """The end user whose memory is kept. ``head`` points at the current version (None = empty tree)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="subjects")
    external_id = models.CharField(max_length=255)
    schema_id = models.CharField(max_length=100, default="personatree-default")
    schema_version = models.PositiveIntegerField(default=1)
    head_version = models.PositiveIntegerField(default=0)
    head = models.ForeignKey(
        "TreeVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="subject_unique_per_tenant"),
        ]
        ordering = ["tenant", "external_id"]

    def __str__(self) -> str:
        return f"{self.tenant}/{self.external_id}"


class Message(models.Model):
    """Ingest log: one conversation turn, in per-subject sequence order."""

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        SYSTEM = "system"

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    session_id = models.CharField(max_length=255, blank=True, default="")
    ts = models.DateTimeField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 - NULLs stay out of the unique constraint
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["subject", "seq"], name="message_seq_unique"),
            models.UniqueConstraint(fields=["subject", "idempotency_key"], name="message_idem_unique"),
        ]
        ordering = ["subject", "seq"]

    def __str__(self) -> str:
        return f"{self.subject_id}#{self.seq} {self.role}"


class Chunk(models.Model):
    """A window of messages handed to the MemListener (chunk_key comes from the engine chunker)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        PROCESSING = "processing"
        APPLIED = "applied"
        FAILED = "failed"

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="chunks")
    chunk_key = models.CharField(max_length=64)
    start_seq = models.PositiveIntegerField()
    end_seq = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    notice = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="What the dispatcher changed in the chunk's input (e.g. turns cut to the MemListener's caps).",
    )
    produced_version = models.ForeignKey(
        "TreeVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    indexed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the chunk's messages were confirmed in the evidence index."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["subject", "chunk_key"], name="chunk_key_unique"),
        ]
        indexes = [
            models.Index(fields=["subject", "status", "start_seq"], name="chunk_subject_status_seq"),
            # The indexing reconcile's scan: applied chunks whose messages are not confirmed indexed.
            models.Index(
                fields=["updated_at"],
                condition=models.Q(status="applied", indexed_at__isnull=True),
                name="chunk_unindexed",
            ),
            # The ingest backlog gauge, read at every scrape (personatree_site/ops/backlog.py): the
            # chunks waiting for a dispatcher, a few among millions applied.
            models.Index(
                fields=["created_at"],
                condition=models.Q(status__in=["pending", "processing"]),
                name="chunk_waiting",
            ),
        ]
        ordering = ["subject", "start_seq"]

    def __str__(self) -> str:
        return f"chunk {self.pk} [{self.start_seq}..{self.end_seq}] {self.status}"


class OpRecord(models.Model):
    """The audit log: every op the store saw, with its outcome, actor and source."""

    class Status(models.TextChoices):
        APPLIED = "applied"
        REJECTED = "rejected"
        PENDING_REVIEW = "pending_review"
        APPROVED = "approved"
        DECLINED = "declined"

    class ActorKind(models.TextChoices):
        MODEL = "model"
        ADMIN = "admin"
        API_KEY = "api_key"
        SYSTEM = "system"

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="op_records")
    version = models.ForeignKey(
        TreeVersion,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="op_records",
        help_text="Version this op produced (for approved reviews: the version the approval produced).",
    )
    base_version = models.PositiveIntegerField(help_text="Head version the op was gated against.")
    batch = models.UUIDField(db_index=True, help_text="Ops submitted in one call share a batch id.")
    position = models.PositiveIntegerField(default=0)
    op_type = models.CharField(max_length=16)
    path = models.CharField(max_length=300, blank=True, default="")
    old_value = models.TextField(null=True, blank=True)  # noqa: DJ001 - NULL = leaf was empty
    new_value = models.TextField(null=True, blank=True)  # noqa: DJ001 - NULL = leaf becomes empty
    status = models.CharField(max_length=16, choices=Status.choices)
    reason_code = models.CharField(max_length=32, blank=True, default="")
    detail = models.TextField(blank=True, default="")
    # Actor.
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices)
    actor_name = models.CharField(max_length=200, blank=True, default="")
    model_id = models.CharField(max_length=200, blank=True, default="")
    model_version = models.CharField(max_length=100, blank=True, default="")
    prompt_version = models.CharField(max_length=100, blank=True, default="")
    admin_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Source.
    chunk = models.ForeignKey(
        Chunk, null=True, blank=True, on_delete=models.SET_NULL, related_name="op_records"
    )
    source_start_seq = models.PositiveIntegerField(null=True, blank=True)
    source_end_seq = models.PositiveIntegerField(null=True, blank=True)
    source_text = models.TextField(
        blank=True, default="", help_text="The user's sentence the value was taken from (model ops)."
    )
    confidence = models.FloatField(null=True, blank=True)
    schema_migration = models.ForeignKey(
        SchemaMigration,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="op_records",
        help_text="Set on the ops a schema migration wrote (actor system).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Review decision.
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["subject", "status"], name="oprecord_subject_status"),
            models.Index(fields=["status", "created_at"], name="oprecord_status_created"),
            models.Index(fields=["chunk"], name="oprecord_chunk"),
        ]
        ordering = ["-created_at", "position"]
        verbose_name = "op record"

    def __str__(self) -> str:
        return f"{self.op_type} {self.path or '-'} [{self.status}]"


class ReviewItem(OpRecord):
    """The review queue in the admin: op records waiting for a moderator (a proxy, no table)."""

    class Meta:
        proxy = True
        verbose_name = "review queue item"
        verbose_name_plural = "review queue"


class AuditEvent(models.Model):
    """A change to an API key or a webhook endpoint (``key.created``, ``webhook.deleted``), audited like a
    tree change; never a secret (a key by its prefix, an endpoint by its id and host)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="audit_events")
    action = models.CharField(max_length=40)
    object_id = models.CharField(max_length=64)
    actor_kind = models.CharField(max_length=16, choices=OpRecord.ActorKind.choices)
    actor_name = models.CharField(max_length=200, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.object_id} by {self.actor_kind}:{self.actor_name}"


class Tombstone(models.Model):
    """What is left of an erased subject: a keyed hash of its id, counts and time."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="tombstones")
    external_id_hash = models.CharField(max_length=64, db_index=True)
    counts = models.JSONField(default=dict)
    erased_by = models.CharField(max_length=200, blank=True, default="")
    erased_at = models.DateTimeField(auto_now_add=True)
    # The erased subject's primary key (an integer, no personal data) until its vectors are purged:
    # workers.reconcile_erasures retries the purge of every tombstone whose vectors_purged_at is unset.
    subject_pk = models.BigIntegerField(null=True, blank=True)
    vectors_purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-erased_at"]

    def __str__(self) -> str:
        return f"tombstone {self.external_id_hash[:12]}… ({self.tenant})"

    @staticmethod
    def hash_external_id(tenant_id: int, external_id: str) -> str:
        """Keyed (HMAC-SHA256 with SECRET_KEY) so the id cannot be recovered by guessing."""
        return salted_hmac(
            "personatree.tombstone", f"{tenant_id}:{external_id}", algorithm="sha256"
        ).hexdigest()


class TenantStaff(models.Model):
    """A staff user's grant to one tenant in the Django admin: staff see only the tenants they are
    granted (superusers see every tenant). Special-tier leaf values are shown only to users with the
    ``memory.view_special_tier`` permission (defined here; superusers have it)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tenant_grants")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="staff_grants")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="tenant_staff_unique")]
        ordering = ["tenant", "user"]
        permissions = [("view_special_tier", "Can see special-tier leaf values in the admin")]
        verbose_name = "tenant staff grant"

    def __str__(self) -> str:
        return f"{self.user} → {self.tenant}"
