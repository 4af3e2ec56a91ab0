"""The moderator's console under a full queue: 10,000 held ops across 100 tenants.

Runs its own Django setup with the test settings against a scratch database
(``bench_personatree_admin``) that it creates and drops. The held ops are written the way the
MemListener's are (``tree_apply_ops`` with a model actor, special-tier leaves held by the tenant
policy); the pages are served in-process by Django's test client, logged in as a superuser.

Wall time is the figure; the notes add this process's CPU time per request (what the machine's
load moves least) and the load average.

- ``admin.queue_page_ms_p50``: median wall time of the review queue's first page (all tenants,
  oldest first, 50 rows, the filters' choices).
- ``admin.decide_ms_p50``: median wall time of one decision on the review page (approve, through
  the write service and the gate) including the redirect to the next item of the queue.
- ``admin.clicks_per_decision``: clicks the browser test needed per decision on the review page
  (tests/browser/test_console.py writes ``var/browser/clicks.json``; run
  ``pytest tests/browser -k walks`` when it is missing).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scratch import scratch_db  # noqa: E402

SCRATCH_DB = os.environ.get("PERSONATREE_BENCH_ADMIN_DB", "bench_personatree_admin")
TENANTS = 100
PENDING = 10_000
PAGE_ROUNDS = 15
DECISIONS = 40
CLICKS = ROOT / "var" / "browser" / "clicks.json"


def _fill_queue() -> None:
    """``PENDING`` held ops: per tenant, subjects each holding one op per special-tier leaf."""
    from memory import selectors
    from memory.engine.ops import Op
    from memory.models import Chunk
    from memory.services.subjects import subject_get_or_create, tenant_create
    from memory.services.tree import Actor, Source, tree_apply_ops

    actor = Actor.for_model(model_id="bench-model", prompt_version="bench")
    per_tenant = PENDING // TENANTS
    made = 0
    for t in range(TENANTS):
        tenant = tenant_create(name=f"bench-tenant-{t:03d}", review_special_tier=True)
        held_here, s = 0, 0
        while held_here < per_tenant:
            subject = subject_get_or_create(tenant=tenant, external_id=f"user-{t:03d}-{s:03d}")[0]
            special = [leaf for leaf in selectors.subject_schema(subject).leaves if leaf.tier == "special"]
            leaves = special[: per_tenant - held_here]
            chunk = Chunk.objects.create(subject=subject, chunk_key=f"{t:03d}{s:03d}".ljust(64, "0"),
                                         start_seq=1, end_seq=2)  # fmt: skip
            outcome = tree_apply_ops(
                subject=subject,
                base_version=subject.head_version,
                ops=[Op.add(leaf.path, f"value {i} of {subject.external_id}"[: leaf.budget]) for i, leaf in enumerate(leaves)],
                actor=actor,
                source=Source(chunk.pk, 1, 2),
            )  # fmt: skip
            held_here += len(outcome.pending_review)
            s += 1
        made += held_here
    assert made == PENDING, made


def _p50(samples: list[float]) -> float:
    return round(statistics.median(samples), 2)


def _measure() -> dict[str, dict]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from memory.models import OpRecord

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    started = time.perf_counter()
    _fill_queue()
    fill_s = time.perf_counter() - started
    with connection.cursor() as cursor:  # the planner's statistics, as autovacuum would have them
        cursor.execute("ANALYZE")
    user = get_user_model().objects.create_superuser("bench", "bench@example.test", "pw")
    client = Client()
    client.force_login(user)
    queue = reverse("admin:memory_reviewitem_changelist")
    client.get(queue)  # warm: templates compiled, schemas cached
    pages, page_cpu = [], []
    for _ in range(PAGE_ROUNDS):
        c0, t0 = time.process_time(), time.perf_counter()
        response = client.get(queue)
        pages.append((time.perf_counter() - t0) * 1000)
        page_cpu.append((time.process_time() - c0) * 1000)
        assert response.status_code == 200
    decide, decide_cpu, redirected = [], [], 0
    held = list(
        OpRecord.objects.filter(status="pending_review")
        .order_by("created_at", "id")
        .values_list("pk", flat=True)[: DECISIONS + 1]
    )
    for n, pk in enumerate(held):
        url = reverse("admin:memory_reviewitem_decide", args=[pk])
        head = OpRecord.objects.select_related("subject").get(pk=pk).subject.head_version
        c0, t0 = time.process_time(), time.perf_counter()
        response = client.post(url, {"decision": "approve", "base_version": head})
        if n:  # the first one warms the path
            decide.append((time.perf_counter() - t0) * 1000)
            decide_cpu.append((time.process_time() - c0) * 1000)
        assert response.status_code == 302, response.status_code
        redirected += (
            bool(n) and "/reviewitem/" in response["Location"] and "/change/" in response["Location"]
        )
    approved = OpRecord.objects.filter(status="approved").count()
    load = os.getloadavg()[0]
    rows = {
        "admin.queue_page_ms_p50": {
            "value": _p50(pages),
            "unit": "ms",
            "target": "<= 200",
            "note": f"review queue page, {PENDING} held ops / {TENANTS} tenants, superuser, "
            f"{PAGE_ROUNDS} loads (fill {fill_s:.0f} s); this process's CPU {_p50(page_cpu)} ms; load avg {load:.2f}",
        },
        "admin.decide_ms_p50": {
            "value": _p50(decide),
            "unit": "ms",
            "target": "<= 50",
            "note": f"approve on the review page + redirect to the next item, {len(decide)} decisions "
            f"({approved} approved, {redirected} redirected to a next item); this process's CPU "
            f"{_p50(decide_cpu)} ms; load avg {load:.2f}",
        },
    }
    rows["admin.clicks_per_decision"] = _clicks()
    return rows


def _clicks() -> dict:
    if not CLICKS.exists():
        return {"value": None, "unit": "clicks", "target": "<= 2",
                "note": "not measured: run pytest tests/browser -k walks first (writes var/browser/clicks.json)"}  # fmt: skip
    counted = json.loads(CLICKS.read_text())
    return {
        "value": round(counted["clicks"] / counted["decisions"], 2),
        "unit": "clicks",
        "target": "<= 2",
        "note": f"{counted['clicks']} clicks for {counted['decisions']} decisions (edit & approve into "
        "another leaf, decline with a reason) in the browser test; typing not counted",
    }


def run() -> dict[str, dict]:
    with scratch_db(SCRATCH_DB):
        return _measure()
