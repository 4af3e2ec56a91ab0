"""The harness's tenant: reused by name, and safe when two runs (one per speaker) start together."""

import pytest

from evaluation import store
from memory.models import Tenant
from memory.services import ServiceError
from memory.services.subjects import tenant_create

pytestmark = pytest.mark.django_db


def test_fresh_tenant_without_reuse_and_refused_duplicate():
    tenant, reused = store.eval_tenant("eval-fresh")
    assert not reused and tenant.review_special_tier is False
    with pytest.raises(ServiceError):
        store.eval_tenant("eval-fresh")  # without --tenant a name clash is an error, not a merge


def test_reuse_when_another_process_created_it_between_check_and_create(monkeypatch):
    other = tenant_create(name="eval-race", review_special_tier=False)
    # The other run's insert lands after this run looked for the tenant and before it created one.
    monkeypatch.setattr(store.Tenant.objects, "filter", lambda **kw: Tenant.objects.none())
    monkeypatch.setattr(store, "tenant_create", lambda **kw: Tenant.objects.create(**kw))
    tenant, reused = store.eval_tenant("eval-race", reuse=True)
    assert reused and tenant.pk == other.pk
    assert Tenant.objects.count() == 1
