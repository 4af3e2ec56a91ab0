"""``python -m personatree_mcp``: serve the MCP tools over stdio (default) or streamable HTTP.

stdio (an agent starts it as a subprocess): ``PERSONATREE_URL`` and ``PERSONATREE_API_KEY`` name
the API and the key every tool call runs under. Streamable HTTP (``--transport http``, endpoint
``/mcp``): the server holds no key; each request must carry ``Authorization: Bearer <API key>``
(answered 401 otherwise) and runs under that key.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio

from personatree_mcp.keys import ClientPool, bearer_key
from personatree_mcp.server import build_server

DEFAULT_URL = "http://127.0.0.1:8008"


class RequireBearer:
    """ASGI wrapper: an HTTP request without a bearer key is a 401 before it reaches MCP (the key
    itself is checked by the API on the first tool call)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            if not bearer_key(headers):
                body = json.dumps({"error": "send the PersonaTree API key as 'Authorization: Bearer <key>'"})
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="personatree-mcp"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)


def http_app(url: str, *, host: str = "127.0.0.1") -> RequireBearer:
    """The streamable-HTTP ASGI app (stateless, JSON answers) behind :class:`RequireBearer`."""
    server = build_server(ClientPool(url))
    app = server.streamable_http_app(stateless_http=True, json_response=True, host=host)
    return RequireBearer(app)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m personatree_mcp", description=__doc__.split("\n")[0])
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--url", default=os.environ.get("PERSONATREE_URL", DEFAULT_URL), help="the API")
    parser.add_argument("--host", default="127.0.0.1", help="http: address to bind")
    parser.add_argument("--port", type=int, default=8765, help="http: port to bind")
    args = parser.parse_args(argv)
    if args.transport == "stdio":
        key = os.environ.get("PERSONATREE_API_KEY")
        if not key:
            print("PERSONATREE_API_KEY is required for the stdio transport", file=sys.stderr)
            return 2
        server = build_server(ClientPool(args.url, api_key=key))
        anyio.run(server.run_stdio_async)
        return 0
    import uvicorn

    uvicorn.run(http_app(args.url, host=args.host), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
