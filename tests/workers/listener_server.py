"""A stand-in MemListener HTTP server: ``python -m tests.workers.listener_server --port P``.

It speaks the Ray Serve app's protocol (``POST /memlistener`` with a ``ListenerBatch``, answered
with a ``ListenerBatchResult``; a malformed body is a 422) and runs the real MemListener (prompt,
parser, listener gate) on the ``standin`` engine (``serving/engines/standin.py``: clearly not a
model; in ``derived`` mode one ADD/UPDATE per chunk, so trees change) with a fixed sleep per
batch. One batch at a time, like one model replica. A batch holding a poison chunk (its text has
``POISON``) crashes: HTTP 500 for the whole batch. No Ray: it starts in about a second, so the
chaos soak can stop it and start it again many times. Used through
``tests.workers.processes.StandinListenerServer``.
"""

from __future__ import annotations

import argparse
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pydantic import ValidationError

from serving.config import EngineConfig
from serving.listener import build_listener
from serving.protocol import ListenerBatch, ListenerBatchResult
from tests.json_http import send_json

#: A batch holding a turn with this text crashes (the chaos soak's poison chunks, tests/soak).
POISON = "POISON-PILL"


def serve(port: int, *, latency_ms: float, mode: str) -> None:
    listener = build_listener(
        EngineConfig(kind="standin", standin_mode=mode, standin_latency_ms=latency_ms)  # type: ignore[arg-type]
    )
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                batch = ListenerBatch.model_validate_json(body)
            except ValidationError as exc:
                self._answer(422, b'{"error": "invalid batch", "detail": %s}' % exc.json().encode())
                return
            if any(POISON in turn.content for job in batch.jobs for turn in job.turns):
                self._answer(500, b'{"error": "engine crashed"}')  # a poison chunk takes its batch down
                return
            with lock:
                results = listener.run(batch.jobs)
            self._answer(200, ListenerBatchResult(results=results).model_dump_json().encode())

        def _answer(self, status: int, data: bytes) -> None:
            send_json(self, status, data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    httpd.daemon_threads = True
    print(f"stand-in memlistener on 127.0.0.1:{port} ({mode}, {latency_ms} ms per batch)", flush=True)
    httpd.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=150.0)
    parser.add_argument("--mode", choices=("derived", "no_op"), default="derived")
    args = parser.parse_args(argv)
    serve(args.port, latency_ms=args.latency_ms, mode=args.mode)


if __name__ == "__main__":
    main()
