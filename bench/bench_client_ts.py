"""TypeScript client benchmark: ``PersonaTree.tree()`` against raw ``fetch`` in the same node run.

The API is the project's WSGI app in its own process (``bench_client.Server``: gunicorn, 1 sync
worker, scratch Postgres ``bench_pt_client_ts``, test settings); the subject gets the same tree as
``bench_mcp`` (its leaves written through the API). ``clients/typescript`` is built (``npm ci``
only when ``node_modules`` is missing or older than the lock, then ``tsc``), and
``clients/typescript/bench/overhead.mjs`` makes, per round, ``CALLS`` ``GET .../tree`` calls
through the client (URL building, headers, timeout signal, status check, JSON parse) and
``CALLS`` through ``fetch`` + ``response.json()``, which goes first alternating, on node's
keep-alive connection pool.

- ``client_ts.overhead_ratio``: median over the rounds of client time / raw fetch time - 1
  (target <= 0.10); the note gives the range, the whole run's ratio, the per-call medians, and
  the client's own cost per call against a canned answer (no server) as a share of a raw call:
  the steadiest figure on a loaded machine, where single rounds swing by tens of percent.

Skipped (no rows) where node or npm is missing.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import load_note, print_rows  # noqa: E402
from bench.scratch import scratch_db  # noqa: E402

CLIENT = ROOT / "clients" / "typescript"
SCRATCH_DB = os.environ.get("PERSONATREE_BENCH_CLIENT_TS_DB", "bench_pt_client_ts")
ROUNDS = 100
CALLS = 10


def build() -> None:
    """``npm ci`` when node_modules is missing or older than the lock file, then ``npm run build``."""
    marker = CLIENT / "node_modules" / ".package-lock.json"
    if not marker.exists() or marker.stat().st_mtime < (CLIENT / "package-lock.json").stat().st_mtime:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=CLIENT, check=True, capture_output=True)
    subprocess.run(["npm", "run", "build"], cwd=CLIENT, check=True, capture_output=True)


def _measure(url: str, key: str, subject: str) -> dict:
    env = {
        **os.environ,
        "PERSONATREE_URL": url,
        "PERSONATREE_API_KEY": key,
        "BENCH_SUBJECT": subject,
        "BENCH_ROUNDS": str(ROUNDS),
        "BENCH_CALLS": str(CALLS),
    }
    done = subprocess.run(
        ["node", "bench/overhead.mjs"], cwd=CLIENT, env=env, check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout)


def run() -> dict[str, dict]:
    if shutil.which("node") is None or shutil.which("npm") is None:
        print("bench_client_ts: node/npm not installed, skipped")
        return {}
    from bench.bench_client import Server
    from bench.bench_mcp import SUBJECT, _api_key, _fill

    logging.getLogger("httpx").setLevel(logging.WARNING)
    build()
    with scratch_db(SCRATCH_DB) as connection:
        key = _api_key()
        server = Server(connection.settings_dict["NAME"])
        try:
            server.wait_ready()
            _fill(server.url, key)
            m = _measure(server.url, key, SUBJECT)
        finally:
            server.stop()
    ratios = [c / r - 1 for c, r in zip(m["client"], m["raw"], strict=True)]
    overhead = statistics.median(ratios)
    whole = sum(m["client"]) / sum(m["raw"]) - 1
    client_ms = statistics.median(m["client"]) / CALLS
    raw_ms = statistics.median(m["raw"]) / CALLS
    own_ms = m["cannedClientMs"] - m["cannedRawMs"]
    load = load_note()
    return {
        "client_ts.overhead_ratio": {
            "value": round(overhead, 4),
            "unit": "ratio",
            "target": "<= 0.10",
            "note": f"median over {ROUNDS} rounds of {CALLS} GET .../tree calls: PersonaTree.tree() time / "
            f"raw fetch + json() time - 1, same node {m['node']} process, which goes first alternating "
            f"(rounds range {min(ratios):+.3f} .. {max(ratios):+.3f}; whole run {whole:+.3f}); per call "
            f"median client {client_ms:.2f} ms, raw {raw_ms:.2f} ms; the client's own cost without a server "
            f"(canned answer) {own_ms * 1000:.0f} us a call, {own_ms / raw_ms:+.4f} of a raw call; "
            f"127.0.0.1, {server.kind}; {load}",
        },
    }


if __name__ == "__main__":
    print_rows(run())
