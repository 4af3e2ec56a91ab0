"""A bulk import sent over the API (``POST /v1/imports``): its JSONL body (in the row: the web process
and the worker may share no volume; emptied once done or failed) and how far it got.
"""

from __future__ import annotations

import uuid

from django.db import models


class Import(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"  # stored, its task not started yet
        INGESTING = "ingesting"  # messages and chunks being written
        PROCESSING = "processing"  # chunks handed to the MemListener, some not applied yet
        DONE = "done"  # every chunk applied or failed
        FAILED = "failed"  # the run stopped (``error`` says why); what was written stays

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    tenant = models.ForeignKey("memory.Tenant", on_delete=models.CASCADE, related_name="imports")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    source_label = models.CharField(max_length=200, help_text="Namespaces the derived message keys.")
    body = models.BinaryField(default=b"", help_text="The JSONL, until the import is done.")
    body_bytes = models.PositiveBigIntegerField(default=0)
    lines = models.PositiveIntegerField(default=0, help_text="Non-blank lines (histories).")
    messages = models.PositiveIntegerField(default=0)
    new_messages = models.PositiveIntegerField(default=0)
    duplicates = models.PositiveIntegerField(default=0)
    chunks_created = models.PositiveIntegerField(default=0)
    subject_ids = models.JSONField(default=list, blank=True, help_text="The subjects it wrote to.")
    error = models.TextField(blank=True, default="")
    created_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ingested_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="import_tenant_created")]

    def __str__(self) -> str:
        return f"import {self.public_id} ({self.status})"
