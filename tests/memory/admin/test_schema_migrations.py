"""The admin's read-only list of schema migrations, scoped to the staff user's tenants."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from memory.models import TenantStaff
from memory.services.schema_migrations import schema_migration_create, schema_migration_run
from tests.factories import TenantFactory
from tests.schema_migration_fixture import MAPPING_ID, acme_tenant, mapping

pytestmark = pytest.mark.django_db


@pytest.fixture
def migration(db):
    row, _ = schema_migration_create(tenant=acme_tenant(), document=mapping())
    schema_migration_run(migration=row)
    return row


def staff_of(django_user_model, tenant, name):
    user = django_user_model.objects.create_user(name, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_schemamigration"))
    TenantStaff.objects.create(user=user, tenant=tenant)
    return user


def test_staff_see_their_tenants_migrations_with_status_and_counts(client, django_user_model, migration):
    url = reverse("admin:memory_schemamigration_changelist")
    client.force_login(staff_of(django_user_model, migration.tenant, "ada"))
    page = client.get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert MAPPING_ID in text and "acme-profile v1" in text and "done" in text
    detail = client.get(reverse("admin:memory_schemamigration_change", args=[migration.pk]))
    assert detail.status_code == 200 and b'name="_save"' not in detail.content  # read-only
    client.force_login(staff_of(django_user_model, TenantFactory(), "bea"))
    assert MAPPING_ID not in client.get(url).content.decode()
    assert client.get(reverse("admin:memory_schemamigration_change", args=[migration.pk])).status_code == 302
