"""/readyz: every check with status and milliseconds; 503 with a clear body when a required one fails;
never a URL, host, password or path in the body."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError

from personatree_site.ops import readiness

SECRET = "s3cret-pw"


def _body(resp) -> dict:
    assert resp["Content-Type"] == "application/json"
    return resp.json()


def _assert_nothing_sensitive(resp, *words: str) -> None:
    text = resp.content.decode()
    for word in (SECRET, "127.0.0.1", "http://", "redis://", "postgres://", "/var/", "/tmp", *words):
        assert word not in text, f"{word!r} leaked: {text}"


def test_ready_on_the_test_settings(probe, db):
    resp = probe.get("/readyz")
    assert resp.status_code == 200, resp.content
    body = _body(resp)
    assert body["status"] == "ok"
    checks = body["checks"]
    assert list(checks) == ["database", "broker", "milvus", "memlistener"]
    assert checks["database"]["status"] == "ok" and checks["database"]["required"] is True
    assert isinstance(checks["database"]["ms"], float)
    assert checks["broker"] == {"status": "skipped", "required": False, "ms": 0.0, "detail": "eager"}
    assert checks["milvus"]["status"] == "skipped"
    assert checks["memlistener"]["status"] == "ok" and checks["memlistener"]["detail"] == "recorded"


def test_database_failure_is_a_503_naming_the_check(probe, db, monkeypatch):
    class BrokenConnections:
        def __getitem__(self, alias):
            raise OperationalError(f"connection to server at 127.0.0.1 failed: password={SECRET}")

    monkeypatch.setattr(readiness, "connections", BrokenConnections())
    resp = probe.get("/readyz")
    assert resp.status_code == 503
    body = _body(resp)
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["status"] == "error"
    assert body["checks"]["database"]["error"] == "OperationalError"
    assert body["checks"]["memlistener"]["status"] == "ok"
    _assert_nothing_sensitive(resp)


def test_unreachable_ray_memlistener_is_a_503(probe, db, personatree, closed_port):
    personatree["MEMLISTENER_BACKEND"] = "ray"
    personatree["MEMLISTENER_URL"] = f"http://ops:{SECRET}@127.0.0.1:{closed_port}/memlistener"
    personatree["READYZ_TIMEOUT_S"] = 0.5
    resp = probe.get("/readyz")
    assert resp.status_code == 503
    check = _body(resp)["checks"]["memlistener"]
    assert check["status"] == "error" and check["required"] is True
    assert check["detail"] == "ray"
    assert check["error"] == "ConnectError"
    _assert_nothing_sensitive(resp, str(closed_port), "/memlistener")


def test_ray_serve_without_the_app_route_is_not_ready(db, personatree, monkeypatch):
    import httpx

    personatree["MEMLISTENER_BACKEND"] = "ray"
    personatree["MEMLISTENER_URL"] = "http://ray-head:8000/memlistener"
    seen = []

    def fake_get(url, timeout):
        seen.append((url, timeout))
        return httpx.Response(200, json={"/other": "other-app"})

    monkeypatch.setattr(httpx, "get", fake_get)
    ready, body = readiness.readiness()
    assert not ready and body["checks"]["memlistener"]["error"] == "route_missing"
    assert seen == [("http://ray-head:8000/-/routes", 1.0)]

    monkeypatch.setattr(httpx, "get", lambda url, timeout: httpx.Response(200, json={"/memlistener": "app"}))
    ready, body = readiness.readiness()
    assert ready, body


def test_local_backend_needs_its_model_file(db, personatree, tmp_path):
    personatree["MEMLISTENER_BACKEND"] = "local"
    personatree["LOCAL_MODEL_PATH"] = str(tmp_path / "missing.gguf")
    ready, body = readiness.readiness()
    assert not ready
    assert body["checks"]["memlistener"]["error"] == "model_file_missing"
    assert str(tmp_path) not in json.dumps(body)
    (tmp_path / "missing.gguf").write_bytes(b"GGUF")
    assert readiness.readiness()[0]


def test_openai_backend_needs_configuration(db, personatree):
    personatree["MEMLISTENER_BACKEND"] = "openai"
    personatree["OPENAI_BASE_URL"] = ""
    assert readiness.readiness()[1]["checks"]["memlistener"]["error"] == "not_configured"
    personatree["OPENAI_BASE_URL"] = "http://llm:8000/v1"
    personatree["OPENAI_MODEL"] = "m"
    assert readiness.readiness()[0]


def test_broker_is_checked_when_celery_is_not_eager(probe, db, settings, closed_port):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    resp = probe.get("/readyz")
    assert resp.status_code == 200, resp.content
    assert _body(resp)["checks"]["broker"]["status"] == "ok"

    settings.CELERY_BROKER_URL = f"redis://:{SECRET}@127.0.0.1:{closed_port}/0"
    resp = probe.get("/readyz")
    assert resp.status_code == 503
    broker = _body(resp)["checks"]["broker"]
    assert broker["status"] == "error" and broker["required"] is True and broker["error"]
    _assert_nothing_sensitive(resp, str(closed_port))


def test_milvus_is_reported_but_not_required(db, personatree, closed_port):
    personatree["EVIDENCE_INDEXING"] = True
    personatree["MILVUS_URI"] = f"http://127.0.0.1:{closed_port}"
    personatree["MILVUS_TOKEN"] = f"root:{SECRET}"
    ready, body = readiness.readiness()
    milvus = body["checks"]["milvus"]
    assert milvus["status"] == "error" and milvus["required"] is False
    assert ready, "deep recall falls back to fast mode: Milvus alone does not take the API out"
    assert SECRET not in json.dumps(body) and str(closed_port) not in json.dumps(body)


@pytest.mark.parametrize("exists", [True, False])
def test_milvus_lite_is_a_directory_check(db, personatree, tmp_path, exists):
    personatree["EVIDENCE_INDEXING"] = True
    personatree["MILVUS_URI"] = str((tmp_path if exists else tmp_path / "gone") / "milvus.db")
    milvus = readiness.readiness()[1]["checks"]["milvus"]
    assert milvus["status"] == ("ok" if exists else "error")
    assert str(tmp_path) not in json.dumps(milvus)


@pytest.fixture
def serve_proxy():
    """A stand-in Ray Serve proxy on 127.0.0.1: ``/-/routes`` answers what the test sets."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    reply = {"status": 200, "body": {"/memlistener": "memlistener"}}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            status = reply["status"] if self.path == "/-/routes" else 404
            data = json.dumps(reply["body"]).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], reply
    finally:
        server.shutdown()
        server.server_close()


def test_ray_backend_asks_the_serve_proxy_for_the_app_route(probe, db, personatree, serve_proxy):
    port, reply = serve_proxy
    personatree["MEMLISTENER_BACKEND"] = "ray"
    personatree["MEMLISTENER_URL"] = f"http://127.0.0.1:{port}/memlistener"
    resp = probe.get("/readyz")
    assert resp.status_code == 200, resp.content
    assert _body(resp)["checks"]["memlistener"]["status"] == "ok"

    reply.update(status=503, body="This node is being drained.")
    resp = probe.get("/readyz")
    assert resp.status_code == 503
    assert _body(resp)["checks"]["memlistener"]["error"] == "HTTP 503"
    _assert_nothing_sensitive(resp, str(port))
