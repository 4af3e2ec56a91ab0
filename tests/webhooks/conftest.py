"""A real HTTP receiver on 127.0.0.1 (a ``http.server`` thread) for webhook deliveries.

``receiver.script`` lists the status codes to answer, in order (200 once it is used up), after
``receiver.delay_s`` seconds; every request is kept in ``receiver.requests`` (path, headers, body).
Private targets are allowed here (``WEBHOOK_ALLOW_PRIVATE_TARGETS``): the receiver is on loopback."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory.services.tree import Actor
from memory.services.webhooks import webhook_endpoint_create
from tests.factories import SubjectFactory, TenantFactory

#: Who creates the tests' endpoints.
ACTOR = Actor.system("tests")


def subscribed(url: str, *event_types: str, **subject_fields):
    """A subject of a new tenant whose one endpoint, at ``url``, takes ``event_types``:
    ``(subject, endpoint, secret)``."""
    tenant = TenantFactory()
    subject = SubjectFactory(tenant=tenant, **subject_fields)
    endpoint, secret = webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url=url, event_types=list(event_types)
    )
    return subject, endpoint, secret


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    script: list[int] = field(default_factory=list)
    delay_s: float = 0.0  # before answering
    requests: list[Received] = field(default_factory=list)


@pytest.fixture(autouse=True)
def eager_retries():
    """Celery runs tasks eagerly here; with ``task_eager_propagates`` (the project's test setting) a
    retry would be raised to the caller instead of run. Off, Celery's eager ``apply`` runs each retry
    at once (countdown ignored), as a worker would after the backoff."""
    from personatree_site.celery import app

    before = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    yield
    app.conf.task_eager_propagates = before


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """Run what the store does after commit (signals -> deliveries -> eager task) at block exit."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def allow_loopback(settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_ALLOW_PRIVATE_TARGETS": True}
    return settings


@contextmanager
def _serving():
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            state.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status = state.script.pop(0) if state.script else 200
            time.sleep(state.delay_s)
            try:
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except (BrokenPipeError, ConnectionResetError):  # the sender timed out and hung up
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def receiver(allow_loopback):
    with _serving() as state:
        yield state


@pytest.fixture
def other_receiver(allow_loopback):
    with _serving() as state:
        yield state
