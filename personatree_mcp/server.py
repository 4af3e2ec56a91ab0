"""The MCP tools: each one is one call of the PersonaTree REST API under the caller's key.

The API decides everything a key may do (scopes ``ingest``/``read``/``write``/``read_special``, the
tenant from the key, special-tier leaves and raw evidence masked without ``read_special``); a tool
only maps its arguments to the Python client and the API's JSON answer back. An API error becomes
a tool error the model can read (``403 permission_denied: ...``), never a crash of the server.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from personatree_client import AsyncPersonaTree
from personatree_client.errors import PersonaTreeError
from pydantic import BaseModel, Field

from personatree_mcp.keys import ClientPool

T = TypeVar("T")
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

INSTRUCTIONS = (
    "Long-term memory of the people you talk with (PersonaTree). Each person is a 'subject' (your "
    "app's user id). Call get_context with the user's question before answering; call remember with "
    "the new turns of the conversation (the memory updates in the background, seconds later); use "
    "set_leaf / forget_leaf only when the user asks you to change or forget something."
)

Subject = Annotated[str, Field(min_length=1, max_length=200, description="The subject's external id.")]
LeafPath = Annotated[
    str, Field(min_length=1, description="A leaf of the schema, e.g. identity/location/city.")
]
BaseVersion = Annotated[
    int | None, Field(ge=0, description="Refuse the write if the tree moved past this version.")
]


class MessageIn(BaseModel):
    """One turn to remember."""

    role: Literal["user", "assistant", "system"]
    content: str = Field(min_length=1)
    ts: str | None = Field(default=None, description="When it was said, ISO 8601 (default: now).")
    idempotency_key: str | None = Field(
        default=None, description="Your message id: sending it again is reported as a duplicate."
    )
    session_id: str = ""


async def _api(call: Awaitable[T]) -> T:
    """Await one client call; the API's refusals become tool errors worded as the API's."""
    try:
        return await call
    except PersonaTreeError as exc:
        raise ToolError(str(exc)) from exc


def build_server(pool: ClientPool, *, log_level: LogLevel = "WARNING") -> MCPServer:
    """The MCP server whose tools call the API at ``pool.base_url`` (see :class:`ClientPool`)."""
    server: MCPServer = MCPServer(
        "personatree", instructions=INSTRUCTIONS, version="0.1.0", log_level=log_level
    )

    def client(ctx: Context) -> AsyncPersonaTree:
        return pool.for_headers(ctx.headers)

    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, open_world_hint=False))
    async def remember(subject: Subject, messages: list[MessageIn], ctx: Context) -> dict[str, Any]:
        """Append conversation turns to the subject's memory (API scope ingest). The tree is updated
        from them in the background; get_context reflects them once applied."""
        sent = [m.model_dump(exclude_none=True) for m in messages]
        result = await _api(client(ctx).ingest(subject, sent))
        return {
            "subject": result.subject,
            "subject_created": result.subject_created,
            "accepted": len(result.accepted),
            "duplicates": len(result.duplicates),
            "cursor": result.cursor,
            "chunks_created": result.chunks_created,
        }

    @server.tool(annotations=read_only)
    async def get_context(
        subject: Subject,
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        ctx: Context,
        mode: Literal["fast", "deep", "auto"] = "auto",
        token_budget: Annotated[int | None, Field(ge=1, le=32000)] = None,
    ) -> dict[str, Any]:
        """What the memory holds that bears on `query` (API scope read): fast = the profile tree,
        deep = the tree plus past dialogue (keys with read_special), auto = the server decides."""
        got = await _api(client(ctx).context(subject, query, mode=mode, token_budget=token_budget))
        return got.raw

    @server.tool(annotations=read_only)
    async def get_tree(
        subject: Subject, ctx: Context, as_of: Annotated[int | None, Field(ge=0)] = None
    ) -> dict[str, Any]:
        """The subject's whole profile tree, {leaf path: value}, at its head or at version `as_of`."""
        return (await _api(client(ctx).tree(subject, as_of=as_of))).raw

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True, open_world_hint=False))
    async def set_leaf(
        subject: Subject, path: LeafPath, value: str, ctx: Context, base_version: BaseVersion = None
    ) -> dict[str, Any]:
        """Set one leaf (API scope write), through the server's gate and audit log; status
        pending_review when the tenant holds such edits for a moderator."""
        return (await _api(client(ctx).set_leaf(subject, path, value, base_version=base_version))).raw

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False))
    async def forget_leaf(
        subject: Subject, path: LeafPath, ctx: Context, base_version: BaseVersion = None
    ) -> dict[str, Any]:
        """Empty one leaf (API scope write), audited; the old value stays in the version history."""
        return (await _api(client(ctx).delete_leaf(subject, path, base_version=base_version))).raw

    @server.tool(annotations=read_only)
    async def search_memories(
        subject: Subject,
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        ctx: Context,
        prefix: Annotated[str | None, Field(description="Only leaves under this path, e.g. health/")] = None,
        since: Annotated[str | None, Field(description="ISO 8601: only what was said or set since")] = None,
        until: Annotated[str | None, Field(description="ISO 8601: only what was said or set until")] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """Ranked leaf values and past-dialogue evidence matching `query` (API scope read; evidence
        only for keys with read_special), optionally under a leaf prefix and in a time range."""
        got = await _api(
            client(ctx).search(subject, query, prefix=prefix, since=since, until=until, limit=limit)
        )
        return got.raw

    return server
