"""Poison chunks (issue 24 item 10): a chunk whose text crashes the engine, or makes it hang past the
client's timeout, is quarantined as ``failed`` with a reason after ``CHUNK_MAX_ATTEMPTS``; the other
chunks of its batch, of both tenants, are applied in the first round; a moderator re-queues it.

Real faults: the real MemListener (prompt, parser, gate) over an engine that raises, or sleeps past
the HTTP client's timeout, for any engine call whose prompts hold the poison text. The hang goes
through the real HTTP client (``RayServeClient``) against a server in a thread.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory.models import Chunk, TreeVersion
from memory.services.ingest import IncomingMessage, messages_ingest
from serving.client import RayServeClient
from serving.config import EngineConfig
from serving.engines import build_engine
from serving.listener import build_listener
from serving.protocol import ListenerBatch, ListenerBatchResult
from tests.workers.helpers import drain, ingest_pairs, standin_client
from workers.dispatcher import dispatch_round

POISON = "zq-poison-pill"
HANG_S, TIMEOUT_S = 4.0, 2.0  # the timeout leaves room for a loaded machine


class FaultEngine:
    """The stand-in engine, except that an engine call with the poison text in a prompt raises
    (``crash``) or sleeps past the client's timeout first (``hang``)."""

    def __init__(self, fault: str):
        self.inner = build_engine(EngineConfig(kind="standin", standin_mode="derived"))
        self.fault, self.poisoned_calls = fault, 0

    def generate(self, prompts, json_schema):
        if any(POISON in p.text for p in prompts):
            self.poisoned_calls += 1
            if self.fault == "crash":
                raise RuntimeError("engine crashed on this input (test)")
            time.sleep(HANG_S)
        return self.inner.generate(prompts, json_schema)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class InProcess:
    def __init__(self, listener):
        self.listener = listener

    def run(self, jobs):
        return self.listener.run(jobs)


@pytest.fixture
def faulty_client(request):
    """A client of the real MemListener over a :class:`FaultEngine` (``request.param``: the fault)."""
    engine = FaultEngine(request.param)
    listener = build_listener(EngineConfig(kind="standin", standin_mode="derived"), engine=engine)
    if request.param == "crash":
        yield InProcess(listener), engine
        return

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            batch = ListenerBatch.model_validate_json(self.rfile.read(int(self.headers["Content-Length"])))
            data = ListenerBatchResult(results=listener.run(batch.jobs)).model_dump_json().encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client timed out and went away
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = RayServeClient(f"http://127.0.0.1:{server.server_port}/memlistener", timeout_s=TIMEOUT_S)
    try:
        yield client, engine
    finally:
        server.shutdown()
        client.close()


def ingest_poison(tenant, external_id: str):
    msgs = [IncomingMessage("user", f"I keep a note that says {POISON}", f"{external_id}-u0")]
    msgs += [IncomingMessage("assistant", "Tell me more", f"{external_id}-a0")]
    for i in range(1, 3):
        msgs += [IncomingMessage("user", f"I like hobby number {i}", f"{external_id}-u{i}")]
        msgs += [IncomingMessage("assistant", "Nice", f"{external_id}-a{i}")]
    return messages_ingest(tenant=tenant, external_id=external_id, messages=msgs).subject


@pytest.mark.parametrize("faulty_client", ["crash", "hang"], indirect=True)
def test_one_poison_chunk_fails_alone_and_the_other_15_land_in_the_first_round(
    tenant, other_tenant, settings, faulty_client, make_api_client
):
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_MAX_ATTEMPTS": 3}
    client, engine = faulty_client
    good = [ingest_pairs(tenant, f"a{i}", 3).subject for i in range(7)]
    good += [ingest_pairs(other_tenant, f"b{i}", 3).subject for i in range(8)]
    poison = ingest_poison(tenant, "poison")

    report = dispatch_round(client=client, max_jobs=16, max_wait_ms=0, index=False)
    assert report.claimed == 16 and not report.outage
    assert report.applied == 15 and report.retried == 1 and report.failed == 0
    assert all(TreeVersion.objects.filter(subject=s).exists() for s in good)
    chunk = Chunk.objects.get(subject=poison)
    assert (chunk.status, chunk.attempts) == ("pending", 1)  # one attempt, for this chunk only
    assert "poison chunk" in chunk.last_error

    later = drain(client=client, max_wait_ms=0, index=False)  # alone now: the probe tells it apart
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == ("failed", 3) and later.failed == 1
    assert "poison chunk" in chunk.last_error and POISON not in chunk.last_error
    assert engine.poisoned_calls >= 3
    assert set(Chunk.objects.exclude(pk=chunk.pk).values_list("status", flat=True)) == {"applied"}

    api, _ = make_api_client(tenant, scopes=["read", "ingest"])
    status = api.get("/v1/subjects/poison/ingest").json()  # the API shows it, and the subject blocked
    assert status["blocked"] and [(f["chunk_id"], f["status"]) for f in status["failures"]] == [
        (chunk.pk, "failed")
    ]
    answer = api.post(f"/v1/subjects/poison/chunks/{chunk.pk}/requeue")  # a moderator re-queues it
    assert answer.status_code == 202 and answer.json()["attempts"] == 0
    drain(client=standin_client(), max_wait_ms=0, index=False)  # the engine was fixed meanwhile
    chunk.refresh_from_db()
    assert chunk.status == "applied"


@pytest.mark.parametrize("faulty_client", ["hang"], indirect=True)
def test_a_lone_chunk_that_times_out_counts_an_attempt_but_an_outage_does_not(tenant, faulty_client):
    client, _ = faulty_client
    poison = ingest_poison(tenant, "alone")
    report = dispatch_round(client=client, max_jobs=16, max_wait_ms=0, index=False)
    assert report.claimed == 1 and not report.outage and report.retried == 1
    assert Chunk.objects.get(subject=poison).attempts == 1

    down = RayServeClient("http://127.0.0.1:9/memlistener", timeout_s=TIMEOUT_S)  # nothing listens
    report = dispatch_round(client=down, max_jobs=16, max_wait_ms=0, index=False)
    assert report.claimed == 1 and report.outage
    assert Chunk.objects.get(subject=poison).attempts == 1  # refunded: the engine answered no probe


@pytest.mark.parametrize("faulty_client", ["crash"], indirect=True)
def test_a_batch_of_only_poison_chunks_counts_each_and_is_no_outage(tenant, other_tenant, faulty_client):
    """Both halves of the first split fail: a probe tells poison everywhere from an outage (the chaos
    soak's four poison chunks, one per tenant, ended up batched together and were refunded forever)."""
    client, _ = faulty_client
    poison = [ingest_poison(tenant, "p1"), ingest_poison(tenant, "p2"), ingest_poison(other_tenant, "p3")]
    report = dispatch_round(client=client, max_jobs=16, max_wait_ms=0, index=False)
    assert report.claimed == 3 and not report.outage and report.retried == 3
    for subject in poison:
        chunk = Chunk.objects.get(subject=subject)
        assert chunk.attempts == 1 and "poison chunk" in chunk.last_error
