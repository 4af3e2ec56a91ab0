"""Work done ahead for many chunks (``InProcessClient.prefetch``) gives the results each chunk's own
run gives, and the embedder batches texts of similar lengths (padding is work too).

The dialogue is written for this test (no benchmark text)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memory.engine.schema import default_schema
from serving.config import EngineConfig
from serving.embedder import get_embedder, length_batches
from serving.listener import InProcessClient
from serving.protocol import ListenerJob

TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
CHUNKS = [
    [
        {"role": "user", "content": "I joined a pottery class yesterday and it was so relaxing.", "ts": TS},
        {"role": "assistant", "content": "Nice! How did it go?", "ts": TS},
        {"role": "user", "content": "My sister Ana lives in Porto; she has two cats.", "ts": TS},
    ],
    [
        {"role": "user", "content": "I'm a nurse at the city hospital, so I work night shifts.", "ts": TS},
        {"role": "assistant", "content": "That sounds tiring.", "ts": TS},
    ],
    [{"role": "user", "content": "Hey! How about you?", "ts": TS}],
    [{"role": "assistant", "content": "Only the other speaker talks here.", "ts": TS}],
]


def jobs(tree=None) -> list[ListenerJob]:
    schema = default_schema()
    return [
        ListenerJob(
            job_id=f"j{i}",
            subject_id=f"s{i}",
            base_version=0,
            schema_id=schema.id,
            schema_version=schema.version,
            tree=tree or {},
            turns=turns,
        )  # fmt: skip
        for i, turns in enumerate(CHUNKS)
    ]


@pytest.fixture(scope="module")
def client():
    return InProcessClient(EngineConfig(kind="extractive"))


def _comparable(results):
    return [r.model_dump(exclude={"latency_ms"}) for r in results]


def test_prefetched_chunks_give_the_results_of_their_own_runs_with_one_embedding_call(client):
    alone = _comparable(client.run(jobs()))
    facts = client.listener.pointing
    calls = []
    inner = facts._embed
    facts._embed = lambda texts: calls.append(len(texts)) or inner(texts)
    try:
        assert client.prefetch(jobs()) == len(CHUNKS)
        assert len(calls) == 1 and calls[0] >= 4  # every clause of every chunk in one call
        again = _comparable(client.run(jobs()))
        assert len(calls) == 1  # the runs took the prefetched analysis
    finally:
        facts._embed = inner
    assert again == alone
    assert not facts._prefetched  # taken, not kept


def test_a_chunk_whose_turns_changed_is_analysed_again(client):
    client.prefetch(jobs())
    changed = jobs()
    turns = list(changed[0].turns)
    turns[0] = turns[0].model_copy(update={"content": "I moved to Lisbon last week."})
    changed[0] = changed[0].model_copy(update={"turns": turns})
    results = client.run(changed)
    values = " ".join(str(op.value) for op in results[0].accepted)
    assert "pottery" not in values
    client.run(jobs())  # takes what is left


def test_length_batches_keep_similar_lengths_together():
    lengths = [100, 90, 85, 40, 38, 10, 9, 9, 9]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches = length_batches(order, lengths, 2)
    assert [[lengths[i] for i in b] for b in batches] == [[100, 90], [85], [40, 38], [10, 9], [9, 9]]
    assert sorted(i for b in length_batches(order, lengths, 64) for i in b) == list(range(len(lengths)))


def test_batched_vectors_equal_one_text_at_a_time():
    embedder = get_embedder("minilm", "")
    texts = ["I have a dog.", "My sister Ana lives in Porto and works as an architect at a firm.", "Hi!", ""]
    together = embedder.embed(texts)
    apart = np.concatenate([embedder.embed([t]) for t in texts])
    assert together.shape == (4, 384)
    assert np.abs(together - apart).max() < 1e-5


def test_only_clauses_the_grammar_keeps_are_embedded_and_classified(client):
    schema = default_schema()
    turns = [
        {
            "role": "user",
            "content": "Hey! How about you? Sounds great. I'm a nurse at the city hospital.",
            "ts": TS,
        }
    ]
    job = ListenerJob(job_id="g", subject_id="g", base_version=0, schema_id=schema.id,
                      schema_version=schema.version, tree={}, turns=turns)  # fmt: skip
    facts = client.listener.pointing
    seen: list[str] = []
    inner = facts._embed
    facts._embed = lambda texts: seen.extend(texts) or inner(texts)
    try:
        result = client.run([job])[0]
    finally:
        facts._embed = inner
    assert seen == ["I'm a nurse at the city hospital."]
    assert any("nurse" in str(op.value) for op in result.accepted)
