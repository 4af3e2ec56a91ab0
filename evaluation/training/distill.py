"""Teacher runs: training lines written by a MemListener backend over conversation files.

The audit log only holds what moderators saw; to train a student before there is much of it,
a **teacher** (any MemListener backend: the extractive pipeline, a larger local model, an
OpenAI-compatible endpoint) runs over conversations the way ingestion would -- each subject's
chunks in order, each on the tree so far, the gate's accepted ops applied -- and every chunk that
reached the model becomes one line of the export format (``personatree-training/1``, see
docs/TRAINING.md), so ``evaluation.training.train`` reads both alike.

What a line holds beyond the audit export:

- ``prompt``: exactly the prompt the listener built (pointing or full enum, by the teacher's
  ``prompt_mode``), captured from the engine call, so it cannot drift from what a student is
  later asked;
- ``target``: what the student must write -- the teacher's reply **reduced to the items whose op
  the gate accepted** (a teacher op the gate refused is not taught); ``{"ops": []}`` when nothing
  passed (the pointing listener's NO_OP);
- ``gold``: the accepted ops with ``origin: "teacher"``; ``rejected``: the gate's refusals;
- ``pointing`` (pointing prompts): the numbered sentences and candidate slots of the prompt, so
  the GRPO reward maps a sampled reply to ops exactly as the listener would, without the embedder;
- ``schema_document``: the schema's document when it is not one the engine ships (``--schema
  FILE.json``, a tenant's own), sent to the teacher with each job and read back by the scorer and
  the reward (:func:`evaluation.training.data.schema_of`); None for a shipped schema.

Chunks the listener answered without a model call (no candidate leaf, no self-disclosure) are not
written: a student running the same pipeline is never asked about them either. The split is by
subject (:func:`evaluation.training.split.split_of`) unless ``--val-conversation`` names whole
conversations for ``val``.

    python -m evaluation.training.distill --data ../shared/benchmarks/locomo/locomo_dev5.json \\
        --conversation conv-26 --conversation conv-41 --teacher extractive \\
        --out var/training/distilled.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.training.data import FORMAT
from evaluation.training.pointing import context_json
from evaluation.training.split import split_of
from memory.engine.chunker import chunk_turns
from memory.engine.ops import Op
from memory.engine.schema import Schema, default_schema, get_schema, load_schema, shipped_schemas
from memory.engine.tree import Tree, apply
from serving.engines.base import Generation, Prompt

TEACHER_ORIGIN = "teacher"


class RecordingEngine:
    """Wraps an engine and keeps the last call's prompts and generations (one chunk per call)."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.model_id = engine.model_id
        self.model_version = getattr(engine, "model_version", "")
        self.calls: list[tuple[Prompt, Generation]] = []

    def generate(self, prompts: Sequence[Prompt], json_schema: dict[str, Any] | None) -> list[Generation]:
        gens = self.engine.generate(prompts, json_schema)
        self.calls.extend(zip(prompts, gens, strict=False))
        return gens

    def check_health(self) -> None:
        self.engine.check_health()

    def close(self) -> None:
        self.engine.close()


@dataclass
class Subject:
    """One subject's dialogue: ``turns`` are ``{"role", "content"}`` from the subject's side."""

    key: str
    turns: list[dict[str, str]]
    conversation: str = ""


@dataclass
class DistillStats:
    chunks: int = 0
    lines: int = 0
    skipped: Counter = field(default_factory=Counter)
    items_kept: int = 0
    items_dropped: int = 0


def locomo_subjects(path: str | Path, conversations: Iterable[str] = ()) -> Iterator[Subject]:
    """Both speakers of each LoCoMo record (``sample_id`` in ``conversations``; all when empty)."""
    from memory.backfill.locomo import LocomoSource

    wanted = set(conversations)
    for history in LocomoSource(path):
        sample_id = history.meta["sample_id"]
        if wanted and sample_id not in wanted:
            continue
        turns = [{"role": m.role, "content": m.content} for m in history.messages]
        yield Subject(key=history.external_id, turns=turns, conversation=sample_id)


def kept_items(text: str, prompt: Prompt, tree: Tree, accepted: Sequence[Op]) -> tuple[list, int]:
    """The teacher's pointer items whose op the gate accepted, and how many were dropped."""
    from serving.listener import pointer_ops, read_pointer_items

    try:
        items = read_pointer_items(text)
    except ValueError:
        return [], 0
    wanted = {(op.type, op.path, op.value) for op in accepted}
    kept = []
    for item in items:
        ops, errors = pointer_ops([item], prompt.pointing, tree)
        if ops and not errors and all((op.type, op.path, op.value) in wanted for op in ops):
            kept.append(item)
    return kept, len(items) - len(kept)


def full_enum_target(accepted: Sequence[Op]) -> str:
    real = [op.to_dict() for op in accepted if op.path is not None]
    return json.dumps({"ops": real or [Op.no_op().to_dict()]}, ensure_ascii=False)


def distill_subject(
    listener,
    subject: Subject,
    schema: Schema,
    *,
    split: str,
    stats: DistillStats,
    max_chunks: int | None = None,
    schema_document: dict[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """``schema_document``: the document of a schema the engine does not ship (see
    :func:`schema_and_document`), sent with each job and written to each line."""
    from serving.protocol import ListenerJob

    recorder: RecordingEngine = listener.engine
    numbered = [{**t, "seq": i + 1} for i, t in enumerate(subject.turns)]
    chunks = chunk_turns(numbered, pairs=3, include_partial=True)
    if max_chunks is not None:
        chunks = chunks[:max_chunks]
    tree = Tree.empty()
    for k, chunk in enumerate(chunks):
        turns = [{"role": t.role, "content": t.content} for t in chunk.turns]
        job = ListenerJob(job_id=f"{subject.key}#{k}", subject_id=subject.key, base_version=k,
                          schema_id=schema.id, schema_version=schema.version,
                          schema_document=schema_document, tree=tree.to_dict(), turns=turns)  # fmt: skip
        recorder.calls.clear()
        result = listener.run([job])[0]
        stats.chunks += 1
        if result.error:
            stats.skipped["teacher_error"] += 1
            continue
        accepted = [o.to_op() for o in result.accepted if o.op != "NO_OP"]
        if result.skipped_model or not recorder.calls:
            stats.skipped["no_model_call"] += 1
        else:
            prompt, gen = recorder.calls[0]
            pointing = None
            if prompt.pointing is not None:
                pointing = context_json(prompt.pointing)
                items, dropped = kept_items(gen.text, prompt, tree, accepted)
                stats.items_kept += len(items)
                stats.items_dropped += dropped
                target = json.dumps({"ops": items}, ensure_ascii=False)
            else:
                target = full_enum_target(accepted)
            stats.lines += 1
            yield {
                "format": FORMAT,
                "chunk_id": k,
                "chunk_key": job.job_id,
                "subject_id": subject.key,
                "conversation": subject.conversation,
                "tenant": "",
                "split": split,
                "schema_id": schema.id,
                "schema_version": schema.version,
                "schema_document": schema_document,
                "base_version": k,
                "prompt_version": prompt.prompt_version,
                "model_id": result.model_id,
                "model_version": "",
                "teacher": result.model_id,
                "tree": tree.to_dict(),
                "turns": turns,
                "prompt": {"static": prompt.static, "dynamic": prompt.dynamic},
                "prompt_note": "captured from the teacher's engine call",
                "target": target,
                "pointing": pointing,
                "gold": [{**op.to_dict(), "origin": TEACHER_ORIGIN} for op in accepted]
                or [{**Op.no_op().to_dict(), "origin": TEACHER_ORIGIN}],
                "negatives": [],
                "rejected": [{**o.to_op().to_dict(), "reason": o.precheck} for o in result.rejected],
                "parse_errors": len(result.parse_errors),
                "special_removed": 0,
            }
        tree, _ = apply(tree, accepted)


def schema_and_document(
    schema: Schema | None = None, document: dict[str, Any] | None = None
) -> tuple[Schema, dict[str, Any] | None]:
    """The schema of a teacher run and its document (None when the engine ships it): ``document``
    parsed (it must name ``schema``'s id and version when both are given), else ``schema`` (its
    ``to_dict()`` form when it is not a shipped one), else the default schema."""
    if document is not None:
        if not isinstance(document, dict):
            raise ValueError(f"a schema document is a JSON object, got {type(document).__name__}")
        doc = dict(document)
        parsed = load_schema(doc)
        if schema is not None and (schema.key != parsed.key or schema.leaves != parsed.leaves):
            raise ValueError(
                f"schema_document ({parsed.id} v{parsed.version}) does not match the given schema {schema.id} v{schema.version}"
            )
        return parsed, doc
    schema = schema or default_schema()
    if schema.key in shipped_schemas() and get_schema(*schema.key) == schema:
        return schema, None
    return schema, schema.to_dict()


def teacher_listener(engine_config, engine=None):
    """The configured MemListener with its engine wrapped in a :class:`RecordingEngine`."""
    from serving.engines import build_engine
    from serving.listener import build_listener

    recorder = RecordingEngine(engine if engine is not None else build_engine(engine_config))
    return build_listener(engine_config, engine=recorder)


def distill(
    subjects: Iterable[Subject],
    listener,
    out,
    *,
    val_conversations: Sequence[str] = (),
    seed: int = 0,
    val_share: float = 0.0,
    max_chunks: int | None = None,
    schema: Schema | None = None,
    schema_document: dict[str, Any] | None = None,
) -> DistillStats:
    """Run the teacher ``listener`` (engine: a :class:`RecordingEngine`) over ``subjects`` and
    write one JSON line per model call to ``out``. The schema: :func:`schema_and_document`."""
    if not isinstance(listener.engine, RecordingEngine):
        raise TypeError("the teacher listener's engine must be a RecordingEngine (teacher_listener())")
    schema, document = schema_and_document(schema, schema_document)
    stats = DistillStats()
    for subject in subjects:
        if subject.conversation in val_conversations:
            split = "val"
        else:
            split = split_of(subject.key, seed=seed, val_share=val_share)
        for line in distill_subject(
            listener,
            subject,
            schema,
            split=split,
            stats=stats,
            max_chunks=max_chunks,
            schema_document=document,
        ):
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return stats


def teacher_config(spec: str, prompt_mode: str):
    """``extractive`` | ``local:PATH.gguf`` | ``openai:URL#MODEL`` -> EngineConfig."""
    from serving.config import EngineConfig

    kind, _, rest = spec.partition(":")
    if kind == "extractive":
        return EngineConfig(kind="extractive", prompt_mode=prompt_mode)
    if kind == "local" and rest:
        return EngineConfig(kind="llamacpp", model_path=rest, prompt_mode=prompt_mode)
    if kind == "openai" and rest:
        url, _, model = rest.partition("#")
        return EngineConfig(kind="openai", base_url=url, model=model, prompt_mode=prompt_mode)
    raise ValueError(f"unknown teacher {spec!r} (extractive | local:PATH.gguf | openai:URL#MODEL)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="a LoCoMo JSON file")
    ap.add_argument("--conversation", action="append", default=[], help="sample_id (repeat; default all)")
    ap.add_argument("--val-conversation", action="append", default=[], help="whole conversation -> val")
    ap.add_argument("--teacher", default="extractive")
    ap.add_argument("--prompt-mode", default="pointing", choices=["pointing", "full_enum"])
    ap.add_argument("--max-chunks", type=int, default=None, help="first N chunks of each subject")
    ap.add_argument("--schema", default=None, help="a schema document (JSON) the engine does not ship")
    ap.add_argument("--out", required=True)
    ap.add_argument("--overwrite", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        print(f"distill: {out} exists (use --overwrite)", file=sys.stderr)
        return 2
    try:
        config = teacher_config(args.teacher, args.prompt_mode)
        document = json.loads(Path(args.schema).read_text(encoding="utf-8")) if args.schema else None
        if document is not None:
            schema_and_document(None, document)  # refuse an invalid document before the run
    except (ValueError, OSError) as exc:
        print(f"distill: {exc}", file=sys.stderr)
        return 2
    wanted = list(dict.fromkeys(args.conversation + args.val_conversation))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        stats = distill(
            locomo_subjects(args.data, wanted), teacher_listener(config), fh,
            val_conversations=args.val_conversation, max_chunks=args.max_chunks, schema_document=document,
        )  # fmt: skip
    print(
        json.dumps(
            {
                "out": str(out),
                "chunks": stats.chunks,
                "lines": stats.lines,
                "skipped": dict(stats.skipped),
                "items_kept": stats.items_kept,
                "items_dropped": stats.items_dropped,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
