"""``workers.schema_migrate``: ids only, slices that queue the next one, a missing row is a no-op."""

from __future__ import annotations

import pytest

from memory.models import SchemaMigration, Subject
from memory.services.schema_migrations import schema_migration_create
from tests.schema_migration_fixture import acme_tenant, mapping
from workers import schema_migrations as task_module
from workers.schema_migrations import schema_migrate

pytestmark = pytest.mark.django_db


def test_a_task_migrates_a_slice_and_queues_the_rest(monkeypatch):
    tenant = acme_tenant()
    row, _ = schema_migration_create(tenant=tenant, document=mapping())
    monkeypatch.setattr(task_module, "SLICE", 3)
    sent = []
    real_send = task_module.send
    monkeypatch.setattr(
        task_module, "send", lambda task, *args, **kw: sent.append(args) or real_send(task, *args, **kw)
    )
    out = schema_migrate.apply(args=[row.pk]).get()
    assert out["examined"] == 3 and len(sent) == 1 and sent[0][0] == row.pk  # the next slice, run eagerly
    assert SchemaMigration.objects.get(pk=row.pk).status == "done"
    assert set(Subject.objects.filter(tenant=tenant).values_list("schema_version", flat=True)) == {2}


def test_a_deleted_migration_is_a_no_op():
    assert schema_migrate.apply(args=[987654]).get() == {"migration_id": 987654, "missing": True}


def test_celery_registers_the_task():
    from personatree_site.celery import app

    assert "workers.schema_migrate" in app.tasks
