"""The long hostile run: negative and unicode-heavy requests against a live server on PostgreSQL.

``python -m tests.fuzz.hostile_run --database-url postgres://postgres@127.0.0.1:5432/pt_fuzz --seconds 1500``

Same server and tenants as the contract's long run (:mod:`tests.fuzz.long_run`: migrate, two
tenants, gunicorn on 127.0.0.1 with the test settings), but ``st run --mode negative`` and, through
the hooks of :mod:`tests.fuzz.hostile`, positive requests whose values are made hostile (NUL, lone
surrogates, right-to-left and combining marks, 70,000-character strings, huge numbers, 400 levels
of nesting). Checks: ``not_a_server_error`` (the promise: no 5xx), ``content_type_conformance`` and
``status_code_conformance``. ``--results`` writes ``reliability.fuzz_*`` into
``bench/results/latest.json`` (re-read just before writing, other keys kept). Not in ``make test``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tests.fuzz.long_run import KEY_ENDS, ROOT, _env, finish, live_server, read_reports, tenants

CHECKS = ["not_a_server_error", "content_type_conformance", "status_code_conformance"]


def _st(url: str, key: str, env: dict, out: Path, seconds: int, mode: str, selection: list[str]):
    command = [
        str(ROOT / ".venv" / "bin" / "st"), "run", f"{url}/api/schema/?format=json",
        "-H", f"Authorization: Bearer {key}", "--checks", ",".join(CHECKS), "--mode", mode,
        "--generation-codec", "utf-8", "--generation-allow-x00", "true", "--max-time", str(seconds),
        "--workers", "4", "--request-timeout", "60", "--report", "ndjson", "--report-dir", str(out),
        "--no-color", "--continue-on-failure", *selection,
    ]  # fmt: skip
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    (out.parent / f"{out.name}.txt").write_text(run.stdout + run.stderr, encoding="utf-8")
    return read_reports(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--port", type=int, default=8473)
    parser.add_argument("--seconds", type=int, default=1500, help="Time for each of the two modes.")
    parser.add_argument("--key-seconds", type=int, default=60)
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "fuzz-hostile-run")
    parser.add_argument("--results", type=Path, default=None, help="bench/results/latest.json to update.")
    args = parser.parse_args()

    env = {**_env(args.database_url), "SCHEMATHESIS_HOOKS": "tests.fuzz.hostile"}
    stamp = time.strftime("%Y%m%d%H%M%S")
    keys = tenants(env, f"hostile-{stamp}")
    out, started, parts = args.out / stamp, time.monotonic(), []
    out.mkdir(parents=True, exist_ok=True)
    with live_server(env, args.port) as url:
        skip_ends = [arg for k in KEY_ENDS for arg in ("--exclude-name", k)]
        for mode in ("negative", "positive"):
            parts.append(_st(url, keys[0], env, out / mode, args.seconds, mode, skip_ends))
        only_ends = [arg for k in KEY_ENDS for arg in ("--include-name", k)]
        parts.append(_st(url, keys[1], env, out / "keys", args.key_seconds, "all", only_ends))
    failures = sum((Counter(p["failures"]) for p in parts), Counter())
    figures = {
        "reliability.fuzz_requests": sum(p["requests"] for p in parts),
        "reliability.fuzz_server_errors": failures.get("not_a_server_error", 0),
        "reliability.fuzz_failures_by_check": {name: failures.get(name, 0) for name in CHECKS},
        "reliability.fuzz_failing_operations": dict(
            sum((Counter(p["operations"]) for p in parts), Counter())
        ),
        "reliability.fuzz_seconds": round(time.monotonic() - started, 1),
        "reliability.fuzz_tool": "st run --mode negative and positive with tests/fuzz/hostile.py, 4 workers",
        "reliability.fuzz_load_average": os.getloadavg()[0],
    }
    print(json.dumps(figures, indent=2))
    return finish(figures, out, args.results, "reliability.fuzz_server_errors")


if __name__ == "__main__":
    sys.exit(main())
