"""The MCP server (personatree_mcp) driven by the MCP SDK's own client against a live API server.

stdio: the server runs as ``python -m personatree_mcp`` (a subprocess, as an agent starts it) with
the key in its environment. Streamable HTTP: ``python -m personatree_mcp --transport http`` on a
free port, each request carrying its key. The API behind it is ``api_server``
(tests/client/conftest.py: the project on the test database, stand-in MemListener, eager Celery).
What a key may do is the API's rule; these tests check the MCP tools pass it through unchanged:
scopes, the tenant of the key, special-tier masking.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from personatree_client import PersonaTree

from memory.models import Subject
from tests.factories import TenantFactory
from tests.memory.recall.conftest import put_version
from tests.ray_serve import free_port

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"remember", "get_context", "get_tree", "set_leaf", "forget_leaf", "search_memories"}


def stdio_params(base_url: str, key: str) -> StdioServerParameters:
    env = {"PERSONATREE_URL": base_url, "PERSONATREE_API_KEY": key, "PYTHONPATH": str(ROOT)}
    return StdioServerParameters(command=sys.executable, args=["-m", "personatree_mcp"], env=env, cwd=ROOT)


def data(result) -> dict:
    """A tool's JSON answer (its structured content, else the text it returned)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error, result
    return result.content[0].text


def test_stdio_session_remember_read_write_search(base_url, make_key):
    tenant = TenantFactory()
    key = make_key(["ingest", "read", "write"], tenant=tenant)

    async def session():
        async with Client(stdio_params(base_url, key)) as mcp:
            assert {t.name for t in (await mcp.list_tools()).tools} == TOOLS
            got = data(
                await mcp.call_tool(
                    "remember",
                    {
                        "subject": "ana",
                        "messages": [
                            {"role": "user", "content": "I work as a nurse at the city hospital."},
                            {"role": "assistant", "content": "Noted."},
                        ],
                    },
                )
            )
            assert (got["accepted"], got["subject_created"], got["cursor"]) == (2, True, 2)
            with PersonaTree(base_url, key) as pt:  # the idle flush, done now
                pt.wait_until_applied("ana", timeout=30)
            tree = data(await mcp.call_tool("get_tree", {"subject": "ana"}))
            assert tree["subject"] == "ana" and tree["version"] >= 1

            written = data(
                await mcp.call_tool(
                    "set_leaf",
                    {"subject": "ana", "path": "identity/location/current_city", "value": "Lisbon"},
                )
            )
            assert written["status"] == "applied" and written["value"] == "Lisbon"
            ctx = data(
                await mcp.call_tool(
                    "get_context", {"subject": "ana", "query": "where do I live", "mode": "fast"}
                )
            )
            assert ctx["mode_used"] == "fast" and "Lisbon" in ctx["context"]["text"]
            found = data(await mcp.call_tool("search_memories", {"subject": "ana", "query": "which city"}))
            assert found["leaves"][0]["path"] == "identity/location/current_city"
            assert found["evidence_status"] == "withheld"  # the key has no read_special

            gone = data(
                await mcp.call_tool(
                    "forget_leaf", {"subject": "ana", "path": "identity/location/current_city"}
                )
            )
            assert gone["value"] is None
            again = await mcp.call_tool(
                "forget_leaf", {"subject": "ana", "path": "identity/location/current_city"}
            )
            assert "404 leaf_empty" in error_text(again)

    asyncio.run(session())


def test_stdio_tools_keep_the_apis_scopes_tenant_and_masking(base_url, make_key):
    tenant = TenantFactory()
    make_key(["ingest"], tenant=tenant)
    with PersonaTree(base_url, make_key(["ingest", "read"], tenant=tenant)) as pt:
        pt.ingest("bo", [{"role": "user", "content": "hello"}])
    subject = Subject.objects.get(tenant=tenant, external_id="bo")
    put_version(subject, {"body/health/injuries": "knee pain", "behaviour/habits/exercise": "swimming"})
    read_only = make_key(["read"], tenant=tenant)
    foreign = make_key(["read", "read_special", "write"])  # a key of another tenant

    async def session():
        async with Client(stdio_params(base_url, read_only)) as mcp:
            tree = data(await mcp.call_tool("get_tree", {"subject": "bo"}))["tree"]
            assert tree == {"behaviour/habits/exercise": "swimming"}  # the special leaf is masked
            ctx = data(
                await mcp.call_tool("get_context", {"subject": "bo", "query": "injuries", "mode": "fast"})
            )
            assert "knee" not in ctx["context"]["text"]
            deep = data(await mcp.call_tool("get_context", {"subject": "bo", "query": "why", "mode": "deep"}))
            assert deep["recall"]["status"] == "withheld" and deep["evidence"] == []
            denied = await mcp.call_tool(
                "set_leaf", {"subject": "bo", "path": "behaviour/habits/exercise", "value": "running"}
            )
            assert "403" in error_text(denied) and "write" in error_text(denied)
            special = await mcp.call_tool(
                "set_leaf", {"subject": "bo", "path": "body/health/injuries", "value": "none"}
            )
            assert "403 " in error_text(special)
            bad = await mcp.call_tool("get_context", {"subject": "bo", "query": "x", "mode": "sideways"})
            assert bad.is_error  # the tool's own argument check, before any API call
        async with Client(stdio_params(base_url, foreign)) as mcp:
            missing = await mcp.call_tool("get_tree", {"subject": "bo"})
            assert "404 " in error_text(missing)  # another tenant's subject does not exist for it

    asyncio.run(session())


@pytest.fixture
def mcp_http(base_url):
    """``python -m personatree_mcp --transport http`` on a free port; yields its /mcp URL."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "personatree_mcp",
            "--transport",
            "http",
            "--port",
            str(port),
            "--url",
            base_url,
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP HTTP server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_streamable_http_runs_each_request_under_its_own_key(base_url, make_key, mcp_http):
    tenant_a, tenant_b = TenantFactory(), TenantFactory()
    key_a = make_key(["ingest", "read", "write"], tenant=tenant_a)
    key_b = make_key(["read"], tenant=tenant_b)
    with PersonaTree(base_url, key_a) as pt:
        pt.ingest("cy", [{"role": "user", "content": "hello"}])
        pt.set_leaf("cy", "behaviour/habits/exercise", "rowing")

    async def as_key(key: str, tool: str, args: dict):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            async with Client(streamable_http_client(mcp_http, http_client=http)) as mcp:
                return await mcp.call_tool(tool, args)

    async def session():
        own = data(await as_key(key_a, "get_tree", {"subject": "cy"}))
        assert own["tree"] == {"behaviour/habits/exercise": "rowing"}
        other = await as_key(key_b, "get_tree", {"subject": "cy"})
        assert "404 " in error_text(other)
        wrong = await as_key("pt_live_00000000_nope", "get_tree", {"subject": "cy"})
        assert "401 " in error_text(wrong)

    asyncio.run(session())
    no_key = httpx.post(mcp_http, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert no_key.status_code == 401 and no_key.headers["www-authenticate"].startswith("Bearer")
