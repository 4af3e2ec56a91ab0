"""PersonaTree's MCP server: the memory API as Model Context Protocol tools for agents.

Every tool is one call of the REST API made with the Python client (``personatree_client``) under
the caller's own API key, so scopes, the tenant rule and special-tier masking are the API's, never
a second copy here. ``python -m personatree_mcp`` serves stdio (the key from
``$PERSONATREE_API_KEY``) or streamable HTTP (``--transport http``: each MCP request brings its key
as ``Authorization: Bearer ...``). docs/MCP.md says how to add it to an agent.
"""

from personatree_mcp.server import build_server

__all__ = ["build_server"]
