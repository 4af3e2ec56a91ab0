"""Fixtures of the serving tests: schemas, jobs, a recording and a tiny local HTTP server."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memory.engine.schema import default_schema, load_schema
from tests.json_http import send_json
from tests.serving.jobs import make_job  # noqa: F401  (the serving tests import it from here)

RECORDINGS = Path(__file__).resolve().parent.parent / "fixtures" / "recordings"
TINY_SCHEMA_PATH = RECORDINGS / "tiny_schema.json"
CHUNKS_PATH = RECORDINGS / "chunks.json"
RECORDING_PATH = RECORDINGS / "memlistener.jsonl"


@pytest.fixture(scope="session")
def tiny_schema():
    return load_schema(TINY_SCHEMA_PATH)


@pytest.fixture(scope="session")
def schema():
    return default_schema()


@pytest.fixture(scope="session")
def chunks():
    """Small dialogues written for these tests (tests/fixtures/recordings/chunks.json)."""
    return json.loads(CHUNKS_PATH.read_text(encoding="utf-8"))


class ScriptedHTTPServer:
    """A real HTTP server on 127.0.0.1 that answers each POST with the next scripted reply.

    A reply is ``(status, json_body, delay_s)``; the requests received are kept in ``requests``.
    """

    def __init__(self) -> None:
        self.replies: deque[tuple[int, dict, float]] = deque()
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                outer.requests.append({"path": self.path, "json": json.loads(body or b"null")})
                status, payload, delay = (
                    outer.replies.popleft() if outer.replies else (500, {"error": "no reply"}, 0)
                )
                if delay:
                    time.sleep(delay)
                send_json(self, status, json.dumps(payload).encode())

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def reply(self, status: int, body: dict, delay_s: float = 0.0) -> None:
        self.replies.append((status, body, delay_s))


@pytest.fixture
def http_server():
    server = ScriptedHTTPServer()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture(scope="module")
def syntax():
    """One spaCy syntax step (the pipeline loads on first use)."""
    from serving.syntax import SyntaxStep

    return SyntaxStep()
