"""build_jobs sends a subject's tenant schema to the MemListener (ListenerJob.schema_document): the
uploaded document for a subject pinned to one, None for a shipped schema; read with the batch's one
input query plus the selector's per-process cache, never a query per subject."""

from __future__ import annotations

import copy

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory import selectors
from memory.services.schemas import schema_upload
from memory.services.subjects import subject_get_or_create
from tests.schema_documents import schema_document
from tests.workers.helpers import ingest_pairs
from workers.dispatcher import build_jobs
from workers.ordering import chunks_claim

pytestmark = pytest.mark.django_db

TUTOR = schema_document(
    "tutor",
    ("learning/subjects/current", "What the user is studying now", 80),
    ("learning/goals/exam", "The exam the user prepares for", 80),
)


def test_a_tenant_schema_subject_gets_its_document_and_a_default_one_none(tenant):
    row, created = schema_upload(tenant=tenant, document=copy.deepcopy(TUTOR))
    assert created
    for name in ("pupil-1", "pupil-2", "pupil-3"):
        subject_get_or_create(tenant=tenant, external_id=name, schema_id="tutor", schema_version=1)
        ingest_pairs(tenant, name, 3)
    default = ingest_pairs(tenant, "plain", 3).subject
    selectors.schema_cache_clear()  # the first batch reads the upload once

    claims = chunks_claim(limit=8)
    with CaptureQueriesContext(connection) as captured:
        jobs = build_jobs(claims)

    by_subject = {int(j.subject_id): j for j in jobs}
    assert len(jobs) == 4
    for job in jobs:
        if int(job.subject_id) == default.pk:
            assert job.schema_id != "tutor" and job.schema_document is None
        else:
            assert (job.schema_id, job.schema_version) == ("tutor", 1)
            assert job.schema_document == TUTOR == row.document
    assert by_subject[default.pk].schema_id in selectors.shipped_schema_ids()
    # one read of heads + messages for the batch, one of the tenant schema (then cached): not per subject
    assert len(captured.captured_queries) == 2
    with CaptureQueriesContext(connection) as again:
        build_jobs(claims)
    assert len(again.captured_queries) == 1


def test_a_round_writes_a_tenant_schema_subject_under_its_own_leaves(tenant):
    """Through the real MemListener (stand-in engine): the job's document is the schema it listens
    with, and the store's gate (the subject's pinned schema) accepts what it wrote."""
    from memory.models import OpRecord, TreeVersion
    from tests.workers.helpers import standin_client
    from workers.dispatcher import dispatch_round

    schema_upload(tenant=tenant, document=copy.deepcopy(TUTOR))
    subject_get_or_create(tenant=tenant, external_id="pupil", schema_id="tutor", schema_version=1)
    subject = ingest_pairs(tenant, "pupil", 3).subject
    report = dispatch_round(client=standin_client(), max_wait_ms=0, index=False)
    assert report.applied == 1 and report.failed == 0
    paths = set(OpRecord.objects.filter(subject=subject).values_list("path", flat=True))
    leaves = {leaf["path"] for leaf in TUTOR["leaves"]}
    assert paths and paths <= leaves
    assert OpRecord.objects.filter(subject=subject, status="applied").exists()
    assert TreeVersion.objects.filter(subject=subject).count() == 1
