"""The chaos soak's moving parts: the fault schedule, the producer (a backfill through the ingest
service) and the fault injector. ``tests/soak/run.py`` sets the services up and calls :func:`soak`.

- **Schedule.** :func:`plan_faults` draws every fault from one seeded ``random.Random``: its kind,
  its target (which worker; how PostgreSQL stops), how long the service stays down and the gap
  before the next fault. The schedule is logged before the run starts; the same seed gives the
  same schedule (the timing of the work around it is the machine's).
- **Producer.** One thread sends every subject's messages as 3-pair calls of
  ``messages_ingest`` (one chunk each; per subject in order, subjects round-robin), paced so the
  calls spread over the whole fault schedule. A call that fails (PostgreSQL down) is sent again
  with the same idempotency keys, as a client would: the retry of a call whose commit did land
  must store nothing twice.
- **Faults,** one after the other: ``worker_kill`` (SIGKILL a worker's process group: main process,
  pool child, beat; restarted after the down time), ``redis_restart`` (the private broker, without
  persistence: queued and unacked tasks are gone), ``postgres_restart`` (the private cluster;
  ``pg_ctl stop -m fast`` or ``-m immediate``, a crash with recovery), ``listener_stop`` (the
  stand-in MemListener process SIGKILLed: connection refused until it is started again).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from memory.messages import IncomingMessage
from memory.models import Chunk, Tenant
from memory.services.ingest import messages_ingest
from tests.soak.checks import PAIRS_PER_CALL, message_key, soak_checks
from tests.workers.listener_server import POISON

KINDS = ("worker_kill", "redis_restart", "postgres_restart", "listener_stop")
DOWN_S = {  # how long each kind of fault keeps its service down (uniform in the range)
    "worker_kill": (0.2, 2.0),
    "redis_restart": (0.5, 3.0),
    "postgres_restart": (0.5, 3.0),
    "listener_stop": (1.0, 5.0),
}
GAP_S = (0.5, 2.5)  # between the end of one fault and the start of the next
LAG_S = (0.0, 0.3)  # from a claim seen in flight to the fault: lands inside a batch (150 ms model call)
IN_FLIGHT_WAIT_S = 5.0


@dataclass
class Fault:
    n: int
    kind: str
    down_s: float
    gap_s: float
    target: int = 0  # worker_kill: which worker
    mode: str = ""  # postgres_restart: pg_ctl stop mode
    lag_s: float = 0.0  # after work is seen in flight, before the fault


def plan_faults(seed: int, count: int, kinds: tuple[str, ...]) -> list[Fault]:
    """``count`` faults of ``kinds``: the first ``len(kinds)`` cover every kind once (shuffled), the
    rest are drawn uniformly; down times and gaps as in ``DOWN_S`` / ``GAP_S``."""
    rng = random.Random(seed)
    first = list(kinds)
    rng.shuffle(first)
    faults = []
    for n in range(count):
        kind = first[n] if n < len(first) else rng.choice(kinds)
        faults.append(
            Fault(
                n=n,
                kind=kind,
                down_s=round(rng.uniform(*DOWN_S[kind]), 2),
                gap_s=round(rng.uniform(*GAP_S), 2),
                target=rng.randrange(2),
                mode=rng.choice(("fast", "immediate")) if kind == "postgres_restart" else "",
                lag_s=round(rng.uniform(*LAG_S), 3),
            )
        )
    return faults


@dataclass
class Services:
    """What the injector acts on (``tests.workers.processes`` objects) and how to act on it."""

    workers: list
    redis: object
    listener: object
    postgres: object | None = None


def _messages(subject: str, call: int, *, poison: bool = False) -> list[IncomingMessage]:
    out = []
    for pair in range(PAIRS_PER_CALL):
        i = call * PAIRS_PER_CALL + pair
        out += [
            IncomingMessage(
                "user",
                f"My favourite number is {i} and I keep {call} plants at {subject}"
                + (f" {POISON}" if poison and pair == 0 else ""),
                message_key(call, 2 * pair),
            ),
            IncomingMessage("assistant", f"Noted: {i}", message_key(call, 2 * pair + 1)),
        ]
    return out


@dataclass
class Producer:
    """Sends ``calls`` ingest calls per subject; ``allowed()`` says how many calls in all it may have
    sent by now (the pacing). ``accepted`` counts the calls that returned, per subject."""

    tenants: list
    subjects_per_tenant: int
    calls: int
    allowed: Callable[[], int]
    log: Callable[[str], None]
    accepted: Counter = field(default_factory=Counter)
    #: ``(external id, call)`` chunks sent as poison: the last call of one subject per tenant, so no
    #: later chunk of that subject waits behind its failure.
    poisoned: frozenset[tuple[str, int]] = frozenset()
    retries: int = 0
    anomalies: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def plan(self) -> list[tuple[Tenant, str, int]]:
        subjects = [(t, f"{t.name}-s{j}") for j in range(self.subjects_per_tenant) for t in self.tenants]
        return [(t, s, call) for call in range(self.calls) for t, s in subjects]

    def run(self) -> None:
        try:
            for sent, (tenant, external_id, call) in enumerate(self.plan()):
                while sent >= self.allowed():
                    time.sleep(0.05)
                self._send(tenant, external_id, call)
        except BaseException as exc:  # reported by the soak, never swallowed
            self.error = exc
        finally:
            connection.close()
            self.done.set()

    def _send(self, tenant: Tenant, external_id: str, call: int) -> None:
        delay = 0.1
        for _ in range(600):
            try:
                result = messages_ingest(
                    tenant=tenant,
                    external_id=external_id,
                    messages=_messages(external_id, call, poison=(external_id, call) in self.poisoned),
                )
            except Exception as exc:  # the database is down: a client sends the same call again
                self.retries += 1
                if self.retries % 20 == 1:
                    self.log(f"ingest {external_id} call {call} failed ({type(exc).__name__}); retrying")
                try:
                    connection.close()
                except Exception:
                    pass
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if result.cursor != 2 * PAIRS_PER_CALL * (call + 1):  # an earlier accepted call is gone
                self.anomalies.append(f"{external_id} call {call}: cursor {result.cursor}")
                self.log(f"ANOMALY: {self.anomalies[-1]}")
            self.accepted[external_id] += 1
            return
        raise RuntimeError(f"ingest of {external_id} call {call} never succeeded")


class Injector:
    def __init__(self, services: Services, faults: list[Fault], log: Callable[[str], None]) -> None:
        self.services, self.faults, self.log = services, faults, log
        self.done = 0
        self.released = 1  # producer bursts released (see ``soak``): one before the first fault
        self.on_work_in_flight = 0
        self.crashes: list[dict] = []  # workers that exited by themselves (restarted, see supervise)
        self.by_kind: Counter = Counter()
        self.events: list[dict] = []

    def run(self) -> None:
        """Each fault: the gap; the next burst of ingest calls released; wait (at most
        ``IN_FLIGHT_WAIT_S``) until a chunk has just been claimed, then ``lag_s``; the fault."""
        for fault in self.faults:
            time.sleep(fault.gap_s)
            self.supervise()
            if fault.kind == "worker_kill":
                self._ready(self._worker(fault))  # a restarted target is up before it is hit again
            self.released += 1
            in_flight = _wait_for_a_claim(IN_FLIGHT_WAIT_S)
            self.on_work_in_flight += int(in_flight)
            time.sleep(fault.lag_s)
            started = time.monotonic()
            getattr(self, fault.kind)(fault)
            self.done += 1
            self.by_kind[fault.kind] += 1
            event = {**asdict(fault), "in_flight": in_flight, "took_s": round(time.monotonic() - started, 2)}
            self.events.append(event)
            self.log(f"fault {json.dumps(event)}")

    def supervise(self) -> None:
        """Start again a worker that exited by itself (see ``CeleryWorker.restart_if_exited``);
        each such exit is recorded."""
        for i, worker in enumerate(self.services.workers):
            crash = worker.restart_if_exited()
            if crash is not None:
                crash = {"worker": i, "exit": crash["exit"], "error": crash["error"]}
                self.crashes.append(crash)
                self.log(f"worker {i} exited by itself: {json.dumps(crash)}; starting it again")

    def _ready(self, worker, attempts: int = 3) -> None:
        """Wait until ``worker`` is ready; if it exits while starting, supervise and wait again."""
        for attempt in range(attempts):
            try:
                worker.wait_ready()
                return
            except AssertionError:  # it exited while starting
                if attempt == attempts - 1:
                    raise
                self.supervise()

    def _worker(self, fault: Fault):
        return self.services.workers[fault.target % len(self.services.workers)]

    def worker_kill(self, fault: Fault) -> None:
        worker = self._worker(fault)
        worker.kill()
        time.sleep(fault.down_s)
        worker.start(wait=False)  # ready a few seconds later; the next fault on it waits for that

    def redis_restart(self, fault: Fault) -> None:
        self.services.redis.stop()
        time.sleep(fault.down_s)
        self.services.redis.start()

    def postgres_restart(self, fault: Fault) -> None:
        assert self.services.postgres is not None
        self.services.postgres.stop(mode=fault.mode)
        time.sleep(fault.down_s)
        self.services.postgres.start()

    def listener_stop(self, fault: Fault) -> None:
        self.services.listener.stop()
        time.sleep(fault.down_s)
        self.services.listener.start()

    def heal(self) -> None:
        """Everything up again (it is, after each fault; a worker may still be starting)."""
        self.supervise()
        for worker in self.services.workers:
            if not worker.running:
                worker.start(wait=False)
        for worker in self.services.workers:
            self._ready(worker)


def _wait_for_a_claim(timeout_s: float) -> bool:
    """Whether a chunk was claimed within the last second (a batch in flight) before ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            recent = timezone.now() - timedelta(seconds=1)
            if Chunk.objects.filter(status=Chunk.Status.PROCESSING, updated_at__gte=recent).exists():
                return True
        except Exception:  # the database is still recovering: no claim seen
            connection.close()
        time.sleep(0.01)
    return False


def _applied() -> int:
    try:
        return Chunk.objects.filter(status=Chunk.Status.APPLIED).count()
    except Exception:
        connection.close()
        return -1


def soak(
    *,
    services: Services,
    tenants: int,
    subjects_per_tenant: int,
    calls: int,
    faults: int,
    seed: int,
    kinds: tuple[str, ...],
    log: Callable[[str], None],
    drain_timeout_s: float = 300.0,
    stall_s: float = 90.0,
) -> dict:
    """Run the producer under the fault schedule, let the work drain, check; returns the figures."""
    started = time.monotonic()
    schedule = plan_faults(seed, faults, kinds)
    log(f"schedule (seed {seed}): {json.dumps([asdict(f) for f in schedule])}")
    tenant_rows = [Tenant.objects.create(name=f"soak{i}") for i in range(tenants)]
    injector = Injector(services, schedule, log)
    total = tenants * subjects_per_tenant * calls
    poisoned = frozenset((f"{t.name}-s0", calls - 1) for t in tenant_rows)
    producer = Producer(
        tenant_rows,
        subjects_per_tenant,
        calls,
        allowed=lambda: total if injector.done >= faults else total * injector.released // (faults + 1),
        log=log,
        poisoned=poisoned,
    )
    thread = threading.Thread(target=producer.run, name="soak-producer", daemon=True)
    thread.start()
    injector.run()
    faults_s = time.monotonic() - started
    injector.heal()
    producer.done.wait()
    if producer.error is not None:
        raise producer.error
    log(f"faults done after {faults_s:.1f} s; producer sent {sum(producer.accepted.values())} calls")
    drained_at = _drain(
        total - len(poisoned),
        len(poisoned),
        log,
        timeout_s=drain_timeout_s,
        stall_s=stall_s,
        tick=injector.supervise,
    )
    for worker in services.workers:
        worker.kill()  # idle by now; nothing is written after this point
    checks = soak_checks(dict(producer.accepted), poisoned=poisoned)
    return {
        **checks,
        "faults_injected": injector.done,
        "faults_by_kind": dict(injector.by_kind),
        "faults_on_work_in_flight": injector.on_work_in_flight,
        "worker_crashes": injector.crashes,
        "ingest_retries": producer.retries,
        "ingest_anomalies": producer.anomalies,
        "faults_s": round(faults_s, 1),
        "drain_s": round(drained_at, 1),
        "wall_s": round(time.monotonic() - started, 1),
        "seed": seed,
        "events": injector.events,
    }


def _drain(
    total: int,
    poisoned: int,
    log: Callable[[str], None],
    *,
    timeout_s: float,
    stall_s: float,
    tick: Callable[[], None],
) -> float:
    """Wait until every chunk but the poison ones is applied and those are failed, or nothing moved
    for ``stall_s``, or ``timeout_s``."""
    started = last_change = time.monotonic()
    last = (-2, -2)
    while time.monotonic() - started < timeout_s:
        applied, failed = _applied(), Chunk.objects.filter(status=Chunk.Status.FAILED).count()
        if applied == total and failed == poisoned:
            break
        if (applied, failed) != last:
            last, last_change = (applied, failed), time.monotonic()
        elif time.monotonic() - last_change > stall_s:
            log(f"no progress for {stall_s:.0f} s at {applied}/{total} applied")
            break
        tick()
        time.sleep(0.5)
    took = time.monotonic() - started
    log(f"drained in {took:.1f} s: {_applied()}/{total} applied, {poisoned} poison chunks sent")
    return took
