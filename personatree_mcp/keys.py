"""Which API key a tool call runs under, and one API client per key.

stdio: the one key the server was started with (``$PERSONATREE_API_KEY``). Streamable HTTP: the
key the MCP request carries (``Authorization: Bearer <key>``); the server holds none of its own,
so a key reaches exactly what it reaches over REST. Checking the key is the API's job: this module
only carries it. Clients are kept per key (bounded, least recently used dropped) so their
connections to the API are reused across calls.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping

from mcp.server.mcpserver.exceptions import ToolError
from personatree_client import AsyncPersonaTree

#: Distinct keys whose clients stay open (an HTTP server shared by many agents).
MAX_CLIENTS = 64


def bearer_key(headers: Mapping[str, str] | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, or None."""
    value = (headers or {}).get("authorization", "")
    scheme, _, key = value.partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


class ClientPool:
    """API clients of one server: a fixed key (stdio) or the request's key (HTTP)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.base_url = base_url
        self.fixed_key = api_key
        self.timeout = timeout
        self._clients: OrderedDict[str, AsyncPersonaTree] = OrderedDict()

    def for_headers(self, headers: Mapping[str, str] | None) -> AsyncPersonaTree:
        """The client for this call's key; a ToolError (the model reads it) when there is none."""
        key = self.fixed_key or bearer_key(headers)
        if not key:
            raise ToolError(
                "401 not_authenticated: send the PersonaTree API key as 'Authorization: Bearer <key>'."
            )
        slot = hashlib.sha256(key.encode()).hexdigest()
        client = self._clients.get(slot)
        if client is None:
            client = AsyncPersonaTree(self.base_url, key, timeout=self.timeout)
            self._clients[slot] = client
            while len(self._clients) > MAX_CLIENTS:
                # its connections close when it is collected; a call in flight on it still finishes
                self._clients.popitem(last=False)
        else:
            self._clients.move_to_end(slot)
        return client

    async def aclose(self) -> None:
        while self._clients:
            _, client = self._clients.popitem()
            await client.aclose()
