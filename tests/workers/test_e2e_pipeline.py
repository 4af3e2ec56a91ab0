"""End to end: HTTP ingest -> Postgres -> Redis -> real Celery worker -> real Ray Serve MemListener -> versions.

The MemListener runs in Ray Serve on the **recorded engine**, replaying outputs that a real model
(Qwen2.5-Coder-0.5B-Instruct GGUF, llama.cpp, constrained decoding) once wrote for these chunks:
``tests/workers/fixtures/ingest_e2e_recording.jsonl`` (made with ``python -m evaluation.record``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.models import OpRecord, Subject, TreeVersion
from tests.workers.e2e import all_applied, assert_each_chunk_applied_once_in_order, post_pairs, serve_fixture
from tests.workers.processes import CeleryWorker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RECORDING = Path(__file__).resolve().parent / "fixtures" / "ingest_e2e_recording.jsonl"


@pytest.fixture(scope="module")
def listener_url():
    from serving.config import EngineConfig

    with serve_fixture(EngineConfig(kind="recorded", recording_path=str(RECORDING))) as url:
        yield url


def test_messages_in_versions_out_in_order(listener_url, shared_broker, tmp_path, tenant, make_api_client):
    client, _ = make_api_client(tenant)
    worker = CeleryWorker(broker_url=shared_broker, listener_url=listener_url, workdir=tmp_path).start()
    try:
        for name in ("ana", "ben", "cy"):
            post_pairs(client, name, 6)  # two chunks each, in two calls per subject below
        for name in ("ana", "ben", "cy"):
            post_pairs(client, name, 3, start=6)
        wait_for(all_applied(9), timeout=90, what="9 chunks applied")
    finally:
        worker.stop()
    assert_each_chunk_applied_once_in_order(3, 3, version_each=False)
    status = client.get("/v1/subjects/ana/ingest").json()
    assert status["applied_through_seq"] == status["cursor"] == 18
    ana = Subject.objects.get(external_id="ana")
    assert status["head_version"] == ana.head_version == TreeVersion.objects.filter(subject=ana).count()
    models = set(OpRecord.objects.values_list("model_id", flat=True))
    assert models and all(m.startswith("recorded:") for m in models), models
    # the three subjects saw the same chunks in the same order, so they hold the same tree
    trees = {json.dumps(s.head.snapshot if s.head_id else {}, sort_keys=True) for s in Subject.objects.all()}
    assert len(trees) == 1
