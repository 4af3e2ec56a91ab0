"""Shared fixtures: tenants, keys, subjects and an authenticated API client.

Tests run on PostgreSQL (``personatree_site.settings.test``); set
``PERSONATREE_TEST_DB`` per parallel run to use a separate test database.
"""

from __future__ import annotations

import os
import sys

import pytest
from rest_framework.test import APIClient

from tests.factories import ApiKeyFactory, SubjectFactory, TenantFactory

_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session, exitstatus) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config) -> None:
    """End the test process with pytest's status once every plugin has finished, without the
    interpreter's teardown: on an AVX-512/AMX host a native library's destructor (the suite loads
    llama.cpp, torch, ONNX Runtime, Milvus Lite and Ray) has crashed the process with SIGSEGV after
    the summary, once in four full runs, turning a green run red. Nothing is left to write then."""
    if _EXIT_STATUS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])


@pytest.fixture
def tenant(db):
    return TenantFactory()


@pytest.fixture
def other_tenant(db):
    return TenantFactory()


@pytest.fixture
def subject(tenant):
    return SubjectFactory(tenant=tenant)


@pytest.fixture
def make_api_client(db):
    """``make_api_client(tenant, scopes=[...]) -> (client, api_key)`` with the Bearer header set."""

    def make(tenant, scopes=("ingest", "read")):
        key, raw = ApiKeyFactory.create_raw(tenant=tenant, scopes=list(scopes))
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client, key

    return make


@pytest.fixture
def api_client(tenant, make_api_client):
    """A client whose key (tenant ``tenant``) has scopes ingest + read."""
    client, _ = make_api_client(tenant)
    return client


@pytest.fixture
def admin_user(db, django_user_model):
    return django_user_model.objects.create_superuser("moderator", "moderator@example.test", "pw-moderator")


@pytest.fixture(autouse=True)
def _celery_join_flag_reset():
    """Eager Celery runs each task inside ``denied_join_result()``, which saves and restores one
    process-wide flag. Two server threads running eager tasks at once (the live-server tests of
    tests/client and tests/fuzz) can restore it in the wrong order and leave it set, after which
    every later ``AsyncResult.get()`` in the process raises "Never call result.get() within a
    task!" (seen in CI: tests/memory/recall/test_indexing.py after tests/client/test_live.py).
    Each test starts and ends with the flag cleared."""
    from celery._state import _set_task_join_will_block

    _set_task_join_will_block(False)
    yield
    _set_task_join_will_block(False)
