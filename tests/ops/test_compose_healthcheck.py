"""docker/compose.yaml: the web service's healthcheck is an HTTP GET of /healthz on gunicorn's port
(read from the file itself, so no docker-compose is needed), and that exact command succeeds
against a live server run with production-like host and HTTPS settings."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "compose.yaml"


@pytest.fixture(scope="module")
def web() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]["web"]


def test_web_healthcheck_gets_healthz(web):
    test = web["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    assert "http://127.0.0.1:8000/healthz" in test[3]
    assert "socket.create_connection" not in test[3]  # not a TCP probe


def test_web_metrics_are_opt_in(web):
    env = yaml.safe_load(COMPOSE.read_text())["x-django-env"]
    assert env["PERSONATREE_METRICS_ENABLED"] == "${PERSONATREE_METRICS_ENABLED:-false}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_the_healthcheck_command_passes_against_a_live_server(web, tmp_path):
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
        "DJANGO_ALLOWED_HOSTS": "memory.example.com",
        "PERSONATREE_DATA_DIR": str(tmp_path),
    }
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", "--skip-checks", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        command = web["healthcheck"]["test"][3].replace(":8000/", f":{port}/")
        deadline = time.monotonic() + 60
        while True:
            proc = subprocess.run([sys.executable, "-c", command], capture_output=True, text=True, timeout=30)
            if proc.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert proc.returncode == 0, proc.stderr[-1000:]
        # The same command against a path the host check applies to fails (400): the probe passes
        # because /healthz is answered first, not because the check is off.
        other = command.replace("/healthz", "/v1/subjects/x/tree")
        assert subprocess.run([sys.executable, "-c", other], capture_output=True, timeout=30).returncode != 0
    finally:
        server.terminate()
        server.wait(timeout=30)
