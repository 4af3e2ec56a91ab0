"""Tenants and subjects: creation, the export's masking of parse errors, erasure."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction

from memory import selectors
from memory.models import Chunk, Message, OpRecord, Subject, Tenant, Tombstone, TreeVersion
from memory.services import ServiceError
from memory.signals import subject_erased


class SubjectErased(ServiceError):
    """The external id belonged to an erased subject (a tombstone exists) and re-creation was not asked for."""

    code = "subject_erased"
    http_status = 409


def tenant_create(*, name: str, **policy) -> Tenant:
    name = (name or "").strip()
    if not name:
        raise ServiceError("Tenant name must not be empty.", field="name")
    if Tenant.objects.filter(name=name).exists():
        raise ServiceError(f"A tenant named {name!r} already exists.", field="name", code="duplicate")
    return Tenant.objects.create(name=name, **policy)


def subject_get_or_create(
    *,
    tenant: Tenant,
    external_id: str,
    schema_id: str | None = None,
    schema_version: int | None = None,
    recreate_erased: bool = False,
) -> tuple[Subject, bool]:
    """The tenant's subject, created on first use (race-safe) and pinned to ``(schema_id,
    schema_version)``, by default the tenant's default. An erased subject's id is not silently
    brought back: :class:`SubjectErased` (409) unless ``recreate_erased`` (the tombstone stays)."""
    external_id = (external_id or "").strip()
    if not external_id or len(external_id) > 255:
        raise ServiceError("external_id must be 1-255 characters.", field="external_id")
    subject = selectors.subject_get(tenant=tenant, external_id=external_id)
    if subject is not None:
        return subject, False
    if not recreate_erased:
        erased = (
            Tombstone.objects.filter(
                tenant=tenant, external_id_hash=Tombstone.hash_external_id(tenant.pk, external_id)
            )
            .order_by("-erased_at")
            .values_list("erased_at", flat=True)
            .first()
        )
        if erased is not None:
            raise SubjectErased(
                f"This subject was erased at {erased.isoformat()}; nothing was stored. "
                'Send "recreate_erased": true to start a new, empty subject under the same id.',
                field="external_id",
            )
    if schema_id is None:  # the tenant's default (a shipped schema unless the tenant chose one of its own)
        schema_id, schema_version = tenant.default_schema_id, tenant.default_schema_version
    elif schema_version is None:
        raise ServiceError("schema_version is required with schema_id.", field="schema_version")
    try:
        selectors.schema_get(tenant.pk, schema_id, schema_version)
    except (LookupError, ValueError) as exc:
        raise ServiceError(f"Unknown schema {schema_id} v{schema_version}.", field="schema_id") from exc
    try:
        with transaction.atomic():
            subject = Subject.objects.create(
                tenant=tenant, external_id=external_id, schema_id=schema_id, schema_version=schema_version
            )
        return subject, True
    except IntegrityError:  # created meanwhile by a concurrent request: read that row
        subject = selectors.subject_get(tenant=tenant, external_id=external_id)
        assert subject is not None  # the row the insert collided with
        return subject, False


#: What an export shows of a parse error instead of the model's output.
PARSE_ERROR_DETAIL = "the model's output could not be read"
_LINE = re.compile(r"line (\d+)")


def op_record_masked(record: OpRecord) -> OpRecord:
    """``record`` as an export shows it (in memory, never saved): a parse error keeps no raw model output,
    only a masked reason with the line number."""
    if record.reason_code != "PARSE_ERROR":
        return record
    line = _LINE.match(record.detail or "")
    record.old_value = record.new_value = None
    record.detail = f"{PARSE_ERROR_DETAIL} (line {line.group(1)})" if line else PARSE_ERROR_DETAIL
    record.source_text = ""
    return record


#: A subject's rows, in the order they are deleted (op records point at versions and chunks, ...).
_OWNED: dict[str, Any] = {"ops": OpRecord, "versions": TreeVersion, "chunks": Chunk, "messages": Message}


def subject_erase(*, subject: Subject, erased_by: str = "") -> Tombstone:
    """Delete everything stored about the subject; leave a tombstone with counts and time.
    ``subject_erased`` (on commit) has the vectors and caches outside this database purged."""
    tenant_id, subject_id, external_id = subject.tenant_id, subject.pk, subject.external_id
    with transaction.atomic():
        locked = Subject.objects.select_for_update().filter(pk=subject_id).first()
        if locked is None:
            raise ServiceError("Subject was already erased.", code="not_found")
        counts = {name: model.objects.filter(subject_id=subject_id).count() for name, model in _OWNED.items()}
        # Admin history rows name objects by their repr, which may hold the subject's text.
        for model in (Subject, *_OWNED.values()):
            owner = "pk" if model is Subject else "subject_id"
            ids = model.objects.filter(**{owner: subject_id}).values_list("pk", flat=True)
            LogEntry.objects.filter(
                content_type=ContentType.objects.get_for_model(model), object_id__in=[str(i) for i in ids]
            ).delete()
        Subject.objects.filter(pk=subject_id).update(head=None)
        Chunk.objects.filter(subject_id=subject_id).update(produced_version=None)
        for model in _OWNED.values():
            model.objects.filter(subject_id=subject_id).delete()
        Subject.objects.filter(pk=subject_id).delete()
        tombstone = Tombstone.objects.create(
            tenant_id=tenant_id,
            external_id_hash=Tombstone.hash_external_id(tenant_id, external_id),
            subject_pk=subject_id,  # until the vectors' purge is recorded (memory/services/erasure.py)
            counts=counts,
            erased_by=erased_by,
        )
        transaction.on_commit(
            lambda: subject_erased.send(
                sender=Subject, tenant_id=tenant_id, subject_id=subject_id, external_id=external_id
            )
        )
    return tombstone
