"""Real processes for the end-to-end tests: a Celery worker and a private redis-server.

Every process is started in its own session and stopped by its PID (process group), never by
name. The worker uses the pytest-django test database (passed as ``DATABASE_URL``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
CELERY = Path(sys.executable).with_name("celery")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, *, timeout: float, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def live_database_url() -> str:
    s = connection.settings_dict
    user = s.get("USER") or "postgres"
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or 5432
    auth = f"{user}:{s['PASSWORD']}" if s.get("PASSWORD") else user
    return f"postgres://{auth}@{host}:{port}/{s['NAME']}"


class RedisServer:
    """``redis-server`` on a free port, no persistence (a restart loses every queued message)."""

    def __init__(self, workdir: Path):
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        exe = shutil.which("redis-server")
        if exe is None:
            raise RuntimeError("redis-server is not installed")
        self.proc = subprocess.Popen(
            [
                exe,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

        def up():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    return s.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        wait_for(up, timeout=10, what="redis-server")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None


class CeleryWorker:
    """``celery -A personatree_site worker -B`` (embedded beat runs ``workers.sweep``)."""

    def __init__(self, *, broker_url: str, listener_url: str, workdir: Path, concurrency: int = 2, env=None):
        self.broker_url = broker_url
        self.listener_url = listener_url
        self.workdir = workdir
        self.concurrency = concurrency
        self.extra_env = dict(env or {})
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
            "DATABASE_URL": live_database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "CELERY_VISIBILITY_TIMEOUT": "8",
            "PERSONATREE_MEMLISTENER_BACKEND": "ray",
            "PERSONATREE_MEMLISTENER_URL": self.listener_url,
            "PERSONATREE_MEMLISTENER_TIMEOUT_S": "30",
            "PERSONATREE_CHUNK_LEASE_SECONDS": "4",
            "PERSONATREE_SWEEP_SECONDS": "1",
            "PERSONATREE_BATCH_MAX_WAIT_MS": "20",
            "PERSONATREE_EVIDENCE_INDEXING": "false",  # the recall tests own the index; not exercised here
            "PYTHONUNBUFFERED": "1",
        }
        env.update(self.extra_env)
        return env

    def start(self) -> CeleryWorker:
        name = f"pt-ingest-test-{uuid.uuid4().hex[:8]}@%h"
        self.log_path = self.workdir / f"worker-{uuid.uuid4().hex[:6]}.log"
        log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [
                str(CELERY),
                "-A",
                "personatree_site",
                "worker",
                "-Q",
                "ingest",
                "-c",
                str(self.concurrency),
                "-B",
                "-s",
                str(self.workdir / "beat-schedule"),
                "-l",
                "INFO",
                "-n",
                name,
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(
            lambda: self._ready(), timeout=60, interval=0.25, what=f"celery worker (log {self.log_path})"
        )
        return self

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"celery worker exited with {self.proc.returncode}:\n{self.log()}")
        return " ready." in self.log()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL the whole process group (main process, pool children, embedded beat)."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None
