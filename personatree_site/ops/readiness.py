"""Readiness checks (``/readyz``, docs/DEPLOY.md): database, broker, Milvus, MemListener, the network
ones side by side, each bounded by ``PERSONATREE_READYZ_TIMEOUT_S``. A failure reports a short error
*class* (``OperationalError``, ``HTTP 503``), never the message (it may hold a DSN, URL or path).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import connections

from memory import conf


class NotReady(Exception):
    """A check failed without an exception of its own; the message is a short, safe code."""


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | error | skipped
    required: bool
    ms: float = 0.0
    error: str = ""
    detail: str = ""  # a safe word: the backend name, or why a check was skipped

    def as_dict(self) -> dict:
        out = {"status": self.status, "required": self.required, "ms": round(self.ms, 2)}
        return out | {name: value for name in ("error", "detail") if (value := getattr(self, name))}


def _timeout() -> float:
    return conf.get().ops.readyz_timeout_s


def _run(name: str, fn: Callable[[], str], *, required: bool) -> Check:
    """Run ``fn`` (returns a safe detail word) and time it; an exception becomes its class name."""
    started = time.perf_counter()
    status, error, detail = "ok", "", ""
    try:
        detail = fn() or ""
    except NotReady as exc:
        status, error = "error", str(exc)
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"; only the class is reported
        status, error = "error", type(exc).__name__
    return Check(name, status, required, (time.perf_counter() - started) * 1000, error, detail)


def _skipped(name: str, why: str) -> Check:
    return Check(name, "skipped", False, detail=why)


def database_ping() -> str:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return connections["default"].vendor


def broker_ping() -> str:
    from kombu import Connection

    timeout = _timeout()
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout, "max_retries": 0}
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=timeout, transport_options=options) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout)
    return urlsplit(settings.CELERY_BROKER_URL).scheme


def milvus_ping() -> str:
    recall = conf.get().recall
    uri = recall.milvus_uri
    if "://" not in uri:
        # Milvus Lite: a file opened by one process at a time; opening it here would start a Lite
        # server in the web process. Ready when its directory exists and is writable.
        parent = Path(uri).parent
        if not parent.is_dir():
            raise NotReady("lite_dir_missing")
        if not os.access(parent, os.W_OK):
            raise NotReady("lite_dir_not_writable")
        return "lite"
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri, token=recall.milvus_token, timeout=_timeout())
    try:
        client.get_server_version()
    finally:
        client.close()
    return "server"


def memlistener_ping() -> str:
    typed = conf.get()
    backend = typed.listener.backend
    if backend == "local" and not Path(typed.models.model_path).is_file():
        raise NotReady("model_file_missing")
    if backend == "openai" and not (typed.models.base_url and typed.models.model):
        raise NotReady("not_configured")
    if backend != "ray":  # in process, or a local file / an OpenAI endpoint checked above
        return backend
    import httpx

    parts = urlsplit(typed.listener.url)  # the Serve proxy's /-/routes must list the app's route
    route = parts.path.rstrip("/") or "/"
    resp = httpx.get(urlunsplit((parts.scheme, parts.netloc, "/-/routes", "", "")), timeout=_timeout())
    if resp.status_code != 200:
        raise NotReady(f"HTTP {resp.status_code}")
    try:
        routes = resp.json()
    except ValueError as exc:
        raise NotReady("bad_reply") from exc
    if not isinstance(routes, dict) or route not in routes:
        raise NotReady("route_missing")
    return backend


def erasure_broker_problem() -> str | None:
    """Why an erasure cannot queue the purge of the subject's vectors now (the broker's error class),
    else None: a failed publish is only logged, so erasures ask first and refuse while it is down."""
    if settings.CELERY_TASK_ALWAYS_EAGER or not conf.get().recall.evidence_indexing:
        return None
    check = _run("broker", broker_ping, required=True)
    return None if check.status == "ok" else (check.error or "unreachable")


def run_checks() -> list[Check]:
    """Every check, in a fixed order: database, broker, milvus, memlistener."""
    try:
        typed: conf.Settings | None = conf.get()
    except conf.SettingsError:  # start-up refuses these; a probe still gets an answer (not ready)
        typed = None
    backend = typed.listener.backend if typed else "unknown"
    remote: dict[str, tuple[Callable[[], str], bool]] = {}
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        remote["broker"] = (broker_ping, True)
    if typed is not None and typed.recall.evidence_indexing:
        remote["milvus"] = (milvus_ping, False)
    remote["memlistener"] = (memlistener_ping, True)

    # The network checks run side by side; the database check stays on this thread (its connection).
    with ThreadPoolExecutor(max_workers=len(remote), thread_name_prefix="readyz") as pool:
        futures = {name: pool.submit(_run, name, fn, required=req) for name, (fn, req) in remote.items()}
        database = _run("database", database_ping, required=True)
        done = {name: f.result() for name, f in futures.items()}

    checks = [database, done.get("broker") or _skipped("broker", "eager")]
    checks.append(done.get("milvus") or _skipped("milvus", "indexing_off"))
    memlistener = done["memlistener"]
    checks.append(replace(memlistener, detail=backend) if memlistener.status == "error" else memlistener)
    return checks


def readiness() -> tuple[bool, dict]:
    """``(ready, body)``: ready when every required check passed."""
    checks = run_checks()
    ready = all(c.status != "error" for c in checks if c.required)
    body = {"status": "ok" if ready else "unavailable", "checks": {c.name: c.as_dict() for c in checks}}
    return ready, body
