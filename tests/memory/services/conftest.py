"""Fixtures of the service tests: the ORM store forced on PostgreSQL, so both stores of
:mod:`memory.services.tree_store` run the same scenarios (SQLite runs them for real in
``make test``'s SQLite pass)."""

import pytest
from django.conf import settings

from memory.services import tree_store


def pytest_runtest_setup(item):
    if item.get_closest_marker("postgres") and "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        pytest.skip("checks PostgreSQL's own behaviour; this run is on another database")


@pytest.fixture
def orm_store(monkeypatch):
    """The ORM store (SQLite's, the embedded default's) whatever the database."""
    monkeypatch.setattr(tree_store, "store", lambda: tree_store.ORM_STORE)
    return tree_store.ORM_STORE
