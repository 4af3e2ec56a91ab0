"""One training example per chunk a model processed, rebuilt from the audit log.

For each subject (id order) and each chunk with op rows of a ``model`` actor (chunk order), the
example holds what the listener was given and what the store made of its answer:

- the schema (``subject.schema_id`` / ``schema_version``, shipped or the tenant's own:
  ``memory.selectors.subject_schema``; ``schema_document`` holds the tenant's uploaded document,
  None for a shipped schema, so the scorer and the reward need no database), the tree at the rows' ``base_version``
  (the ``TreeVersion`` snapshot of that number; version 0 is the empty tree);
- the chunk's turns exactly as ``workers.dispatcher.build_jobs`` assembles them: the subject's
  user/assistant messages of the chunk's seq span, preceded by the last system message at or
  before the span's end, if any;
- the prompt, rebuilt with the recorded ``prompt_version``: ``serving.prompt.build_prompt`` for the
  full-enum prompt; the pointing prompt only when a ``pointing_prompt`` builder is given
  (``--rebuild-pointing``: it needs an embedder and the candidate settings the chunks ran with,
  see :mod:`.pointing`); any other version (an older prompt text) is not rebuilt, ``prompt_note``
  says why;
- gold, negatives and gate rejections (:mod:`.gold`) and, for the full-enum prompt, ``target``:
  the gold ops as the JSON the prompt asks for.

Skipped (counted in :class:`ExportStats`): chunks with ops still waiting for review (picked up by a
later ``--resume`` run once decided), chunks the pointing listener answered without a model call,
chunks with no gold op, chunks written in more than one model batch, and -- unless
``include_special`` -- every chunk whose rows name a ``special``-tier leaf (its dialogue states
the special fact). Without ``include_special`` special-tier values are also removed from the tree
of every other example, and the prompt is built from that filtered tree (``special_removed``
counts them), so it differs from what the listener saw by exactly those leaves.

Erasure deletes a subject's rows, so an erased subject is never read; a subject erased while it
is being exported is dropped (it is checked again after its examples are built).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from evaluation.training.gold import ChunkOps, PathHistory, chunk_ops
from evaluation.training.split import split_of
from memory import selectors
from memory.engine.schema import Schema
from memory.models import Chunk, Message, OpRecord, Subject, TreeVersion
from serving.prompt import POINTING_PROMPT_VERSION, PROMPT_VERSION, build_prompt

FORMAT = "personatree-training/1"
SPECIAL = "special"


@dataclass
class ExportOptions:
    tenant: str | None = None
    seed: int = 0
    val_share: float = 0.1
    include_special: bool = False
    skip_chunks: Collection[int] = ()


@dataclass
class ExportStats:
    written: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    splits: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def summary(self) -> str:
        parts = [f"{self.written} example(s)"] + [f"{k} {v}" for k, v in sorted(self.splits.items())]
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items()) if v)
        return "; ".join(parts) + (f"; skipped: {skipped}" if skipped else "")


def model_chunks(tenant: str | None = None):
    """Queryset of the ids of chunks with model rows (for progress totals)."""
    qs = OpRecord.objects.filter(actor_kind=OpRecord.ActorKind.MODEL, chunk__isnull=False)
    if tenant:
        qs = qs.filter(subject__tenant__name=tenant)
    return qs.values_list("chunk_id", flat=True).distinct()


def chunk_turns(messages: list[tuple[int, str, str]], start: int, end: int) -> list[dict[str, str]]:
    """The listener's turns for a chunk (see the module docstring); ``messages`` in seq order."""
    turns = [{"role": r, "content": c} for s, r, c in messages if start <= s <= end and r != "system"]
    system = [c for s, r, c in messages if r == "system" and s <= end]
    if system:
        turns.insert(0, {"role": "system", "content": system[-1]})
    return turns


def _target(gold: list[dict]) -> str:
    ops = [{"op": g["op"], "path": g["path"], "value": g["value"]} for g in gold]
    return json.dumps({"ops": ops}, ensure_ascii=False)


class Exporter:
    """Builds the examples; ``pointing_prompt`` is injected (see :mod:`.pointing`)."""

    def __init__(self, options: ExportOptions, pointing_prompt: Callable | None = None) -> None:
        self.options = options
        self.pointing_prompt = pointing_prompt
        self.stats = ExportStats()

    def subjects(self):
        qs = Subject.objects.select_related("tenant").order_by("pk")
        if self.options.tenant:
            qs = qs.filter(tenant__name=self.options.tenant)
        return qs.filter(
            pk__in=OpRecord.objects.filter(actor_kind=OpRecord.ActorKind.MODEL).values("subject_id")
        )

    def examples(self, on_chunk: Callable[[], None] | None = None) -> Iterator[dict[str, Any]]:
        """Every example, subject by subject; ``on_chunk`` is called once per chunk looked at."""
        for subject in self.subjects().iterator():
            lines = list(self._subject_examples(subject, on_chunk))
            if not Subject.objects.filter(pk=subject.pk).exists():
                self.stats.skipped["erased_during_export"] += len(lines)
                continue
            for line in lines:
                self.stats.written += 1
                self.stats.splits[line["split"]] += 1
                yield line

    def _subject_examples(self, subject: Subject, on_chunk) -> Iterator[dict[str, Any]]:
        records = list(OpRecord.objects.filter(subject=subject).select_related("version").order_by("pk"))
        by_chunk: dict[int, list[OpRecord]] = defaultdict(list)
        for r in records:
            if r.actor_kind == OpRecord.ActorKind.MODEL and r.chunk_id is not None:
                by_chunk[r.chunk_id].append(r)
        todo = {cid: rows for cid, rows in by_chunk.items() if cid not in self.options.skip_chunks}
        for _ in range(len(by_chunk) - len(todo)):
            self.stats.skipped["already_in_file"] += 1
            if on_chunk:
                on_chunk()
        if not todo:
            return
        schema = selectors.subject_schema(subject)  # a shipped schema or the tenant's own
        # the tenant's uploaded document (None for a shipped schema): a line is read without the DB
        document = selectors.schema_document(subject.tenant_id, schema.id, schema.version)
        history = PathHistory(records)
        chunks = {c.pk: c for c in Chunk.objects.filter(pk__in=list(todo))}
        bases = {rows[0].base_version for rows in todo.values()}
        snapshots = TreeVersion.objects.trees(subject.pk, bases)
        messages = list(
            Message.objects.filter(subject=subject).order_by("seq").values_list("seq", "role", "content")
        )
        split = split_of(subject.pk, seed=self.options.seed, val_share=self.options.val_share)
        for _ in range(len(todo) - len(chunks)):
            self._skip("chunk_missing")
        for chunk in sorted(chunks.values(), key=lambda c: (c.start_seq, c.pk)):
            line = self._example(
                subject, schema, chunk, todo[chunk.pk], history, snapshots, messages, split, document
            )
            if on_chunk:
                on_chunk()
            if line is not None:
                yield line

    def _skip(self, why: str) -> None:
        self.stats.skipped[why] += 1

    def _example(self, subject, schema: Schema, chunk, rows, history, snapshots, messages, split, document):
        if len({r.batch for r in rows}) > 1:
            return self._skip("several_model_batches")
        ops: ChunkOps = chunk_ops(rows, history)
        if ops.pending:
            return self._skip("pending_review")
        if ops.no_model_call:
            return self._skip("no_model_call")
        if not ops.gold:
            return self._skip("no_gold")
        special = {leaf.path for leaf in schema.leaves if leaf.tier == SPECIAL}
        if not self.options.include_special and ops.paths & special:
            return self._skip("special_tier")
        first = rows[0]
        tree = {} if first.base_version == 0 else snapshots.get(first.base_version)
        if tree is None:
            return self._skip("base_version_missing")
        removed = 0
        if not self.options.include_special:
            kept = {p: v for p, v in tree.items() if p not in special}
            removed, tree = len(tree) - len(kept), kept
        turns = chunk_turns(messages, chunk.start_seq, chunk.end_seq)
        prompt, note = self._prompt(first.prompt_version, schema, tree, turns)
        return {
            "format": FORMAT,
            "chunk_id": chunk.pk,
            "chunk_key": chunk.chunk_key,
            "subject_id": subject.pk,
            "tenant": subject.tenant.name,
            "split": split,
            "schema_id": schema.id,
            "schema_version": schema.version,
            "schema_document": document,
            "base_version": first.base_version,
            "prompt_version": first.prompt_version,
            "model_id": first.model_id,
            "model_version": first.model_version,
            "tree": dict(sorted(tree.items())),
            "turns": turns,
            "prompt": prompt,
            "prompt_note": note,
            "target": _target(ops.gold)
            if prompt is not None and first.prompt_version == PROMPT_VERSION
            else None,
            "gold": ops.gold,
            "negatives": ops.negatives,
            "rejected": ops.rejected,
            "parse_errors": ops.parse_errors,
            "special_removed": removed,
        }

    def _prompt(self, version: str, schema: Schema, tree: dict, turns: list[dict]):
        """``({"static", "dynamic"} or None, note)``."""
        if version == PROMPT_VERSION:
            p = build_prompt(schema, tree, turns)
            return {"static": p.static, "dynamic": p.dynamic}, ""
        if version == POINTING_PROMPT_VERSION:
            if self.pointing_prompt is None:
                return None, "pointing prompt not rebuilt (needs the embedder: --rebuild-pointing)"
            p, why = self.pointing_prompt(schema, tree, turns)
            if p is None:
                return None, why
            return {"static": p.static, "dynamic": p.dynamic}, "rebuilt with the given candidate settings"
        return None, f"prompt version {version or '(none)'} cannot be rebuilt by this code"
