"""What a chunk's audit rows say the model should (not) have written.

Input: the ``OpRecord`` rows a model actor wrote for one chunk (one apply batch) and the subject's
history of tree-changing rows. Policy:

- **gold** = the chunk's ops that reached the tree or were accepted by a human:
  ``applied`` rows (NO_OP included), ``approved`` rows (a moderator approved a held op), and rows a
  moderator approved that the re-gate then refused because the tree had moved on since (status
  ``rejected`` with a decision time): the op was right for the tree the model saw.
- **moderator corrections**: for a gold op on leaf P, the *next* row that changed P (by the version
  it produced; any actor) is looked at. If it is an admin's (a leaf edit or a revert in the
  admin), the moderator corrected the model:
  ADD/UPDATE then an admin ADD/UPDATE -> the gold op keeps its type and takes the admin's value
  (origin ``edited``); ADD/UPDATE then an admin DELETE -> the op moves to the negatives (origin
  ``moderator_deleted``); DELETE then an admin write of the deleted value -> negative
  (``moderator_restored``). A later model write on P in between means no correction. This is a
  heuristic: an admin edit long after, for a reason unrelated to the chunk, is read as a
  correction too.
- **negatives** = ``declined`` rows (a moderator refused a held op), plus the two moderator origins
  above.
- **rejected** = the gate's rejections of the chunk (reason code kept), for analysis; parse errors
  are only counted.
- ``pending`` counts rows still waiting for review: the exporter skips such chunks until decided.
- ``no_model_call``: the pointing listener wrote the chunk's NO_OP without calling the model
  (its audit detail starts with "no model call").

Ops are dicts in ``Op.to_dict()`` form (``op``, ``path``, ``value``, ``source`` when the row
has a ``source_text``) plus ``origin``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memory.models import OpRecord

S = OpRecord.Status
WRITES = ("ADD", "UPDATE")
NO_MODEL_CALL = "no model call"


def op_dict(record: OpRecord, *, value: Any = ..., origin: str = "") -> dict[str, Any]:
    """The row as an op dict; ``value`` overrides the row's value."""
    is_no_op = record.op_type == "NO_OP"
    d: dict[str, Any] = {
        "op": record.op_type,
        "path": None if is_no_op else (record.path or None),
        "value": None if is_no_op else (record.new_value if value is ... else value),
    }
    if record.source_text:
        d["source"] = record.source_text
    if origin:
        d["origin"] = origin
    return d


class PathHistory:
    """The subject's tree-changing rows per leaf, in version order (applied / approved, with a version)."""

    def __init__(self, records: Iterable[OpRecord]) -> None:
        by_path: dict[str, list[tuple[int, int, OpRecord]]] = {}
        for r in records:
            if r.path and r.status in (S.APPLIED, S.APPROVED) and r.version_id is not None:
                by_path.setdefault(r.path, []).append((r.version.number, r.pk, r))
        for rows in by_path.values():
            rows.sort(key=lambda x: x[:2])
        self._numbers = {p: [n for n, _, _ in rows] for p, rows in by_path.items()}
        self._rows = {p: [r for _, _, r in rows] for p, rows in by_path.items()}

    def next_after(self, record: OpRecord) -> OpRecord | None:
        """The first row that changed ``record.path`` in a later version than ``record``'s."""
        if not record.path or record.version_id is None:
            return None
        numbers = self._numbers.get(record.path, [])
        i = bisect.bisect_right(numbers, record.version.number)
        return self._rows[record.path][i] if i < len(numbers) else None


@dataclass
class ChunkOps:
    gold: list[dict] = field(default_factory=list)
    negatives: list[dict] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)
    parse_errors: int = 0
    pending: int = 0
    no_model_call: bool = False
    paths: set[str] = field(default_factory=set)  # every leaf the chunk's rows name


def _approved_late(r: OpRecord) -> bool:
    """Approved by a moderator, then refused by the re-gate against a newer head."""
    return r.status == S.REJECTED and r.decided_at is not None


def _gold_or_correction(r: OpRecord, history: PathHistory, out: ChunkOps, origin: str) -> None:
    nxt = history.next_after(r)
    if nxt is not None and nxt.actor_kind == OpRecord.ActorKind.ADMIN:
        if r.op_type in WRITES and nxt.op_type in WRITES:
            out.gold.append(op_dict(r, value=nxt.new_value, origin="edited"))
            return
        if r.op_type in WRITES and nxt.op_type == "DELETE":
            out.negatives.append(op_dict(r, origin="moderator_deleted"))
            return
        if r.op_type == "DELETE" and nxt.op_type in WRITES and nxt.new_value == r.old_value:
            out.negatives.append(op_dict(r, origin="moderator_restored"))
            return
    out.gold.append(op_dict(r, origin=origin))


def chunk_ops(records: Sequence[OpRecord], history: PathHistory) -> ChunkOps:
    """Sort one chunk's model rows (in ``position`` order) into gold, negatives and rejections."""
    out = ChunkOps()
    for r in sorted(records, key=lambda x: (x.position, x.pk)):
        if r.path:
            out.paths.add(r.path)
        if r.status == S.APPLIED:
            if r.op_type == "NO_OP" and (r.detail or "").startswith(NO_MODEL_CALL):
                out.no_model_call = True
            _gold_or_correction(r, history, out, "applied")
        elif r.status == S.APPROVED:
            _gold_or_correction(r, history, out, "approved")
        elif _approved_late(r):
            out.gold.append(op_dict(r, origin="approved"))
        elif r.status == S.DECLINED:
            out.negatives.append(op_dict(r, origin="declined"))
        elif r.status == S.PENDING_REVIEW:
            out.pending += 1
        elif r.reason_code == "PARSE_ERROR":
            out.parse_errors += 1
        else:
            out.rejected.append({**op_dict(r), "reason": r.reason_code})
    return out
