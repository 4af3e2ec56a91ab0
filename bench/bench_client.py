"""Client benchmark: ingest through ``personatree_client`` against raw httpx, same server, same run.

A real server (gunicorn, 1 sync worker; ``manage.py runserver`` when gunicorn is absent) on a
free 127.0.0.1 port serves a scratch Postgres database (``bench_pt_client``, created and dropped
here) with the test settings and the **stand-in MemListener** configured. Celery is *not* eager
(in-memory broker, no worker): as in production, an ingest call stores the messages, cuts the
chunks and answers 202, and the MemListener runs later in a worker. (With eager Celery each call
would also run the dispatcher inline: about 21 msgs/s here at load 5, where the client's share
cannot be seen; that is the dispatcher's figure, ``bench_ingest``.) Both paths send batches of
``BATCH`` messages on one keep-alive connection, each path to its own fresh subjects:

- client: ``PersonaTree.ingest(subject, messages)`` with ``max_batch_messages=BATCH`` — a call
  of ``PER_CALL`` ``Message`` objects, which the client splits into batches (one, at the default
  sizes: the finest interleaving of the two paths), encodes, sends and parses into typed results;
- raw: ``httpx.Client.post(url, json={"messages": batch})`` per batch and ``response.json()``.

Each round runs both paths back to back (which goes first alternates), so the machine's load
drifts on both alike; the ratio is the median over the rounds. (Rounds of 1,000 messages, 10
batches a call, gave the same picture with a wider spread: +0.5 %, +2.4 %, -12.5 % in three runs
at load 5.)

- ``client.ingest_msgs_per_s``: messages per second through the client (total over the rounds).
- ``client.overhead_ratio``: median over the rounds of client time / raw httpx time for the same
  number of messages - 1 (target <= 0.10). The note gives the range, the whole run's ratio, and
  the client's own CPU per batch without a server (both paths against an ``httpx.MockTransport``
  with a canned answer) as a share of a raw batch's wall time: the steadiest figure on a loaded
  machine, where single rounds swing by tens of percent either way.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import load_note, print_rows  # noqa: E402
from bench.scratch import scratch_db  # noqa: E402
from tests.ray_serve import free_port  # noqa: E402
from tests.workers.processes import terminate  # noqa: E402

SCRATCH_DB = os.environ.get("PERSONATREE_BENCH_CLIENT_DB", "bench_pt_client")
BATCH = 100
PER_CALL = 100  # messages per client call: one batch, so the paths interleave batch by batch
ROUNDS = 120
WARMUP_CALLS = 1
SENTENCES = [
    "I work as a nurse at the city hospital and I do night shifts twice a week.",
    "We moved to Lisbon last spring, close to the river.",
    "I swim three times a week because my knee hurts when I run.",
    "My sister Ana lives in Porto with her two kids.",
    "I am allergic to peanuts, so I check every label.",
    "I play the cello in an amateur orchestra on Thursdays.",
]


def _api_key() -> str:
    from memory.services.keys import api_key_create
    from memory.services.subjects import tenant_create
    from memory.services.tree import Actor

    _key, raw = api_key_create(
        actor=Actor.system("bench"), tenant=tenant_create(name="bench-client"), scopes=["ingest", "read"]
    )
    return raw


def _messages(tag: str, n: int) -> list[dict]:
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append({"role": "user", "content": f"{SENTENCES[(i // 2) % len(SENTENCES)]} ({tag} {i})"})
        else:
            out.append({"role": "assistant", "content": f"Thanks, noted ({i})."})
        out[-1]["idempotency_key"] = f"{tag}-{i}"
    return out


class Server:
    """The project's WSGI app in its own process on 127.0.0.1, stopped by its PID."""

    def __init__(self, db_name: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db_name}?conn_max_age=60",
            "DJANGO_LOG_LEVEL": "WARNING",
            "PERSONATREE_MEMLISTENER_BACKEND": "standin",
            "PERSONATREE_MEMLISTENER_STANDIN_MODE": "derived",
            "PERSONATREE_EVIDENCE_INDEXING": "false",
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "CELERY_BROKER_URL": "memory://",
        }
        if importlib.util.find_spec("gunicorn") is not None:
            bind = f"127.0.0.1:{self.port}"
            cmd = [
                "-m",
                "gunicorn",
                "personatree_site.wsgi:application",
                "-b",
                bind,
                "-w",
                "1",
                "--log-level",
                "warning",
            ]
            self.kind = "gunicorn (1 sync worker)"
        else:
            cmd = ["manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"]
            self.kind = "manage.py runserver --noreload"
        self.proc = subprocess.Popen(
            [sys.executable, *cmd], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while True:
            try:
                httpx.get(f"{self.url}/v1/", timeout=2.0)  # the API's JSON 404: the app is up
                return
            except httpx.TransportError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"server did not start: {self.proc.stderr.read().decode()[-2000:]}"
                    ) from None
                time.sleep(0.2)

    def stop(self) -> None:
        terminate(self.proc)


def _via_client(pt, subject: str, messages) -> float:
    started = time.perf_counter()
    result = pt.ingest(subject, messages)
    elapsed = time.perf_counter() - started
    assert len(result.accepted) == len(messages) and result.batches == len(messages) // BATCH, result
    return elapsed


def _via_httpx(http, key: str, subject: str, messages: list[dict]) -> float:
    url = f"/v1/subjects/{subject}/messages"
    headers = {"Authorization": f"Bearer {key}"}
    started = time.perf_counter()
    for i in range(0, len(messages), BATCH):
        response = http.post(url, json={"messages": messages[i : i + BATCH]}, headers=headers)
        body = response.json()
        assert response.status_code == 202 and len(body["accepted"]) == BATCH, response.text[:300]
    return time.perf_counter() - started


def _cpu_per_batch_ms() -> tuple[float, float]:
    """Client-side CPU per batch of BATCH messages against a canned answer (no server, no network)."""
    import httpx
    from personatree_client import Message, PersonaTree

    answer = json.dumps(
        {
            "subject": "s",
            "subject_created": False,
            "accepted": [{"idempotency_key": f"k{i}", "seq": i} for i in range(BATCH)],
            "duplicates": [],
            "cursor": BATCH,
            "chunks_created": BATCH // 6,
        }
    ).encode()

    def handler(request):
        return httpx.Response(202, content=answer, headers={"Content-Type": "application/json"})

    transport = httpx.MockTransport(handler)
    dicts = _messages("cpu", PER_CALL)
    messages = [Message(**m) for m in dicts]
    with PersonaTree("http://pt.test", "k", max_batch_messages=BATCH, transport=transport) as pt:
        with httpx.Client(base_url="http://pt.test", transport=transport) as http:
            client_t, raw_t = [], []
            for _ in range(20):
                t = time.process_time()
                pt.ingest("s", messages)
                client_t.append(time.process_time() - t)
                t = time.process_time()
                for i in range(0, PER_CALL, BATCH):
                    http.post("/v1/subjects/s/messages", json={"messages": dicts[i : i + BATCH]}).json()
                raw_t.append(time.process_time() - t)
    per_batch = PER_CALL // BATCH
    return statistics.median(client_t) * 1000 / per_batch, statistics.median(raw_t) * 1000 / per_batch


def _measure(key: str, db_name: str) -> dict:
    import httpx
    from personatree_client import Message, PersonaTree

    logging.getLogger("httpx").setLevel(logging.WARNING)
    server = Server(db_name)
    try:
        server.wait_ready()
        client_s, raw_s, ratios = [], [], []
        with (
            PersonaTree(server.url, key, max_batch_messages=BATCH, timeout=120) as pt,
            httpx.Client(base_url=server.url, timeout=120) as http,
        ):
            for w in range(WARMUP_CALLS):
                _via_client(pt, f"warm-c{w}", [Message(**m) for m in _messages(f"wc{w}", PER_CALL)])
                _via_httpx(http, key, f"warm-r{w}", _messages(f"wr{w}", PER_CALL))
            for r in range(ROUNDS):
                messages = [Message(**m) for m in _messages(f"c{r}", PER_CALL)]
                dicts = _messages(f"r{r}", PER_CALL)
                if r % 2:  # which path goes first alternates too
                    h = _via_httpx(http, key, f"raw-{r}", dicts)
                    c = _via_client(pt, f"client-{r}", messages)
                else:
                    c = _via_client(pt, f"client-{r}", messages)
                    h = _via_httpx(http, key, f"raw-{r}", dicts)
                client_s.append(c)
                raw_s.append(h)
                ratios.append(c / h - 1)
        return {"client_s": client_s, "raw_s": raw_s, "ratios": ratios, "server": server.kind}
    finally:
        server.stop()


def run() -> dict[str, dict]:
    with scratch_db(SCRATCH_DB) as connection:
        key = _api_key()
        m = _measure(key, connection.settings_dict["NAME"])
    cpu_client, cpu_raw = _cpu_per_batch_ms()
    total = ROUNDS * PER_CALL
    client_rate, raw_rate = total / sum(m["client_s"]), total / sum(m["raw_s"])
    total_overhead = sum(m["client_s"]) / sum(m["raw_s"]) - 1
    overhead = statistics.median(m["ratios"])  # robust to the load spikes of a shared machine
    raw_batch_ms = sum(m["raw_s"]) * 1000 / (total / BATCH)
    cpu_share = (cpu_client - cpu_raw) / raw_batch_ms
    load = load_note()
    setup = (
        f"{ROUNDS} rounds x {PER_CALL} messages in batches of {BATCH}, 127.0.0.1, {m['server']}, "
        f"stand-in MemListener configured, Celery not eager (202 once stored and chunked), keep-alive"
    )
    return {
        "client.ingest_msgs_per_s": {
            "value": round(client_rate, 1),
            "unit": "msgs/s",
            "target": None,
            "note": f"PersonaTree.ingest (typed results); raw httpx in the same run "
            f"{raw_rate:.1f} msgs/s; {setup}; {load}",
        },
        "client.overhead_ratio": {
            "value": round(overhead, 4),
            "unit": "ratio",
            "target": "<= 0.10",
            "note": f"median over {ROUNDS} rounds of client time / raw httpx time - 1 for the same number of "
            f"messages (rounds range {min(m['ratios']):+.3f} .. {max(m['ratios']):+.3f}; over the whole run "
            f"{total_overhead:+.3f}); "
            f"client-side CPU per batch without a server (MockTransport): client {cpu_client:.2f} ms, "
            f"raw httpx {cpu_raw:.2f} ms, i.e. {cpu_share:+.3f} of a raw batch's {raw_batch_ms:.0f} ms; {load}",
        },
    }


if __name__ == "__main__":
    print_rows(run())
