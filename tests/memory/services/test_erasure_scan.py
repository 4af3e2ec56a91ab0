"""Erasure scan (issue 15, item 5): after ``DELETE /v1/subjects/<id>`` no store holds the subject's text.

A subject is seeded through the real path (``messages_ingest``, the extractive MemListener via
``drain``, evidence indexing into a temporary Milvus Lite file, the Django cache on Redis under a
key prefix of its own) with a unique canary in its messages (and, in the second variant, in its
external id). After the API erasure the canary must be in none of: any text/json column of any
table of the test database (information_schema), the test's Redis keys and values, the Milvus
collection, the files under the test's temporary data dir, the log records of the ``memory``,
``workers`` and ``serving`` loggers (and ``personatree``, ``celery``, ``django``) at DEBUG. Another tenant's subject, seeded the same way with
its own canary, must be untouched.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

from memory.models import OpRecord, TreeVersion
from memory.recall import runtime
from memory.services import query as query_service
from memory.services.ingest import IncomingMessage, messages_ingest, subject_flush
from serving.config import EngineConfig
from serving.listener import InProcessClient
from tests.memory.recall.conftest import embedder, recall_settings  # noqa: F401  (MiniLM; temp Milvus Lite)
from tests.workers.helpers import drain

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

REDIS_URL = "redis://127.0.0.1:6379/5"  # scanned only under this test's own key prefix
LOGGERS = ("memory", "workers", "serving")
# Also captured and scanned: the task wrapper's, Celery's and Django's own records.
MORE_LOGGERS = ("personatree", "celery", "django")


def dialogue(canary: str) -> list[tuple[str, str]]:
    return [
        (f"Hi! My cat is called {canary} and she sleeps all day.", "What a lovely name!"),
        (f"I work as a baker, and {canary} loves the smell of bread.", "Nice."),
        ("I have been vegetarian for ten years.", "Noted."),
        ("Thanks, that's all!", "Anytime."),
    ]


def ingest(tenant, external_id: str, canary: str) -> None:
    msgs = []
    for i, (user, assistant) in enumerate(dialogue(canary)):
        msgs += [
            IncomingMessage("user", user, f"{external_id}-u{i}"),
            IncomingMessage("assistant", assistant, f"{external_id}-a{i}"),
        ]
    result = messages_ingest(tenant=tenant, external_id=external_id, messages=msgs, enqueue=False)
    subject_flush(subject=result.subject, enqueue=False)  # close the partial window: every turn is read


# -- the scanners ----------------------------------------------------------------------------
def scan_db(needle: str) -> list[tuple[str, str, str]]:
    """Every (schema, table, column) of a text/json column of any user table holding ``needle``."""
    hits = []
    with connection.cursor() as cur:
        cur.execute(
            """SELECT c.table_schema, c.table_name, c.column_name
               FROM information_schema.columns c
               JOIN information_schema.tables t
                 ON t.table_schema = c.table_schema AND t.table_name = c.table_name
               WHERE t.table_type = 'BASE TABLE'
                 AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
                 AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY')"""
        )
        columns = cur.fetchall()
        assert columns, "the catalog query found no columns"
        for schema, table, column in columns:
            cur.execute(
                f'SELECT 1 FROM "{schema}"."{table}" WHERE "{column}"::text LIKE %s LIMIT 1',  # noqa: S608 - names from the catalog
                [f"%{needle}%"],
            )
            if cur.fetchone():
                hits.append((schema, table, column))
    return hits


def scan_redis(prefix: str, needle: str) -> tuple[int, list[str]]:
    """(keys seen, keys whose name or value holds ``needle``) under ``prefix`` in the test's Redis DB."""
    import redis

    r = redis.Redis.from_url(REDIS_URL)
    raw = needle.encode()
    seen, hits = 0, []
    for key in r.scan_iter(match=f"{prefix}*", count=500):
        seen += 1
        kind = r.type(key)
        if kind == b"string":
            values = [r.get(key) or b""]
        elif kind == b"list":
            values = r.lrange(key, 0, -1)
        elif kind == b"hash":
            values = [b for kv in r.hgetall(key).items() for b in kv]
        elif kind == b"set":
            values = list(r.smembers(key))
        elif kind == b"zset":
            values = r.zrange(key, 0, -1)
        else:
            values = [r.dump(key) or b""]
        if raw in key or any(raw in v for v in values):
            hits.append(key.decode(errors="replace"))
    return seen, hits


def scan_milvus(needle: str) -> list[tuple[int, int]]:
    """(tenant_id, subject_id) of every row of the evidence collection whose text holds ``needle``."""
    index = runtime.configured_index()
    rows = [
        row
        for name in index.collection_names()  # every collection of the layout (shards on Lite)
        if index.client.has_collection(name)
        for row in index.client.query(
            name, filter="tenant_id >= 0", output_fields=["tenant_id", "subject_id", "text", "session"]
        )
    ]
    return [(r["tenant_id"], r["subject_id"]) for r in rows if needle in r["text"] or needle in r["session"]]


def scan_files(root: Path, needle: str) -> list[str]:
    raw = needle.encode()
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and raw in p.read_bytes()]


def seed_prompt_cache(root: Path, canary: str) -> None:
    """What the local (llama.cpp) MemListener leaves in its disk prompt cache after reading the
    subject's chunk: an entry keyed by the prompt, written with diskcache as ``LlamaDiskCache`` does,
    in the per-model directory under ``MEMLISTENER_PROMPT_CACHE_DIR``. The real entry holds token
    ids; here the canary is text, so the byte scan of the data dir sees it."""
    diskcache = pytest.importorskip("diskcache")
    with diskcache.Cache(str(root / "memlistener-1234")) as cache:
        cache[(151644, 872, 198)] = f"<|im_start|>user My cat is called {canary}".encode()


def scan_logs(records: list[logging.LogRecord], needle: str) -> list[str]:
    hits = []
    for rec in records:
        text = " ".join(
            str(x) for x in (rec.getMessage(), rec.exc_text or "", getattr(rec, "stack_info", "") or "")
        )
        if needle in text or needle in repr(rec.__dict__):
            hits.append(f"{rec.name}:{rec.levelname}: {text[:200]}")
    return hits


# -- the fixture: indexing into a temp Milvus file, the Django cache on Redis under our prefix --
@pytest.fixture
def stores(recall_settings, tmp_path, caplog):  # noqa: F811
    settings = recall_settings  # Milvus Lite in tmp_path, MiniLM, no responder model
    prefix = f"erase-scan-{uuid.uuid4().hex}"
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        # No idle flush mid-test: rows stay in the write-ahead log until the erasure's own flush
        # (rows sealed before an erasure are the Milvus Lite gap in docs/RELIABILITY.md).
        "EVIDENCE_FLUSH_IDLE_S": 0.0,
        "MEMLISTENER_PROMPT_CACHE_DIR": str(tmp_path / "llama-prompts"),
    }
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": prefix,
        }
    }
    for name in (*LOGGERS, *MORE_LOGGERS):
        caplog.set_level(logging.DEBUG, logger=name)
    yield prefix, tmp_path
    import redis

    r = redis.Redis.from_url(REDIS_URL)  # never FLUSHDB a shared Redis: delete only our keys
    for key in r.scan_iter(match=f"{prefix}*"):
        r.delete(key)


@pytest.mark.postgres
@pytest.mark.parametrize("canary_in_id", [False, True], ids=["canary-in-messages", "canary-in-id-too"])
def test_erased_subject_leaves_no_trace_in_any_store(
    stores, tenant, other_tenant, make_api_client, caplog, canary_in_id
):
    prefix, data_dir = stores
    canary = f"Zqx{uuid.uuid4().hex[:12]}"
    keeper_canary = f"Kpw{uuid.uuid4().hex[:12]}"
    external_id = f"user-{canary}" if canary_in_id else f"user-{uuid.uuid4().hex[:8]}"
    keeper_id = f"user-{keeper_canary}" if canary_in_id else "keeper"

    # Seed: both tenants through the real ingest path, applied by the extractive listener, indexed.
    ingest(tenant, external_id, canary)
    ingest(other_tenant, keeper_id, keeper_canary)
    report = drain(client=InProcessClient(EngineConfig(kind="extractive")), max_jobs=8, max_wait_ms=0)
    assert report.applied >= 2 and report.failed == 0
    reader, _ = make_api_client(tenant, scopes=["read"])
    keeper_client, _ = make_api_client(other_tenant, scopes=["read"])
    tree = reader.get(reverse("subject-tree", kwargs={"external_id": external_id})).json()["tree"]
    assert any(canary in v for v in tree.values()), tree  # the tree holds the canary...
    assert OpRecord.objects.filter(source_text__contains=canary).exists()  # ...and so do the op records
    assert TreeVersion.objects.filter(subject__external_id=external_id).exists()
    subject_pk = TreeVersion.objects.filter(subject__external_id=external_id).values_list(
        "subject_id", flat=True
    )[0]
    # Reads fill the render cache and search the index (the query names the canary).
    for mode in ("fast", "deep"):
        answer = reader.post(
            reverse("subject-context", kwargs={"external_id": external_id}),
            {"query": f"what is {canary}?", "mode": mode},
            format="json",
        )
        assert answer.status_code == 200, answer.content
        assert canary in json.dumps(answer.json()), mode
    assert any(key[0] == subject_pk for key in query_service._render_cache.items)
    for needle in (canary, keeper_canary):  # the scanners see what is there
        assert scan_db(needle), needle
        assert scan_milvus(needle), needle
    seed_prompt_cache(data_dir / "llama-prompts", canary)  # the fixture's MEMLISTENER_PROMPT_CACHE_DIR
    assert scan_files(data_dir, canary)
    keys_seen, _ = scan_redis(prefix, canary)
    assert keys_seen >= 1, "the Django cache (throttle counters) should be on Redis under our prefix"

    # Erase through the API.
    eraser, _ = make_api_client(tenant, scopes=["erase"])
    response = eraser.delete(reverse("subject-detail", kwargs={"external_id": external_id}))
    assert response.status_code == 200, response.content
    assert response.json()["counts"]["messages"] == 8

    # No trace of the canary anywhere.
    assert scan_db(canary) == []
    assert scan_redis(prefix, canary)[1] == []
    assert scan_milvus(canary) == []
    assert scan_files(data_dir, canary) == []
    assert not any(key[0] == subject_pk for key in query_service._render_cache.items)  # this process's cache
    assert {r.name.split(".")[0] for r in caplog.records} & {"workers", "personatree"}, "logs were captured"
    assert scan_logs(caplog.records, canary) == []
    assert reader.get(reverse("subject-tree", kwargs={"external_id": external_id})).status_code == 404

    # The other tenant's subject is untouched: database, tree and evidence index.
    assert scan_db(keeper_canary)
    assert scan_milvus(keeper_canary)
    kept = keeper_client.get(reverse("subject-tree", kwargs={"external_id": keeper_id})).json()["tree"]
    assert any(keeper_canary in v for v in kept.values()), kept


@pytest.mark.xfail(
    strict=True,
    reason="known gap (docs/RELIABILITY.md, Erasure): Milvus Lite keeps the text of rows sealed "
    "before the erasure in its segment files until its own size-tiered compaction merges them",
)
def test_milvus_lite_rows_sealed_before_the_erasure_leave_their_text_on_disk(tmp_path):
    from memory.recall.index import EvidenceIndex, EvidenceRow

    canary = f"Zqx{uuid.uuid4().hex[:12]}"
    index = EvidenceIndex(str(tmp_path / "sealed.db"), dim=4, collection="sealed", flush_idle_s=0)
    try:
        index.upsert([EvidenceRow(1, 1, 1, 2, f"user: my cat is {canary}", [0.1, 0.2, 0.3, 0.4])], flush=True)
        index.upsert([EvidenceRow(1, 2, 1, 2, "user: another subject", [0.4, 0.3, 0.2, 0.1])], flush=True)
        index.delete_subject(1, 1)
        assert index.client.query(
            index.collection_of(2), filter="tenant_id >= 0", output_fields=["text"]
        )  # subject 2 stays
        assert scan_files(tmp_path, canary) == []
    finally:
        index.close()
