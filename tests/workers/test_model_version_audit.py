"""A trained checkpoint's version reaches the audit log (issue 14: the model id and version of a
registered checkpoint are recorded with every op from then on): engine -> listener result ->
dispatcher -> ``OpRecord.model_version``, through the real write path on PostgreSQL."""

from __future__ import annotations

import json

import pytest

from memory.models import Chunk, OpRecord
from tests.workers.helpers import ingest_closed
from tests.workers.test_unstorable_model_output import FixedTextEngine, ListenerClient
from workers.dispatcher import dispatch_round

pytestmark = pytest.mark.django_db

CITY = "identity/location/current_city"


class TrainedEngine(FixedTextEngine):
    """Stands for a llama.cpp engine whose GGUF has a model card (a test double, not a model)."""

    model_id = "memlistener-qwen2.5-coder-0.5b-sft"
    model_version = "3"


OUTPUT = json.dumps({"ops": [{"op": "ADD", "path": CITY, "value": "Lyon", "source": "I live in Lyon."}]})


def test_the_checkpoint_version_is_recorded_with_every_op(tenant):
    subject = ingest_closed(tenant, "trained-subject", [("user", "I live in Lyon."), ("assistant", "Nice.")])
    dispatch_round(client=ListenerClient(TrainedEngine(OUTPUT)), max_jobs=4, max_wait_ms=0, index=False)
    assert Chunk.objects.get(subject=subject).status == Chunk.Status.APPLIED
    records = list(OpRecord.objects.filter(subject=subject))
    assert records and {(r.model_id, r.model_version) for r in records} == {(TrainedEngine.model_id, "3")}
