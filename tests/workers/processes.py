"""Real processes for the end-to-end tests and the chaos soak: a Celery worker, a private
redis-server, a private PostgreSQL cluster (initdb + pg_ctl in a temporary directory) and a
stand-in MemListener HTTP server.

Every process is started in its own session and stopped by its PID (process group; PostgreSQL
by ``pg_ctl`` on its own data directory), never by name. The worker uses the pytest-django test
database (passed as ``DATABASE_URL``) unless it is given another one.
"""

from __future__ import annotations

import os
import pwd
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


def wait_for(predicate, *, timeout: float, interval: float = 0.1, what: str = "condition", detail=None):
    """Poll ``predicate`` until it is truthy; on timeout fail with ``detail()`` (e.g. a worker's log tail)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    extra = f"\n{detail()}" if detail is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{extra}")


def terminate(proc: subprocess.Popen, timeout: float = 10) -> None:
    """SIGTERM ``proc`` (by its PID) and wait for it; SIGKILL it if it is still up after ``timeout``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def live_database_url() -> str:
    s = connection.settings_dict
    user = s.get("USER") or "postgres"
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or 5432
    auth = f"{user}:{s['PASSWORD']}" if s.get("PASSWORD") else user
    return f"postgres://{auth}@{host}:{port}/{s['NAME']}"


class _ServerProcess:
    """A server the tests start as its own process on a free 127.0.0.1 port, its files in ``workdir``."""

    URL = ""  #: the server's URL, ``{port}`` to fill

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return self.URL.format(port=self.port)


class RedisServer(_ServerProcess):
    """``redis-server`` on a free port, no persistence (a restart loses every queued message)."""

    URL = "redis://127.0.0.1:{port}/0"

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
            terminate(self.proc)
        self.proc = None


class CeleryWorker:
    """``celery -A personatree_site worker -B`` (embedded beat runs ``workers.sweep``; ``beat=False``
    leaves it out, for a second worker). ``database_url`` defaults to the pytest-django database."""

    def __init__(
        self,
        *,
        broker_url: str,
        listener_url: str,
        workdir: Path,
        concurrency: int = 2,
        env=None,
        database_url: str | None = None,
        beat: bool = True,
    ):
        self.broker_url = broker_url
        self.listener_url = listener_url
        self.workdir = workdir
        self.concurrency = concurrency
        self.extra_env = dict(env or {})
        self.database_url = database_url
        self.beat = beat
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
            "DATABASE_URL": self.database_url or live_database_url(),
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

    def start(self, *, wait: bool = True) -> CeleryWorker:
        """Start the worker; with ``wait=False`` return at once (see :meth:`wait_ready`)."""
        tag = uuid.uuid4().hex[:8]
        self.log_path = self.workdir / f"worker-{tag}.log"
        # A fresh beat schedule file per start: a SIGKILL can leave the last one half written.
        beat = ["-B", "-s", str(self.workdir / f"beat-schedule-{tag}")] if self.beat else []
        with self.log_path.open("w") as log:
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
                    *beat,
                    "-l",
                    "INFO",
                    "-n",
                    f"pt-ingest-test-{tag}@%h",
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
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 60) -> CeleryWorker:
        wait_for(self._ready, timeout=timeout, interval=0.25, what=f"celery worker (log {self.log_path})")
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"celery worker exited with {self.proc.returncode}:\n{self.log()}")
        return " ready." in self.log()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def log_tail(self, chars: int = 6000) -> str:
        return f"--- worker log {self.log_path} (last {chars} chars) ---\n{self.log()[-chars:]}"

    def restart_if_exited(self) -> dict | None:
        """Start the worker again if it exited by itself, as a process supervisor would (compose's
        ``restart: unless-stopped``); return that exit (code, last error line of its log), else None."""
        if self.proc is None or self.proc.poll() is None:
            return None
        errors = [ln for ln in self.log().splitlines() if "Unrecoverable error" in ln or "Error" in ln]
        crash = {
            "exit": self.proc.returncode,
            "error": (errors or [""])[-1][-300:],
            "log": str(self.log_path),
        }
        self.start(wait=False)
        return crash

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


class PostgresServer:
    """A private PostgreSQL cluster: ``initdb`` + ``pg_ctl`` into a temporary directory, listening on a
    free 127.0.0.1 port (and a socket in that directory). Never the machine's shared server.

    Run as root, the commands run as the ``postgres`` user (initdb refuses root). ``stop(mode=...)``
    is ``pg_ctl stop -m fast`` (clean) or ``-m immediate`` (a crash: recovery on the next start).
    """

    def __init__(self) -> None:
        self.port = free_port()
        self.dir: Path | None = None
        self.up = False

    @staticmethod
    def unavailable_reason() -> str | None:
        """Why no private cluster can be made here (None when it can)."""
        for exe in ("initdb", "pg_ctl"):
            if shutil.which(exe) is None:
                return f"{exe} is not on PATH"
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and there is no 'postgres' user to run initdb as"
        return None

    def _run(self, *args: str, timeout: float = 60) -> None:
        assert self.dir is not None
        as_user = {"user": "postgres", "group": pwd.getpwnam("postgres").pw_gid} if os.geteuid() == 0 else {}
        done = subprocess.run(
            args, cwd=self.dir, capture_output=True, text=True, timeout=timeout, check=False, **as_user
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr[-2000:]}")

    @property
    def datadir(self) -> str:
        assert self.dir is not None
        return str(self.dir / "data")

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def init(self) -> PostgresServer:
        import tempfile

        self.dir = Path(tempfile.mkdtemp(prefix="pt-private-pg-"))
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", self.datadir, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        return self

    def start(self) -> PostgresServer:
        options = (
            # fsync=off only risks data on an OS crash; commits stay synchronous (WAL written before
            # COMMIT returns), so an immediate stop (a crash of PostgreSQL) loses no committed row.
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        )
        log = str(Path(self.datadir).parent / "postgres.log")
        self._run("pg_ctl", "-D", self.datadir, "-l", log, "-w", "-t", "60", "-o", options, "start")
        self.up = True
        return self

    def stop(self, mode: str = "fast") -> None:
        if self.up:
            self._run("pg_ctl", "-D", self.datadir, "-m", mode, "-w", "-t", "60", "stop")
            self.up = False

    def destroy(self) -> None:
        """Stop the cluster (if up) and delete its directory."""
        if self.dir is None:
            return
        try:
            self.stop(mode="immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


class StandinListenerServer(_ServerProcess):
    """The stand-in MemListener (``tests/workers/listener_server.py``: the real MemListener on the
    ``standin`` engine in ``derived`` mode, which writes ADD/UPDATE ops) behind the Ray Serve app's
    HTTP protocol, as its own process on a fixed 127.0.0.1 port. ``stop()`` SIGKILLs it (callers
    see connection refused, an outage); ``start()`` again serves on the same port."""

    URL = "http://127.0.0.1:{port}/memlistener"

    def __init__(self, workdir: Path, *, latency_ms: float = 150.0, mode: str = "derived") -> None:
        super().__init__(workdir)
        self.latency_ms = latency_ms
        self.mode = mode

    def start(self) -> StandinListenerServer:
        with (self.workdir / "listener.log").open("a") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.workers.listener_server",
                    "--port",
                    str(self.port),
                    "--latency-ms",
                    str(self.latency_ms),
                    "--mode",
                    self.mode,
                ],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

        def up() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"stand-in listener exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return True
            except OSError:
                return False

        wait_for(up, timeout=60, interval=0.1, what="stand-in listener")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None
