"""A live PersonaTree server for the client's tests: real HTTP on 127.0.0.1.

``api_server`` is pytest-django's threaded WSGI live server, bound to 127.0.0.1 on a free port
(pytest-django's own ``live_server`` binds ``localhost``), serving the test database; tests that
use it write through ``transactional_db`` so the server thread sees their rows. The MemListener is
the in-process stand-in in ``derived`` mode (it writes ops from the chunk's sentences, no model)
and Celery is eager (the test settings), so a flushed subject is applied before the flush
answers. The server is stopped when the module's tests are done.
"""

from __future__ import annotations

import pytest
from pytest_django.live_server_helper import LiveServer

from serving.client import reset_listener_clients
from tests.factories import ApiKeyFactory, TenantFactory


@pytest.fixture(scope="module")
def api_server(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        server = LiveServer("127.0.0.1:0")
    yield server
    server.stop()


@pytest.fixture
def base_url(api_server, transactional_db, settings) -> str:
    """The live server's URL, with the stand-in MemListener configured for this test."""
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_BACKEND": "standin",
        "MEMLISTENER_STANDIN_MODE": "derived",
        "RESPONDER_BACKEND": "none",
    }
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "127.0.0.1"]
    reset_listener_clients()
    yield api_server.url
    reset_listener_clients()


@pytest.fixture
def make_key(transactional_db):
    """``make_key(scopes=[...], tenant=None) -> raw API key`` (a new tenant unless given)."""

    def make(scopes=("ingest", "read", "erase"), tenant=None) -> str:
        _, raw = ApiKeyFactory.create_raw(tenant=tenant or TenantFactory(), scopes=list(scopes))
        return raw

    return make


@pytest.fixture
def api_key(make_key) -> str:
    return make_key()
