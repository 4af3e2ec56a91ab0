"""MemListener: jobs in, typed ops out, for any engine; :class:`InProcessClient` runs one in process.

Per job: prompt, one batched generate, read the output (JSON, the paper's line format, or items the
engine hands over), pre-check every op with the gate (metrics only: the store's verdict is the one
recorded) and return every op read. ``run`` never raises: a bad job or a dead engine is a result
with ``error`` and ``retryable``, garbage output one with parse errors."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

from memory.engine.dates import chunk_evidence
from memory.engine.gate import GatePolicy, gate
from memory.engine.ops import Op
from memory.engine.parser import parse_ops
from memory.engine.pointing import ops_from_pointers
from memory.engine.render import count_tokens
from memory.engine.schema import Schema, SchemaError, get_schema, schema_from_document
from memory.engine.tree import Tree
from serving.config import EngineConfig, check_engine_config, prompt_mode_for
from serving.embedder import default_embed
from serving.engines.base import Engine, EngineError, Generation, Prompt
from serving.facts import FactStep, PointingContext
from serving.lazy import Lazy
from serving.output_schema import MAX_OPS, op_list_schema, pointer_list_schema
from serving.prompt import POINTING_PROMPT_VERSION, PROMPT_VERSION, build_pointing_prompt, build_prompt
from serving.protocol import ListenerJob, ListenerOp, ListenerResult, ListenerTurn

log = logging.getLogger(__name__)


_RAW_CONTROL = re.compile(r"[\x00-\x1f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_safe(text: str) -> str:
    """Raw control characters (xgrammar writes them inside JSON strings) as spaces; the line format,
    whose newlines separate ops, is left alone."""
    return _RAW_CONTROL.sub(" ", text) if text.lstrip().startswith(("{", "[")) else text


def storable(text: str) -> str:
    """``text`` as PostgreSQL can keep it (a model's NUL or lone surrogate failed every retry of the
    chunk's write): NUL as a space, a surrogate pair joined, a lone surrogate as U+FFFD."""
    if _SURROGATE.search(text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text.replace("\x00", " ")


def storable_data(value):
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable_data(k): storable_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_data(v) for v in value]
    return value


def _storable_op(op: Op) -> Op:
    fields: dict[str, Any] = {
        k: storable(v) for k in ("path", "value", "source") if isinstance(v := getattr(op, k), str)
    }
    return replace(op, **fields)


def storable_result(result: ListenerResult) -> ListenerResult:
    data = result.model_dump()
    clean = storable_data(data)
    return result if clean == data else ListenerResult.model_validate(clean)


def salvage_items(text: str) -> list | None:
    """The complete op objects of a JSON op list cut off by ``max_tokens``, as raw items; else None."""
    start = text.find("[")
    if start < 0 or not text.lstrip().startswith(("{", "[")):
        return None
    decoder = json.JSONDecoder()
    items, pos = [], start + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        items.append(obj)
    return items or None


def read_pointer_items(text: str) -> list:
    """The op items of a pointing reply; raises ValueError when it is not ``{"ops": [...]}``."""
    data = json.loads(text)
    items = data.get("ops") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError('expected {"ops": [...]}')
    return items


def pointer_ops(items: list, context: PointingContext, tree: Tree) -> tuple[list[Op], list[dict]]:
    """(ops, errors) of a pointing reply's items, errors in the parser's ``{line_no, line, message}``."""
    ops, errors = ops_from_pointers(
        items, context.sentences, context.candidates, tree.to_dict(), context.budgets, context.singles
    )
    return ops, [{"line_no": 0, "line": e.item, "message": e.message} for e in errors]


def pointer_items(text: str) -> tuple[list | None, list[dict]]:
    """``(items, notes)`` of a pointer reply (a cut-off salvaged and noted); ``(None, [error])`` if no list."""
    try:
        return read_pointer_items(text), []
    except ValueError as exc:  # JSON errors are ValueErrors too
        items = salvage_items(text)
        if items is None:
            return None, [{"line_no": 0, "line": text[:500], "message": f"not a JSON op list: {exc}"}]
        return items, [{"line_no": 0, "line": "", "message": f"output truncated; kept {len(items)} item(s)"}]


class ContextStep(Protocol):
    """What builds a chunk's pointing context: ``serving.facts.FactStep``, or the training rebuild's."""

    def prepare(
        self, schema: Schema, tree: Tree, turns: Sequence[Mapping], *, digest: str | None = None
    ) -> PointingContext: ...

    def prefetch(
        self, schema: Schema, turns_list: Sequence[Sequence[Mapping]], *, digest: str | None = None
    ) -> int: ...


class MemListener:
    """``pointing``: the pointing pipeline (no model call when no leaf fits); None: the full-enum
    prompt. A job's schema is its ``schema_document`` (a tenant's) or ``schema_resolver(id, version)``;
    what is cached per schema is keyed by id, version *and* the document's digest (ids are per
    tenant: two tenants may send one id and version with different leaves)."""

    def __init__(
        self,
        engine: Engine,
        *,
        policy: GatePolicy | None = None,
        constrained: bool = True,
        max_ops: int = MAX_OPS,
        schema_resolver: Callable[[str, int], Schema] = get_schema,
        pointing: ContextStep | None = None,
        grounding: bool = True,
    ) -> None:
        self.engine = engine
        self.schema_resolver = schema_resolver
        base = policy or GatePolicy()
        self.policy = GatePolicy(
            lenient=base.lenient, grounding=grounding, min_support=base.min_support, small_talk=True
        )
        self.constrained = constrained
        self.max_ops = max_ops
        self.pointing = pointing

    def job_schema(self, job: ListenerJob) -> tuple[Schema, str]:
        """``(schema, digest)`` of the job (digest "" for a shipped schema); ``SchemaError`` for a
        document that is invalid or names another schema than the job."""
        if job.schema_document is None:
            return self.schema_resolver(job.schema_id, job.schema_version), ""
        schema, digest = schema_from_document(job.schema_document)
        if schema.key != (job.schema_id, job.schema_version):
            raise SchemaError(
                f"schema_document is {schema.id} v{schema.version} but the job names "
                f"{job.schema_id} v{job.schema_version}"
            )
        return schema, digest

    def _error(self, job_id: str, message: str, *, retryable: bool, model_id: str = "") -> ListenerResult:
        return ListenerResult(
            job_id=job_id,
            error=message,
            retryable=retryable,
            model_id=model_id or self.engine.model_id,
            prompt_version=POINTING_PROMPT_VERSION if self.pointing else PROMPT_VERSION,
        )

    def _skipped(self, job: ListenerJob, reason: str) -> ListenerResult:
        return ListenerResult(
            job_id=job.job_id,
            ops=[ListenerOp.of(Op.no_op())],
            model_id=self.engine.model_id,
            model_version=getattr(self.engine, "model_version", ""),
            prompt_version=POINTING_PROMPT_VERSION,
            skipped_model=True,
            note=reason,
        )

    def _parse(self, prompt: Prompt, tree: Tree, gen: Generation, text: str):
        """(ops, parse errors) of the engine's items or ``text``, keeping complete ops before a cut-off."""
        if prompt.pointing is not None:
            items, notes = (gen.items, []) if gen.items is not None else pointer_items(text)
            if items is None:
                return [], notes
            ops, errors = pointer_ops(list(items), prompt.pointing, tree)
            return ops, notes + errors
        parsed, notes = parse_ops(text), []
        items = None if parsed.ops else salvage_items(text)
        if items is not None:
            parsed = parse_ops(json.dumps(items))
            notes = [
                {"line_no": 0, "line": "", "message": f"output truncated; kept {len(items)} complete op(s)"}
            ]
        return list(parsed.ops), notes + [e.to_dict() for e in parsed.errors]

    def _judge(
        self, job: ListenerJob, schema: Schema, tree: Tree, prompt: Prompt, gen: Generation
    ) -> ListenerResult:
        if gen.error is not None:
            return self._error(job.job_id, gen.error, retryable=gen.retryable, model_id=gen.model_id)
        text = storable(gen.text)  # also what the tokenizer counts: it refuses a lone surrogate
        ops, errors = self._parse(prompt, tree, gen, _json_safe(text))
        ops, errors = [_storable_op(op) for op in ops], storable_data(errors)  # JSON escapes decode late
        if not ops and not errors and prompt.pointing is not None:  # the model said NO_OP
            ops = [Op.no_op()]
        evidence = chunk_evidence(t.model_dump() for t in job.turns)
        precheck = {id(r.op): r for r in gate(schema, tree, ops, self.policy, evidence).rejected}
        return ListenerResult(
            job_id=job.job_id,
            ops=[ListenerOp.of(op, precheck.get(id(op))) for op in ops],
            parse_errors=errors,
            raw_text=text,
            model_id=gen.model_id or self.engine.model_id,
            model_version=getattr(self.engine, "model_version", ""),
            prompt_version=prompt.prompt_version,
            prompt_tokens=gen.prompt_tokens or count_tokens(prompt.text),
            completion_tokens=gen.completion_tokens or (count_tokens(text) if text else 0),
            latency_ms=gen.latency_ms,
        )

    def _prompt(
        self, job: ListenerJob, schema: Schema, tree: Tree, digest: str = ""
    ) -> tuple[Prompt | None, str, object]:
        """(prompt, skip reason, output-schema key); the enum key holds the schema's digest."""
        turns = [t.model_dump() for t in job.turns]
        if self.pointing is None:
            enum_key = ("enum", schema.id, schema.version, digest)
            return build_prompt(schema, tree.to_dict(), turns), "", enum_key
        context = self.pointing.prepare(schema, tree, turns, digest=digest or None)
        if context.skip_reason:
            return None, context.skip_reason, None
        key = (
            "pointing",
            len(context.sentences),
            len(context.candidates.leaves),
            max(context.budgets.values()),
        )
        return build_pointing_prompt(context, tree.to_dict(), turns), "", key

    def _output_schema(self, key, schema: Schema):
        if not self.constrained:
            return None
        if key[0] == "enum":
            return op_list_schema(schema, max_ops=self.max_ops)
        return pointer_list_schema(*key[1:3], max_ops=self.max_ops, max_len=key[3])  # not the schema's

    def run(self, jobs: Sequence[ListenerJob]) -> list[ListenerResult]:
        results: dict[int, ListenerResult] = {}
        # Group by output schema: one generate call per group (one constrained schema per call).
        groups: dict[object, list[tuple[int, ListenerJob, Schema, Tree, Prompt]]] = {}
        for i, job in enumerate(jobs):
            try:
                schema, digest = self.job_schema(job)
                tree = Tree(dict(job.tree))
                prompt, skip, key = self._prompt(job, schema, tree, digest)
            except Exception as exc:  # bad job: report it, never raise past the listener
                log.warning("memlistener could not prepare job %s: %r", job.job_id, exc)
                results[i] = self._error(job.job_id, f"bad job: {exc}", retryable=False)
                continue
            if prompt is None:
                results[i] = self._skipped(job, skip)
                continue
            groups.setdefault(key, []).append((i, job, schema, tree, prompt))

        for key, members in groups.items():
            json_schema = self._output_schema(key, members[0][2])
            prompts = [m[4] for m in members]
            start = time.perf_counter()
            try:
                gens = self.engine.generate(prompts, json_schema)
                if len(gens) != len(prompts):
                    raise EngineError(
                        f"engine returned {len(gens)} generations for {len(prompts)} prompts", retryable=True
                    )
            except EngineError as exc:
                log.warning("memlistener engine error: %s", exc)
                gens = [Generation(error=str(exc), retryable=exc.retryable) for _ in prompts]
            except Exception as exc:
                log.exception("memlistener engine crashed")
                gens = [Generation(error=f"engine failure: {exc!r}", retryable=True) for _ in prompts]
            elapsed_ms = (time.perf_counter() - start) * 1000
            for (i, job, schema_, tree, prompt), gen in zip(members, gens, strict=True):
                try:
                    res = self._judge(job, schema_, tree, prompt, gen)
                except Exception as exc:  # a gate/parser bug must not take the batch down
                    log.exception("memlistener judging failed for %s", job.job_id)
                    res = self._error(job.job_id, f"internal error judging output: {exc!r}", retryable=False)
                if not res.latency_ms:
                    res.latency_ms = elapsed_ms
                results[i] = res
        return [storable_result(results[i]) for i in range(len(jobs))]


def build_listener(
    config: EngineConfig, engine: Engine | None = None, *, lenient: bool = False
) -> MemListener:
    """The one MemListener factory (in-process clients and the Ray app)."""
    from serving.engines import build_engine

    check_engine_config(config)
    pointing = None
    if prompt_mode_for(config) == "pointing":
        pointing = FactStep(default_embed("minilm"), cache_dir=config.leaf_vectors_dir or None)
    return MemListener(
        engine if engine is not None else build_engine(config),
        policy=GatePolicy(lenient=lenient),
        constrained=config.constrained,
        max_ops=config.max_ops,
        pointing=pointing,
    )


#: A statement every step of the fact pipeline reads (a clause to classify, place, rewrite and date).
_WARM_UP_TEXT = "I moved to Lisbon last week and I work as a nurse at the children's hospital."


class InProcessClient:
    """A MemListener in this process (every backend but ``ray``), built on first use; one call at a time."""

    def __init__(self, engine_config: EngineConfig) -> None:
        self.engine_config = engine_config
        self._listener = Lazy(lambda: build_listener(self.engine_config))
        self._lock = threading.Lock()

    @property
    def listener(self) -> MemListener:
        return self._listener.get()

    def warm(self, schema_id: str, schema_version: int) -> None:
        """Load what the first real job would, with a throw-away job (a backfill runs it in a thread)."""
        turns = [
            ListenerTurn(role="user", content=_WARM_UP_TEXT, ts=datetime(2024, 1, 19, tzinfo=UTC)),
            ListenerTurn(role="assistant", content="That sounds like a big change."),
        ]
        self.run([ListenerJob(job_id="warm-up", subject_id="warm-up", base_version=0, schema_id=schema_id,
                              schema_version=schema_version, tree={}, turns=turns)])  # fmt: skip

    def prefetch(self, jobs: Sequence[ListenerJob]) -> int:
        """Run the context step's tree-free work for many jobs at once, for a later ``run`` (a backfill's
        next chunks). Returns the chunks analysed; 0 without a fact pipeline or engine."""
        try:
            listener = self.listener
        except Exception:  # noqa: BLE001 - the real run reports it
            return 0
        pointing = listener.pointing
        if pointing is None or not jobs:
            return 0
        groups: dict[tuple, tuple[Schema, str, list]] = {}
        for job in jobs:
            try:
                schema, digest = listener.job_schema(job)
            except Exception:  # noqa: BLE001 - a bad job is reported by its run
                continue
            group = groups.setdefault((schema.key, digest), (schema, digest, []))
            group[2].append([t.model_dump() for t in job.turns])
        done = 0
        with self._lock:
            for schema, digest, turns_list in groups.values():
                done += pointing.prefetch(schema, turns_list, digest=digest or None)
        return done

    def run(self, jobs: Sequence[ListenerJob]) -> list[ListenerResult]:
        if not jobs:
            return []
        try:
            listener = self.listener
        except Exception as exc:  # engine could not start: model file missing, runtime absent...
            return ListenerResult.failed(jobs, f"memlistener engine unavailable: {exc}", retryable=True)
        with self._lock:  # one generate at a time per in-process engine (llama.cpp is not reentrant)
            return listener.run(list(jobs))
