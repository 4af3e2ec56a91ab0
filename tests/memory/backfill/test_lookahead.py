"""A backfill's look-ahead: the next chunks' jobs reach the client's ``prefetch`` before their rounds,
built exactly as the rounds build them, in the order the rounds apply them."""

from __future__ import annotations

from pathlib import Path

from memory.backfill import PersonamemSource
from memory.backfill.lookahead import Lookahead, zip_longest_rows
from memory.backfill.service import backfill_run
from memory.models import Chunk
from tests.workers.helpers import WatchingClient

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "backfill"


class Prefetching(WatchingClient):
    def __init__(self):
        super().__init__()
        self.prefetched: list[list] = []
        self.ran: dict[int, list] = {}

    def prefetch(self, jobs):
        self.prefetched.append(list(jobs))
        self.calls.append(["prefetch"])
        return len(jobs)

    def run(self, jobs):
        for job in jobs:
            self.ran[int(job.job_id.split(":")[0])] = job.turns
        return super().run(jobs)


def _run(tenant, client):
    source = PersonamemSource(FIXTURES / "personamem_tiny.jsonl")
    return backfill_run(
        tenant=tenant, histories=source, process=True, client=client, progress=False, index=False
    )


def test_the_next_chunks_are_prefetched_before_their_rounds_with_the_rounds_turns(tenant):
    client = Prefetching()
    report = _run(tenant, client)
    assert report.applied == report.chunks == Chunk.objects.count() > 2
    assert client.calls[0] == ["prefetch"]  # before the first round
    ahead = [job for call in client.prefetched for job in call]
    ids = [int(job.job_id.split(":")[0]) for job in ahead]
    assert sorted(ids) == sorted(Chunk.objects.values_list("id", flat=True))  # each chunk once
    for job in ahead:  # the turns the round sent for that chunk
        assert job.turns == client.ran[int(job.job_id.split(":")[0])]
    # in the order rounds apply them: every subject's first chunk, then every subject's second ...
    seqs = {c.id: (c.subject_id, c.start_seq) for c in Chunk.objects.all()}
    ranks = [sorted(s for sid, s in seqs.values() if sid == seqs[i][0]).index(seqs[i][1]) for i in ids]
    assert ranks == sorted(ranks)
    assert client.violations == []


def test_a_small_window_prefetches_again_when_the_rounds_reach_unseen_chunks(tenant):
    client = Prefetching()

    class Small(Lookahead):
        def __init__(self, inner, **kwargs):
            super().__init__(inner, window=2, index=False)

    import memory.backfill.lookahead as lookahead

    original = lookahead.Lookahead
    lookahead.Lookahead = Small
    try:
        report = _run(tenant, client)
    finally:
        lookahead.Lookahead = original
    assert report.applied == report.chunks
    assert len(client.prefetched) >= report.chunks // 2 and all(len(c) <= 2 for c in client.prefetched)


def test_a_client_without_prefetch_runs_unchanged(tenant):
    client = WatchingClient()
    report = _run(tenant, client)
    assert report.applied == report.chunks == Chunk.objects.count()
    assert "prefetch" not in str(client.calls)


def test_zip_longest_rows_interleaves_by_rank():
    assert zip_longest_rows([[1, 2, 3], ["a", "b"], []]) == [[1, "a"], [2, "b"], [3]]
