"""MCP benchmark: one ``get_context`` fast call through the MCP server (stdio) against the REST call.

The API is the project's WSGI app in its own process (``bench_client.Server``: gunicorn, 1 sync
worker, scratch Postgres ``bench_pt_mcp``, test settings). The subject gets a tree of
``LEAVES`` public leaves through ``PUT .../tree/leaves/<path>``. The MCP server is
``python -m personatree_mcp`` started by the MCP SDK's own client over stdio, as an agent starts
it, with the key in its environment. Each round makes both calls back to back, which goes first
alternating:

- MCP: ``call_tool("get_context", {subject, query, mode: "fast"})`` on the open session (JSON-RPC
  over the pipe, the tool's pydantic argument check, the Python client's POST to the API over a
  keep-alive connection, the answer's JSON back);
- REST: ``POST /v1/subjects/<id>/context`` with a keep-alive ``httpx.AsyncClient``.

- ``mcp.context_ms``: median of the MCP call's wall time (target: <= 2x the REST median of the
  same run, which the note gives with the ratio).
- ``mcp.context_ratio``: median over the rounds of MCP time / REST time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import load_note, print_rows  # noqa: E402
from bench.scratch import scratch_db  # noqa: E402

SCRATCH_DB = os.environ.get("PERSONATREE_BENCH_MCP_DB", "bench_pt_mcp")
ROUNDS = 200
WARMUP = 10
LEAVES = 40
SUBJECT = "bench-mcp"
QUERY = "What does the user do for work and where do they live?"


def _api_key() -> str:
    from memory.services.keys import api_key_create
    from memory.services.subjects import tenant_create
    from memory.services.tree import Actor

    _key, raw = api_key_create(
        actor=Actor.system("bench"),
        tenant=tenant_create(name="bench-mcp"),
        scopes=["ingest", "read", "write"],
    )
    return raw


def _fill(url: str, key: str) -> int:
    """A tree of LEAVES public leaves, written through the API; returns the head version."""
    from personatree_client import PersonaTree

    from memory.engine.schema import default_schema

    paths = [leaf.path for leaf in default_schema().leaves if leaf.tier != "special"][:LEAVES]
    with PersonaTree(url, key) as pt:
        pt.ingest(SUBJECT, [{"role": "user", "content": "hello"}])
        leaf = None
        for i, path in enumerate(paths):
            leaf = pt.set_leaf(SUBJECT, path, f"value {i} of {path.rsplit('/', 1)[-1].replace('_', ' ')}")
    return leaf.version if leaf else 0


async def _measure(url: str, key: str) -> dict:
    import httpx
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    logging.getLogger("httpx").setLevel(logging.WARNING)

    env = {"PERSONATREE_URL": url, "PERSONATREE_API_KEY": key, "PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "personatree_mcp"], env=env, cwd=ROOT)
    args = {"subject": SUBJECT, "query": QUERY, "mode": "fast"}
    body = {"query": QUERY, "mode": "fast"}
    headers = {"Authorization": f"Bearer {key}"}
    mcp_ms, rest_ms, ratios = [], [], []
    async with Client(params) as mcp, httpx.AsyncClient(base_url=url, headers=headers) as http:

        async def via_mcp() -> float:
            started = time.perf_counter()
            result = await mcp.call_tool("get_context", args)
            elapsed = (time.perf_counter() - started) * 1000
            assert not result.is_error, result.content
            return elapsed

        async def via_rest() -> float:
            started = time.perf_counter()
            response = await http.post(f"/v1/subjects/{SUBJECT}/context", json=body)
            response.json()
            elapsed = (time.perf_counter() - started) * 1000
            assert response.status_code == 200, response.text
            return elapsed

        for _ in range(WARMUP):
            await via_mcp()
            await via_rest()
        for r in range(ROUNDS):
            if r % 2:
                rest = await via_rest()
                m = await via_mcp()
            else:
                m = await via_mcp()
                rest = await via_rest()
            mcp_ms.append(m)
            rest_ms.append(rest)
            ratios.append(m / rest)
    return {"mcp": mcp_ms, "rest": rest_ms, "ratios": ratios}


def run() -> dict[str, dict]:
    from bench.bench_client import Server

    with scratch_db(SCRATCH_DB) as connection:
        key = _api_key()
        server = Server(connection.settings_dict["NAME"])
        try:
            server.wait_ready()
            version = _fill(server.url, key)
            m = asyncio.run(_measure(server.url, key))
        finally:
            server.stop()
    mcp_p50, rest_p50 = statistics.median(m["mcp"]), statistics.median(m["rest"])
    ratio = statistics.median(m["ratios"])
    p90 = statistics.quantiles(m["mcp"], n=10)[-1]
    load = load_note()
    setup = (
        f"{ROUNDS} rounds after {WARMUP} warm-up, order alternating; API {server.kind} on 127.0.0.1, "
        f"{LEAVES}-leaf tree (version {version}), keep-alive"
    )
    return {
        "mcp.context_ms": {
            "value": round(mcp_p50, 3),
            "unit": "ms",
            "target": f"<= {2 * rest_p50:.2f} (2x REST)",
            "note": f"median get_context mode=fast through python -m personatree_mcp over stdio (MCP SDK "
            f"client); REST POST .../context median in the same run {rest_p50:.2f} ms (MCP/REST "
            f"{mcp_p50 / rest_p50:.2f}x); MCP p90 {p90:.2f} ms; {setup}; {load}",
        },
        "mcp.context_ratio": {
            "value": round(ratio, 3),
            "unit": "ratio",
            "target": "<= 2",
            "note": f"median over {ROUNDS} rounds of MCP time / REST time for the same fast context call "
            f"(range {min(m['ratios']):.2f} .. {max(m['ratios']):.2f}); {load}",
        },
    }


if __name__ == "__main__":
    print_rows(run())
