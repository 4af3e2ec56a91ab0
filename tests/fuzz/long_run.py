"""The contract's long run: schemathesis's command line against a live server on PostgreSQL.

``python -m tests.fuzz.long_run --database-url postgres://postgres@127.0.0.1:5432/pt_contract``

Migrates that database, creates a tenant with an all-scope key (and a second tenant, so that
isolation is exercised by ids of both), starts gunicorn on 127.0.0.1 (test settings: the recorded
MemListener, eager Celery, no API rate limit; no request-line limit, so that an over-long URL
reaches the API's own JSON 400 instead of gunicorn's HTML 414) and runs ``st run`` over the schema it serves, in two
parts: every operation but a key's rotation and revocation, for ``--seconds`` (examples, coverage,
fuzzing and the stateful phase along the document's links); then those two, on their own key.
Checks: ``not_a_server_error``, ``status_code_conformance``, ``content_type_conformance``,
``response_schema_conformance`` and ``positive_data_acceptance`` (as
``positive_data_acceptance_or_listed``: the refusals an operation lists in ``x-refusals`` apart,
tests/fuzz/contract.py). The NDJSON reports are read back: requests sent, failures by check.
``--results`` writes ``api.fuzz_requests``, ``api.contract_failures`` and the breakdown into
``bench/results/latest.json`` (other keys kept).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
PY = str(ROOT / ".venv" / "bin" / "python")
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "positive_data_acceptance_or_listed",
]
# a key's rotation and revocation end the key they run on: they run last, on a key of their own
KEY_ENDS = ["POST /v1/keys/{prefix}/rotate", "DELETE /v1/keys/{prefix}"]
EVERY_SCOPE = ["--scopes", "ingest", "read", "read_special", "write", "admin", "erase"]


def _env(database_url: str) -> dict:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
        "DATABASE_URL": database_url,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "SCHEMATHESIS_HOOKS": "tests.fuzz.contract",
        "PYTHONPATH": str(ROOT),
    }


def manage(env: dict, *args: str) -> str:
    """Run a management command; the API key it printed (stdout or stderr), if any."""
    done = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    keys = re.findall(r"pt_live_[A-Za-z0-9_-]{20,}", done.stdout + done.stderr)
    return keys[-1] if keys else ""


def tenants(env: dict, name: str) -> tuple[str, str]:
    """Migrate; tenant ``name`` with two all-scope keys (the run's, and one for the key ends, which
    end the key they run on) and a second tenant, so that isolation is exercised by ids of both."""
    manage(env, "migrate", "--noinput")
    key = manage(env, "create_tenant", name, *EVERY_SCOPE)
    end_key = manage(env, "create_tenant", name, "--existing", *EVERY_SCOPE)
    manage(env, "create_tenant", f"{name}-other", "--scopes", "ingest", "read")
    return key, end_key


@contextmanager
def live_server(env: dict, port: int) -> Iterator[str]:
    """gunicorn (3 workers x 4 threads, no request-line limit) on 127.0.0.1:``port``; yields its URL
    once it serves the schema, and stops it by its PID on exit."""
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "gunicorn"), "personatree_site.wsgi:application", "-b", f"127.0.0.1:{port}",
         "-w", "3", "--threads", "4", "--timeout", "120", "--limit-request-line", "0"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(60):
            try:
                if httpx.get(f"{url}/api/schema/?format=json", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        yield url
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a worker still busy with a hostile request
            server.kill()
            server.wait(timeout=30)


def finish(figures: dict, out: Path, results: Path | None, failures: str) -> int:
    """Say where the reports are, add ``figures`` to ``results`` (re-read just before writing, other
    keys kept) and answer the exit code: 0 when ``figures[failures]`` is 0."""
    print(f"reports and outputs in {out}")
    if results is not None:
        merged = json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}
        merged.update(figures)
        results.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    return 0 if figures[failures] == 0 else 1


def _st(
    env: dict, url: str, key: str, report_dir: Path, seconds: int, selection: list[str]
) -> subprocess.CompletedProcess:
    command = [
        str(ROOT / ".venv" / "bin" / "st"),
        "run",
        f"{url}/api/schema/?format=json",
        "-H",
        f"Authorization: Bearer {key}",
        "--checks",
        ",".join(CHECKS),
        "--max-time",
        str(seconds),
        "--workers",
        "4",
        "--request-timeout",
        "60",
        "--report",
        "ndjson",
        "--report-dir",
        str(report_dir),
        "--no-color",
        *selection,
    ]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)


def read_reports(report_dir: Path) -> dict:
    """Requests sent and failing checks (per case) from schemathesis's NDJSON reports."""
    requests = 0
    failures: Counter[str] = Counter()
    operations: Counter[str] = Counter()
    for path in sorted(report_dir.glob("*.ndjson")):
        for line in path.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if not finished:
                continue
            recorder = finished.get("recorder") or {}
            interactions = recorder.get("interactions") or {}
            requests += sum(1 for i in interactions.values() if i.get("response") is not None)
            for checks in (recorder.get("checks") or {}).values():
                for check in checks:
                    if check.get("status") == "failure":
                        failures[check["name"]] += 1
                        operations[recorder.get("label", "?")] += 1
    return {"requests": requests, "failures": dict(failures), "operations": dict(operations)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--port", type=int, default=8472)
    parser.add_argument("--seconds", type=int, default=420, help="Time for every operation but the key ends.")
    parser.add_argument(
        "--key-seconds", type=int, default=60, help="Time for the key's rotation and revocation."
    )
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "contract-long-run")
    parser.add_argument("--results", type=Path, default=None, help="bench/results/latest.json to update.")
    parser.add_argument(
        "--exclude-path-regex", default=None, help="Leave these operations out (e.g. work in progress)."
    )
    args = parser.parse_args()

    env = _env(args.database_url)
    stamp = time.strftime("%Y%m%d%H%M%S")
    key, end_key = tenants(env, f"contract-{stamp}")
    out = args.out / stamp
    started = time.monotonic()
    with live_server(env, args.port) as url:
        skip = [a for k in KEY_ENDS for a in ("--exclude-name", k)]
        if args.exclude_path_regex:
            skip += ["--exclude-path-regex", args.exclude_path_regex]
        main_run = _st(env, url, key, out / "main", args.seconds, skip)
        key_run = _st(
            env,
            url,
            end_key,
            out / "keys",
            args.key_seconds,
            [arg for k in KEY_ENDS for arg in ("--include-name", k)],
        )
    seconds = time.monotonic() - started
    (out / "main.txt").write_text(main_run.stdout + main_run.stderr)
    (out / "keys.txt").write_text(key_run.stdout + key_run.stderr)
    main_figures, key_figures = read_reports(out / "main"), read_reports(out / "keys")
    failures = Counter(main_figures["failures"]) + Counter(key_figures["failures"])
    figures = {
        "api.fuzz_requests": main_figures["requests"] + key_figures["requests"],
        "api.contract_failures": sum(failures.values()),
        "api.contract_failures_by_check": {name: failures.get(name, 0) for name in CHECKS},
        "api.contract_failing_operations": dict(
            Counter(main_figures["operations"]) + Counter(key_figures["operations"])
        ),
        "api.fuzz_seconds": round(seconds, 1),
        "api.fuzz_tool": "schemathesis 4.32.5 command line (st run), 4 workers, PostgreSQL, gunicorn 3x4",
        "api.fuzz_load_average": os.getloadavg()[0],
    }
    print(json.dumps(figures, indent=2))
    if not main_figures["requests"]:
        print(f"no request was answered; see {out / 'main.txt'}", file=sys.stderr)
        return 2
    return finish(figures, out, args.results, "api.contract_failures")


if __name__ == "__main__":
    sys.exit(main())
