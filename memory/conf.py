"""Typed PersonaTree settings: every ``PERSONATREE_*`` variable declared once, with its type, default
and help, on a field of a frozen pydantic section (docs/ARCHITECTURE.md, "Settings"). :func:`get`
rebuilds them when ``settings.PERSONATREE`` changes, in place too (compared with its copy).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, cast

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    TypeAdapter,
    ValidationError,
)

T = TypeVar("T")
ListenerBackend = Literal["local", "extractive", "ray", "openai", "recorded", "standin"]  # serving.client
RecallStrategy = Literal["batch", "threads", "overlap"]  # memory.recall.search.STRATEGIES
ResponderBackend = Literal["local", "openai", "recorded", "standin", "none"]
AnswerMode = Literal["extractive", "model"]  # memory.services.query.answer_build
THROTTLE_RATE = r"^[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)$"  # DRF's parse_rate
PromptModeSetting = Literal["pointing", "full_enum", ""]  # serving.config.PromptMode, "": engine default


def _http_url(value: str) -> str:
    if value.startswith(("http://", "https://")):
        return value
    raise ValueError("expected an http:// or https:// URL")


HttpUrl = Annotated[str, AfterValidator(_http_url)]
HttpUrlOrEmpty = Annotated[str, AfterValidator(lambda value: value and _http_url(value))]


class _Section(BaseModel):
    """A group of settings; each field's alias is its key in ``settings.PERSONATREE`` and, with the
    ``PERSONATREE_`` prefix, its environment variable. Its default and help are declared here only."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


def _f(default: Any, alias: str, help: str, **constraints: Any) -> Any:
    """A setting: its default (``{data_dir}`` / ``{base_dir}`` filled in by :func:`from_environ`), its key, its help."""
    return Field(default, alias=alias, description=help, **constraints)


class ListenerSettings(_Section):
    """The MemListener client and its engine (whose ranges ``serving.config.EngineConfig`` checks)."""

    backend: ListenerBackend = _f(
        "extractive",
        "MEMLISTENER_BACKEND",
        "extractive (the fact pipeline, no model; the embedded default) | local (llama.cpp in process) | "
        "ray (Ray Serve over HTTP) | openai (a compatible endpoint) | recorded (replays a recording; tests) "
        "| standin (zero-latency stand-in; benchmarks)",
    )
    url: HttpUrl = _f(
        "http://127.0.0.1:8000/memlistener", "MEMLISTENER_URL", "the Ray Serve route (backend ray)"
    )
    timeout_s: PositiveFloat = _f(300.0, "MEMLISTENER_TIMEOUT_S", "one listener call, seconds")
    recording_path: str = _f(
        "{base_dir}/tests/fixtures/recordings/memlistener.jsonl",
        "MEMLISTENER_RECORDING_PATH",
        "backend recorded",
    )
    standin_mode: Literal["no_op", "derived"] = _f("no_op", "MEMLISTENER_STANDIN_MODE", "backend standin")
    standin_latency_ms: NonNegativeFloat = _f(0.0, "MEMLISTENER_STANDIN_LATENCY_MS", "backend standin")
    max_tokens: int = _f(256, "MEMLISTENER_MAX_TOKENS", "model output cap, tokens")
    max_ops: int = _f(6, "MEMLISTENER_MAX_OPS", "longest op list the constrained output allows")
    prompt_cache_dir: str = _f(
        "",
        "MEMLISTENER_PROMPT_CACHE_DIR",
        "llama.cpp disk cache of the static prompt prefix; it keeps prompts (subjects' turns), so every "
        "erasure empties it; empty: off",
    )
    prompt_mode: PromptModeSetting = _f(
        "", "MEMLISTENER_PROMPT_MODE", "pointing | full_enum (GPU models); empty: the engine's default"
    )
    leaf_vectors_dir: str = _f(
        "",
        "MEMLISTENER_LEAF_VECTORS_DIR",
        "where the fact pipeline keeps each schema's embedded leaf texts (schema texts only, no user "
        "data), so a new process loads them instead of embedding ~700 texts; empty: off",
    )
    max_turn_chars: NonNegativeInt = _f(
        6000, "MEMLISTENER_MAX_TURN_CHARS", "a turn is cut to this; 0 = no cap"
    )
    max_chunk_chars: NonNegativeInt = _f(
        16000, "MEMLISTENER_MAX_CHUNK_CHARS", "a chunk is cut to this; 0 = no cap"
    )


class ModelSettings(_Section):
    """Model locations shared by the MemListener and the responder."""

    model_path: str = _f("{data_dir}/models/memlistener.gguf", "LOCAL_MODEL_PATH", "the GGUF (make model)")
    base_url: HttpUrlOrEmpty = _f("", "OPENAI_BASE_URL", "an OpenAI-compatible endpoint (backend openai)")
    api_key: str = _f("", "OPENAI_API_KEY", "the endpoint's key", repr=False)
    model: str = _f("", "OPENAI_MODEL", "the endpoint's model name")


class RecallSettings(_Section):
    milvus_uri: str = _f(
        "{data_dir}/milvus.db", "MILVUS_URI", "a Milvus server URI or a Milvus Lite file", min_length=1
    )
    milvus_token: str = _f("", "MILVUS_TOKEN", "a Milvus server's token", repr=False)
    milvus_collection: str = _f(
        "evidence", "MILVUS_COLLECTION", "the evidence collection's name", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )
    milvus_timeout_s: PositiveFloat = _f(10.0, "MILVUS_TIMEOUT_S", "one Milvus call, seconds")
    flush_idle_s: NonNegativeFloat = _f(
        10.0,
        "EVIDENCE_FLUSH_IDLE_S",
        "small indexing batches are flushed after this many idle seconds; 0 = never",
    )
    embedder: Literal["minilm", "bge-m3"] = _f(
        "minilm", "EMBEDDER", "minilm (shipped) | bge-m3 (EMBEDDER_PATH)"
    )
    embedder_path: str = _f("", "EMBEDDER_PATH", "bge-m3's directory")
    reranker_path: str = _f("", "RERANKER_PATH", "empty: no reranker")
    strategy: RecallStrategy = _f(
        "batch", "RECALL_STRATEGY", "batch (quiet hosts) | threads | overlap (contended CPUs); bench_query"
    )
    router_threshold: float = _f(0.5, "ROUTER_THRESHOLD", "auto mode goes deep above this", ge=0.0, le=1.0)
    evidence_indexing: bool = _f(
        True, "EVIDENCE_INDEXING", "index dialogue for recall (off only in some tests)"
    )


class IngestSettings(_Section):
    chunk_pairs: PositiveInt = _f(3, "CHUNK_PAIRS", "user/assistant pairs per chunk (the paper's best w)")
    idle_flush_seconds: NonNegativeInt = _f(
        300, "IDLE_FLUSH_SECONDS", "a partial chunk is flushed after this"
    )
    max_messages_per_call: NonNegativeInt = _f(500, "MAX_MESSAGES_PER_CALL", "413 above it; 0 = no limit")
    max_message_chars: PositiveInt = _f(20000, "MAX_MESSAGE_CHARS", "413 above it")
    max_request_bytes: NonNegativeInt = _f(
        None, "MAX_REQUEST_BYTES", "413 above it; 0 = no limit; default: room for both limits above"
    )
    import_max_bytes: PositiveInt = _f(
        32 * 1024 * 1024, "IMPORT_MAX_BYTES", "POST /v1/imports: a larger JSONL body or upload is a 413"
    )


class DispatchSettings(_Section):
    batch_max_jobs: PositiveInt = _f(16, "BATCH_MAX_JOBS", "listener jobs per dispatcher batch")
    batch_max_wait_ms: NonNegativeInt = _f(200, "BATCH_MAX_WAIT_MS", "wait for a batch to fill")
    chunk_max_attempts: PositiveInt = _f(5, "CHUNK_MAX_ATTEMPTS", "then the chunk is failed")
    chunk_lease_seconds: PositiveInt = _f(
        600,
        "CHUNK_LEASE_SECONDS",
        "a vanished worker's chunk is re-claimable after this (keep > the model timeout)",
    )


class ReviewSettings(_Section):
    """Governance defaults of a new tenant (its policy overrides them)."""

    special_tier: bool = _f(True, "REVIEW_SPECIAL_TIER", "hold model writes to special-tier leaves")
    mass_delete_over: NonNegativeInt = _f(3, "REVIEW_MASS_DELETE_OVER", "hold a chunk deleting more leaves")


class AnswerSettings(_Section):
    """Answers (``answer_build``) and the responder model (query expansion, model answers)."""

    mode: AnswerMode = _f("extractive", "ANSWER_MODE", "extractive (cited leaf values and evidence) | model")
    backend: ResponderBackend = _f("local", "RESPONDER_BACKEND", "the MemListener's backends")
    recording_path: str = _f("", "RESPONDER_RECORDING_PATH", "backend recorded")
    max_tokens: int = _f(256, "RESPONDER_MAX_TOKENS", "responder output cap, tokens", ge=1, le=4096)


class WebhookSettings(_Section):
    max_attempts: PositiveInt = _f(6, "WEBHOOK_MAX_ATTEMPTS", "attempts per delivery")
    timeout_s: PositiveFloat = _f(10.0, "WEBHOOK_TIMEOUT_S", "per attempt")
    allow_private_targets: bool = _f(
        False,
        "WEBHOOK_ALLOW_PRIVATE_TARGETS",
        "let endpoints target private addresses (trusted networks, tests)",
    )
    max_endpoints_per_tenant: PositiveInt = _f(20, "WEBHOOK_MAX_ENDPOINTS_PER_TENANT", "409 above it")
    max_concurrent_per_tenant: PositiveInt = _f(4, "WEBHOOK_MAX_CONCURRENT_PER_TENANT", "deliveries at once")


class OpsSettings(_Section):
    metrics_enabled: bool = _f(False, "METRICS_ENABLED", "serve /metrics")
    metrics_token: str = _f("", "METRICS_TOKEN", "/metrics then needs this Bearer token", repr=False)
    readyz_timeout_s: PositiveFloat = _f(1.0, "READYZ_TIMEOUT_S", "per network check of /readyz")
    worker_metrics_port: NonNegativeInt = _f(
        0, "WORKER_METRICS_PORT", "a Celery worker's Prometheus exporter port (workers/exporter.py); 0 is off"
    )
    worker_metrics_addr: str = _f("127.0.0.1", "WORKER_METRICS_ADDR", "the worker exporter's bind address")
    log_format: Literal["plain", "json"] = _f("plain", "LOG_FORMAT", "one JSON object a line with json")
    throttle_rate: str = _f(
        "600/min", "THROTTLE_RATE", "requests per API key (DRF rate: n/s|min|hour|day)", pattern=THROTTLE_RATE
    )


class BeatSettings(_Section):
    """Celery beat's periods (``settings.CELERY_BEAT_SCHEDULE``), in seconds."""

    sweep_seconds: PositiveFloat = _f(30.0, "SWEEP_SECONDS", "workers.sweep: idle windows, stuck chunks")
    evidence_flush_seconds: PositiveFloat = _f(300.0, "EVIDENCE_FLUSH_SECONDS", "workers.flush_evidence")
    erasure_reconcile_seconds: PositiveFloat = _f(
        300.0, "ERASURE_RECONCILE_SECONDS", "workers.reconcile_erasures"
    )
    webhook_sweep_seconds: PositiveFloat = _f(300.0, "WEBHOOK_SWEEP_SECONDS", "workers.sweep_webhooks")
    index_reconcile_seconds: PositiveFloat = _f(
        300.0, "INDEX_RECONCILE_SECONDS", "workers.reconcile_indexing"
    )


class Settings(BaseModel):
    """Every section; built by :func:`get`, never by hand outside tests."""

    model_config = ConfigDict(frozen=True)

    listener: ListenerSettings
    models: ModelSettings
    recall: RecallSettings
    ingest: IngestSettings
    dispatch: DispatchSettings
    review: ReviewSettings
    answer: AnswerSettings
    webhooks: WebhookSettings
    ops: OpsSettings
    beat: BeatSettings


class SettingsError(ImproperlyConfigured, ValueError):
    """Invalid ``PERSONATREE`` settings. ``problems``: ``(section, message)`` pairs, one per bad value."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("invalid PERSONATREE settings: " + "; ".join(msg for _, msg in problems))


def _key_of(section: str, field: str) -> str:
    model = Settings.model_fields[section].annotation
    info = model.model_fields.get(field) if isinstance(model, type) else None
    return (info.alias or field) if info else field


def _problem(key: str, err: Any) -> str:
    tail = ": missing" if err["type"] == "missing" else f"={err['input']!r}: {err['msg']}"
    return f"PERSONATREE_{key}{tail}"


def _problems(exc: ValidationError) -> list[tuple[str, str]]:
    return [
        (str(err["loc"][0]), _problem(str(err["loc"][1] if len(err["loc"]) > 1 else ""), err))
        for err in exc.errors(include_url=False)
    ]


# Engine fields (serving.config.EngineConfig) -> the section whose field of the same name feeds them.
_ENGINE_SOURCES = dict.fromkeys(
    ("max_tokens", "max_ops", "prompt_cache_dir", "timeout_s", "recording_path", "standin_mode")
    + ("standin_latency_ms", "leaf_vectors_dir"),
    "listener",
)
_ENGINE_SOURCES |= dict.fromkeys(("model_path", "base_url", "api_key", "model"), "models")


def build(raw: Mapping[str, Any]) -> Settings:
    """Validate ``raw`` (a ``PERSONATREE`` dict); raises :class:`SettingsError`. Uncached."""
    try:
        return Settings.model_validate({name: raw for name in Settings.model_fields})
    except ValidationError as exc:
        raise SettingsError(_problems(exc)) from None


def listener_client_config(make: Callable[..., T], typed: Settings | None = None) -> T:
    """``make(backend=, url=, timeout_s=, engine={...})`` (``serving.client.ClientConfig``) from
    ``typed`` (default :func:`get`); what it refuses is a :class:`SettingsError` naming the variables."""
    s = typed or get()
    lis = s.listener
    engine = {name: getattr(getattr(s, section), name) for name, section in _ENGINE_SOURCES.items()}
    try:
        engine["prompt_mode"] = lis.prompt_mode or None
        return make(backend=lis.backend, url=lis.url, timeout_s=lis.timeout_s, engine=engine)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            if not err["loc"]:  # check_engine_config: a combination the field types cannot express
                why = err.get("ctx", {}).get("error", err["msg"])
                problems.append(("listener", f"MemListener settings: {why}"))
                continue
            name = str(err["loc"][-1])
            problems.append(("listener", _problem(_key_of(_ENGINE_SOURCES.get(name, "listener"), name), err)))
        raise SettingsError(problems) from None


def from_environ(environ: Mapping[str, str], *, data_dir: Path, base_dir: Path) -> dict[str, Any]:
    """``settings.PERSONATREE`` from the ``PERSONATREE_*`` variables (``settings/base.py`` calls this):
    each key's variable read as its field's type, else the field's default. A value that does not
    read is kept as given, so :func:`build` (and ``manage.py check``) names it with its problem."""
    raw: dict[str, Any] = {}
    for section in Settings.model_fields.values():
        model = cast(type[_Section], section.annotation)
        for info in model.model_fields.values():
            key = cast(str, info.alias)
            given = environ.get(f"PERSONATREE_{key}")
            if given is None:
                value = info.default
                raw[key] = (
                    value.format(data_dir=data_dir, base_dir=base_dir) if isinstance(value, str) else value
                )
                continue
            try:
                raw[key] = TypeAdapter(cast(Any, info.annotation)).validate_python(given)
            except ValidationError:
                raw[key] = given
    if raw["MAX_REQUEST_BYTES"] is None:  # room for a call at both limits, 4 UTF-8 bytes a character
        calls, chars = raw["MAX_MESSAGES_PER_CALL"], raw["MAX_MESSAGE_CHARS"]
        if isinstance(calls, int) and isinstance(chars, int):
            raw["MAX_REQUEST_BYTES"] = calls * (4 * chars + 1024)
    return raw


def environment_defaults(raw: dict[str, Any], environ: Mapping[str, str], **defaults: Any) -> None:
    """An environment's own defaults (``local.py``, ...): each key's unless its variable is set."""
    for key, value in defaults.items():
        if key not in raw:
            raise KeyError(f"{key} is not a PersonaTree setting")
        if f"PERSONATREE_{key}" not in environ:
            raw[key] = value


_lock = threading.Lock()
_built: tuple[dict, Settings] | None = None  # (copy of the dict it was built from, its settings)


def get() -> Settings:
    """The typed settings, built once per distinct ``settings.PERSONATREE``; :class:`SettingsError` if bad."""
    global _built
    raw = django_settings.PERSONATREE
    built = _built
    if built is not None and built[0] == raw:
        return built[1]
    with _lock:
        if _built is None or _built[0] != raw:
            copy = dict(raw)
            _built = (copy, build(copy))
        return _built[1]


def reset() -> None:
    """Forget the built settings (the next :func:`get` rebuilds them)."""
    global _built
    with _lock:
        _built = None


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "PERSONATREE":
        reset()


setting_changed.connect(_on_setting_changed, dispatch_uid="memory.conf.reset")
