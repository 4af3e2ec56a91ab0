"""The soak's end checks, read from the database after the faults healed and the work drained.

``soak_checks(expected)`` takes what the producer had accepted (per subject external id: the
number of 3-pair ingest calls, one chunk each) and counts, per chunk:

- **lost**: a chunk whose messages were accepted but that is missing, or a message accepted and
  not stored, or a chunk ``applied`` with no op record at all (its result never written);
- **double_applied**: a chunk with op records from more than one apply (distinct ``batch``), or
  more than one tree version, or two chunk rows over the same span, or a message stored twice;
- **stuck**: a chunk that is not ``applied`` (pending, processing or failed) once every fault healed;
- **head_mismatch**: subjects whose versions are not numbered 1..head in chunk order, or whose
  version trees (the head's included; read through ``TreeVersion.snapshot``, however the row
  stores its tree) differ from the replay of their applied op records with the pure engine
  (``memory.engine.tree.apply``, folded as ``replay`` does).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from memory.engine.ops import Op
from memory.engine.tree import Tree, apply
from memory.models import Chunk, Message, OpRecord, Subject, TreeVersion

PAIRS_PER_CALL = 3  # the producer's calls: 3 user/assistant pairs = one chunk at CHUNK_PAIRS=3
# A chunk whose text holds tests/workers/listener_server.POISON crashes the stand-in MemListener's
# whole batch: it must end ``failed`` alone ("poison chunk: ..."), never stall the others.
SPAN = 2 * PAIRS_PER_CALL


def message_key(call: int, index: int) -> str:
    return f"c{call}-m{index}"


def _versions(subject: Subject) -> list:
    """The subject's versions in number order, each with its whole tree readable as ``snapshot``
    (stored whole or compactly: the model's own reader fills it, one query where it can)."""
    versions = list(TreeVersion.objects.filter(subject=subject).select_related("chunk").order_by("number"))
    load = getattr(TreeVersion.objects, "load_snapshots", None)
    return load(versions) if load is not None and versions else versions


def _replay_problem(subject: Subject, ops_by_version: dict) -> str:
    """'' when the subject's versions are 1..head in chunk order and each one's tree (the head's
    included) equals the replay of the applied op records up to it; else what differs."""
    versions = _versions(subject)
    numbers = [v.number for v in versions]
    if numbers != list(range(1, len(versions) + 1)) or subject.head_version != len(versions):
        return f"version numbers {numbers[:5]}... head {subject.head_version}"
    starts = [v.chunk.start_seq for v in versions if v.chunk is not None]
    if starts != sorted(starts) or len(set(starts)) != len(starts):
        return "versions not in chunk order"
    tree = Tree()
    for version in versions:
        tree, _ = apply(tree, ops_by_version.get(version.pk, ()))
        if tree != Tree.from_dict(version.snapshot):
            return f"version {version.number} differs from the replay of its op log"
    head = Subject.objects.select_related("head").get(pk=subject.pk).head
    if versions and (head is None or tree != Tree.from_dict(head.snapshot)):
        return "head differs from the replay of its op log"
    return ""


def soak_checks(
    expected: dict[str, int], *, poisoned: frozenset[tuple[str, int]] = frozenset(), sample: int = 10
) -> dict:
    """See the module docstring. ``expected``: external id -> ingest calls accepted; ``poisoned``:
    the ``(external id, call)`` chunks that must end ``failed`` as poison (quarantined), not applied."""
    subjects = {s.external_id: s for s in Subject.objects.all()}
    messages = defaultdict(list)
    for sid, key in Message.objects.values_list("subject_id", "idempotency_key"):
        messages[sid].append(key)
    chunks = defaultdict(list)
    errors = {}
    for row in Chunk.objects.values_list("id", "subject_id", "start_seq", "end_seq", "status", "last_error"):
        chunks[row[1]].append(row[:5])
        errors[row[0]] = row[5]
    batches: dict[int, set] = defaultdict(set)
    for chunk_id, batch in OpRecord.objects.filter(chunk__isnull=False).values_list("chunk_id", "batch"):
        batches[chunk_id].add(batch)
    version_count = Counter(TreeVersion.objects.values_list("chunk_id", flat=True))
    ops_by_version = defaultdict(list)
    for vid, op_type, path, value in (
        OpRecord.objects.filter(version__isnull=False, status__in=["applied", "approved"])
        .exclude(op_type="NO_OP")
        .order_by("version_id", "position", "id")
        .values_list("version_id", "op_type", "path", "new_value")
    ):
        ops_by_version[vid].append(Op(op_type, path, value))

    counts = Counter()
    problems: list[str] = []

    def note(kind: str, what: str, n: int = 1) -> None:
        counts[kind] += n
        if len(problems) < sample:
            problems.append(f"{kind}: {what}")

    for external_id, calls in sorted(expected.items()):
        subject = subjects.get(external_id)
        if subject is None:
            note("lost", f"subject {external_id} missing ({calls} chunks)", calls)
            continue
        keys = Counter(messages[subject.pk])
        wanted = {message_key(c, i) for c in range(calls) for i in range(SPAN)}
        if missing := wanted - set(keys):
            note("lost", f"{external_id}: {len(missing)} accepted messages not stored", 0)
            counts["messages_lost"] += len(missing)
        if doubled := sum(n - 1 for n in keys.values() if n > 1):
            note("double_applied", f"{external_id}: {doubled} messages stored twice", 0)
            counts["messages_doubled"] += doubled
        spans = Counter((row[2], row[3]) for row in chunks[subject.pk])
        for call in range(calls):
            span = (1 + SPAN * call, SPAN * (call + 1))
            if spans[span] == 0:
                note("lost", f"{external_id}: no chunk over seqs {span}")
            elif spans[span] > 1:
                note("double_applied", f"{external_id}: {spans[span]} chunks over seqs {span}")
        for chunk_id, _sid, start, _end, status in chunks[subject.pk]:
            if (external_id, (start - 1) // SPAN) in poisoned:
                if status == Chunk.Status.FAILED and errors[chunk_id].startswith("poison chunk"):
                    counts["quarantined"] += 1
                else:
                    note(
                        "stuck",
                        f"{external_id} poison chunk {chunk_id} is {status}: {errors[chunk_id][:60]!r}",
                    )
                continue
            if status != Chunk.Status.APPLIED:
                note("stuck", f"{external_id} chunk {chunk_id} (seq {start}) is {status}")
            elif not batches[chunk_id]:
                note("lost", f"{external_id} chunk {chunk_id} applied without any op record")
            if len(batches[chunk_id]) > 1 or version_count[chunk_id] > 1:
                note(
                    "double_applied",
                    f"{external_id} chunk {chunk_id}: {len(batches[chunk_id])} applies, "
                    f"{version_count[chunk_id]} versions",
                )
        if problem := _replay_problem(subject, ops_by_version):
            note("head_mismatch", f"{external_id}: {problem}")
    attempts = list(Chunk.objects.values_list("attempts", flat=True))
    return {
        "chunks": sum(len(rows) for rows in chunks.values()),
        # Evidence that the faults hit work in flight: a chunk claimed more than once lost a claim
        # to a kill or a database restart (outages of the MemListener give their attempt back).
        "chunks_claimed_again": sum(1 for a in attempts if a > 1),
        "max_attempts": max(attempts, default=0),
        "chunks_with_last_error": Chunk.objects.exclude(last_error="").count(),
        "chunks_expected": sum(expected.values()),
        "applied": sum(1 for rows in chunks.values() for row in rows if row[4] == Chunk.Status.APPLIED),
        "versions": sum(n for chunk_id, n in version_count.items() if chunk_id is not None),
        "lost": counts["lost"] + counts["messages_lost"],
        "double_applied": counts["double_applied"] + counts["messages_doubled"],
        "stuck": counts["stuck"],
        "quarantined": counts["quarantined"],
        "poison_expected": len(poisoned),
        "head_mismatch": counts["head_mismatch"],
        "subjects": len(expected),
        "problems": problems,
    }
