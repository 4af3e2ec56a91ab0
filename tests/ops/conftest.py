"""Fixtures of the ops tests: a plain Django client (probes carry no API key) and a closed port."""

from __future__ import annotations

import socket

import pytest
from django.test import Client


@pytest.fixture
def probe():
    """A client like a probe: no credentials, no session."""
    return Client()


@pytest.fixture
def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def personatree(settings):
    """A copy of ``settings.PERSONATREE`` that the test may change (restored afterwards)."""
    settings.PERSONATREE = {**settings.PERSONATREE}
    return settings.PERSONATREE
