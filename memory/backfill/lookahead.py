"""A backfill's look-ahead: a ``--process`` round holds one chunk per subject (a chunk needs its
predecessor's tree), so the tree-free work (clauses, parses, embeddings: ``FactStep.prefetch``,
``index_spans_expected``) is done here for the next ``window`` open chunks in one call. It is keyed by
the chunk's turns: a chunk whose messages changed since is analysed again in its round.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import Chunk
from serving.protocol import ListenerJob, ListenerResult
from workers.dispatcher import build_jobs
from workers.indexing import index_spans_expected
from workers.ordering import Claim

#: Chunks read ahead at a time, over the subjects of the round that asked (the first of them each).
WINDOW = 128


def _chunk_id(job: ListenerJob) -> int | None:
    head = job.job_id.split(":", 1)[0]
    return int(head) if head.isdigit() else None


class Lookahead:
    """A listener client that prepares the next chunks of the subjects it is asked about first."""

    def __init__(self, client, *, window: int = WINDOW, index: bool = True) -> None:
        self.client = client
        self.window = max(1, window)
        self.index = index
        self.seen: set[int] = set()

    def run(self, jobs: Sequence[ListenerJob]) -> list[ListenerResult]:
        ids = [_chunk_id(j) for j in jobs]
        if any(i is not None and i not in self.seen for i in ids):
            self.ahead(sorted({int(j.subject_id) for j in jobs if j.subject_id.isdigit()}))
            self.seen.update(i for i in ids if i is not None)
        return self.client.run(jobs)

    def ahead(self, subject_ids: Sequence[int]) -> None:
        """Prepare the next open chunks of ``subject_ids`` (``window`` in all, each subject's first first)."""
        if not subject_ids:
            return
        per_subject = max(1, self.window // len(subject_ids))
        open_ = (Chunk.Status.PENDING, Chunk.Status.PROCESSING)
        by_subject = [
            list(
                Chunk.objects.filter(subject_id=sid, status__in=open_)
                .order_by("start_seq")
                .values_list("id", "subject_id", "start_seq", "end_seq")[:per_subject]
            )
            for sid in subject_ids
        ]
        # in the order the rounds will apply them: every subject's next chunk, then the one after
        ranks = zip_longest_rows(by_subject)
        rows = [row for rank in ranks for row in rank]
        if not rows:
            return
        self.seen.update(row[0] for row in rows)
        if self.index:
            index_spans_expected([(sid, start, end) for _id, sid, start, end in rows])
        prefetch = getattr(self.client, "prefetch", None)
        if prefetch is None:  # a remote listener prepares its own
            return
        jobs = []
        for rank in ranks:  # build_jobs reads one chunk per subject, as a round's claims are
            claims = [
                Claim(chunk_id=i, subject_id=sid, token=0, start_seq=a, end_seq=b) for i, sid, a, b in rank
            ]
            jobs += build_jobs(claims, record=False)
        prefetch(jobs)


def zip_longest_rows(lists: Sequence[list]) -> list[list]:
    """``[[a0, b0], [a1, b1], [a2]]`` for ``[[a0, a1, a2], [b0, b1]]``."""
    depth = max((len(rows) for rows in lists), default=0)
    return [[rows[k] for rows in lists if k < len(rows)] for k in range(depth)]
