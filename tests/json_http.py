"""Shared pieces of the tests' small HTTP servers (http.server handlers)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


def send_json(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    """Answer ``data`` (JSON bytes) with ``status``; a client that hung up is not an error."""
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
