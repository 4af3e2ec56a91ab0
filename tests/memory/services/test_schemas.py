"""memory/services/schemas.py: upload rules, the catalogue a tenant may pin to, reads and the default."""

from __future__ import annotations

import copy

import pytest

from memory import selectors
from memory.engine.schema import SchemaError
from memory.models import TenantSchema
from memory.services import NotFoundError, ServiceError
from memory.services import schemas as service
from memory.services.subjects import subject_get_or_create
from tests.schema_documents import schema_document

pytestmark = pytest.mark.django_db

DOC = schema_document(
    "coach",
    ("health/habits/sleep", "How the user sleeps", 80),
    ("health/goals/current", "The user's current health goal", 120),
)


def version(n: int, document: dict = DOC) -> dict:
    return {**copy.deepcopy(document), "version": n}


def test_upload_rules(tenant):
    row, created = service.schema_upload(tenant=tenant, document=DOC, created_by="ada")
    assert created and (row.schema_id, row.version, row.leaf_count, row.created_by) == ("coach", 1, 2, "ada")
    assert service.schema_upload(tenant=tenant, document=copy.deepcopy(DOC)) == (row, False)
    with pytest.raises(ServiceError, match="next version is 2"):
        service.schema_upload(tenant=tenant, document=version(3))
    changed = copy.deepcopy(DOC)
    changed["leaves"][0]["budget"] = 90
    with pytest.raises(service.SchemaConflict, match="upload the change as v2"):
        service.schema_upload(tenant=tenant, document=changed)
    with pytest.raises(ServiceError, match="reserved"):
        service.schema_upload(tenant=tenant, document={**DOC, "id": "personatree-default"})
    with pytest.raises(ServiceError, match="must be a JSON object"):
        service.schema_upload(tenant=tenant, document=[DOC])
    for broken in ({**DOC, "leaves": [{"path": 3}]}, {**DOC, "leaves": [None]}, {**DOC, "tree": "x"}):
        with pytest.raises(ServiceError, match="Invalid schema") as caught:
            service.schema_upload(tenant=tenant, document=broken)
        assert not isinstance(caught.value, service.SchemaConflict)
    assert service.schema_upload(tenant=tenant, document=version(2))[1] is True
    assert list(TenantSchema.objects.values_list("version", flat=True)) == [1, 2]


def test_catalogue_and_read_are_per_tenant(tenant, other_tenant):
    service.schema_upload(tenant=tenant, document=DOC)
    subject_get_or_create(tenant=tenant, external_id="u1", schema_id="coach", schema_version=1)
    subject_get_or_create(tenant=tenant, external_id="u2")
    mine = {(i.schema_id, i.version): i for i in service.schema_catalogue(tenant=tenant)}
    assert mine[("coach", 1)].subjects == 1 and mine[("personatree-default", 1)].subjects == 1
    assert mine[("personatree-default", 1)].shipped and mine[("personatree-default", 1)].created_at is None
    theirs = service.schema_catalogue(tenant=other_tenant)
    assert [(i.schema_id, i.subjects) for i in theirs] == [("personatree-default", 0)]
    assert service.schema_read(tenant=tenant, schema_id="coach", version=1).document == DOC
    with pytest.raises(NotFoundError):
        service.schema_read(tenant=other_tenant, schema_id="coach", version=1)
    with pytest.raises(SchemaError):
        selectors.schema_get(other_tenant.pk, "coach", 1)


def test_default_schema_and_new_subjects(tenant, other_tenant):
    service.schema_upload(tenant=tenant, document=DOC)
    with pytest.raises(ServiceError, match="Unknown schema"):
        service.tenant_default_schema_set(tenant=other_tenant, schema_id="coach", version=1)
    with pytest.raises(ServiceError, match="Unknown schema"):
        service.tenant_default_schema_set(tenant=tenant, schema_id="coach", version=2)
    service.tenant_default_schema_set(tenant=tenant, schema_id="coach", version=1)
    subject, created = subject_get_or_create(tenant=tenant, external_id="new")
    assert created and (subject.schema_id, subject.schema_version) == ("coach", 1)
    assert selectors.subject_schema(subject).paths == ("health/habits/sleep", "health/goals/current")
    with pytest.raises(ServiceError, match="Unknown schema"):
        subject_get_or_create(tenant=other_tenant, external_id="x", schema_id="coach", schema_version=1)
