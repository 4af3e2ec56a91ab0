"""Typed PersonaTree settings, built once from ``settings.PERSONATREE``.

``personatree_site/settings/base.py`` reads every ``PERSONATREE_*`` environment variable (django-environ,
the one reader) into the dict ``settings.PERSONATREE``, and that is the one place defaults live.
This module validates the dict into frozen pydantic models, one per concern, and hands them out::

    from memory import conf

    conf.get().dispatch.batch_max_jobs

- :func:`get` builds :class:`Settings` on first use and returns the same object until
  ``settings.PERSONATREE`` changes: Django's ``setting_changed`` signal (``override_settings``,
  pytest-django's ``settings`` fixture) drops it, and a change made to the dict in place (the
  evaluation harness, tests) is noticed by comparing the dict with the copy it was built from
  (about a microsecond), so a stale value is never served.
- A bad value raises :class:`SettingsError` (an ``ImproperlyConfigured`` and a ``ValueError``) naming
  every bad variable, e.g. ``PERSONATREE_CHUNK_PAIRS=0: Input should be greater than 0``;
  ``memory.checks`` reports the same messages as system-check errors at start-up.
- :func:`listener_client_config` is the MemListener's ``serving.client.ClientConfig`` (engine settings
  included, so ``max_ops``, the prompt mode and the candidate settings reach ``build_listener``):
  serving never reads Django, it is handed this.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

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
    ValidationError,
)

from serving.client import Backend
from serving.config import EngineConfig, check_engine_config

if TYPE_CHECKING:
    from serving.client import ClientConfig

RecallStrategy = Literal["batch", "threads", "overlap"]  # memory.recall.search.STRATEGIES
ResponderBackend = Literal["local", "openai", "recorded", "standin", "none"]
AnswerMode = Literal["extractive", "model"]  # memory.services.query.answer_build
PromptModeSetting = Literal["pointing", "full_enum", ""]  # serving.config.PromptMode, "": engine default


def _http_url(value: str) -> str:
    if value.startswith(("http://", "https://")):
        return value
    raise ValueError("expected an http:// or https:// URL")


HttpUrl = Annotated[str, AfterValidator(_http_url)]
HttpUrlOrEmpty = Annotated[str, AfterValidator(lambda value: value and _http_url(value))]


class _Section(BaseModel):
    """A group of settings; each field's alias is its key in ``settings.PERSONATREE`` (and its
    environment variable without the ``PERSONATREE_`` prefix). No defaults here: base.py has them."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class ListenerSettings(_Section):
    """The MemListener client (``workers``, backfill) and its engine; ranges of the engine fields are
    ``serving.config.EngineConfig``'s own, checked when :func:`listener_client_config` is built."""

    backend: Backend = Field(alias="MEMLISTENER_BACKEND")
    url: HttpUrl = Field(alias="MEMLISTENER_URL")
    timeout_s: PositiveFloat = Field(alias="MEMLISTENER_TIMEOUT_S")
    recording_path: str = Field(alias="MEMLISTENER_RECORDING_PATH")
    standin_mode: Literal["no_op", "derived"] = Field(alias="MEMLISTENER_STANDIN_MODE")
    standin_latency_ms: NonNegativeFloat = Field(alias="MEMLISTENER_STANDIN_LATENCY_MS")
    max_tokens: int = Field(alias="MEMLISTENER_MAX_TOKENS")
    max_ops: int = Field(alias="MEMLISTENER_MAX_OPS")
    prompt_cache_dir: str = Field(alias="MEMLISTENER_PROMPT_CACHE_DIR")
    prompt_mode: PromptModeSetting = Field(alias="MEMLISTENER_PROMPT_MODE")
    candidate_k: int = Field(alias="MEMLISTENER_CANDIDATE_K")
    candidate_threshold: float = Field(alias="MEMLISTENER_CANDIDATE_THRESHOLD")
    max_turn_chars: NonNegativeInt = Field(alias="MEMLISTENER_MAX_TURN_CHARS")  # 0 = no cap
    max_chunk_chars: NonNegativeInt = Field(alias="MEMLISTENER_MAX_CHUNK_CHARS")


class ModelSettings(_Section):
    """Model locations shared by the MemListener and the responder."""

    model_path: str = Field(alias="LOCAL_MODEL_PATH")
    base_url: HttpUrlOrEmpty = Field(alias="OPENAI_BASE_URL")
    api_key: str = Field(alias="OPENAI_API_KEY", repr=False)
    model: str = Field(alias="OPENAI_MODEL")


class RecallSettings(_Section):
    milvus_uri: str = Field(alias="MILVUS_URI", min_length=1)
    milvus_token: str = Field(alias="MILVUS_TOKEN", repr=False)
    milvus_collection: str = Field(alias="MILVUS_COLLECTION", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    milvus_timeout_s: PositiveFloat = Field(alias="MILVUS_TIMEOUT_S")
    flush_idle_s: NonNegativeFloat = Field(alias="EVIDENCE_FLUSH_IDLE_S")  # 0 = never
    embedder: Literal["minilm", "bge-m3"] = Field(alias="EMBEDDER")
    embedder_path: str = Field(alias="EMBEDDER_PATH")
    reranker_path: str = Field(alias="RERANKER_PATH")  # empty: no reranker
    strategy: RecallStrategy = Field(alias="RECALL_STRATEGY")
    router_threshold: float = Field(alias="ROUTER_THRESHOLD", ge=0.0, le=1.0)
    evidence_indexing: bool = Field(alias="EVIDENCE_INDEXING")


class IngestSettings(_Section):
    chunk_pairs: PositiveInt = Field(alias="CHUNK_PAIRS")
    idle_flush_seconds: NonNegativeInt = Field(alias="IDLE_FLUSH_SECONDS")
    max_messages_per_call: NonNegativeInt = Field(alias="MAX_MESSAGES_PER_CALL")  # 0 = no limit
    max_message_chars: PositiveInt = Field(alias="MAX_MESSAGE_CHARS")
    max_request_bytes: NonNegativeInt = Field(alias="MAX_REQUEST_BYTES")  # 0 = no limit


class DispatchSettings(_Section):
    batch_max_jobs: PositiveInt = Field(alias="BATCH_MAX_JOBS")
    batch_max_wait_ms: NonNegativeInt = Field(alias="BATCH_MAX_WAIT_MS")
    chunk_max_attempts: PositiveInt = Field(alias="CHUNK_MAX_ATTEMPTS")
    chunk_lease_seconds: PositiveInt = Field(alias="CHUNK_LEASE_SECONDS")


class ReviewSettings(_Section):
    """Governance defaults of a new tenant (its policy overrides them)."""

    special_tier: bool = Field(alias="REVIEW_SPECIAL_TIER")
    mass_delete_over: NonNegativeInt = Field(alias="REVIEW_MASS_DELETE_OVER")


class AnswerSettings(_Section):
    """Answers (``memory.services.query.answer_build``: ``mode`` extractive = quoted, cited passages, no
    model; model = the responder) and the responder: query expansion, model answers
    (``memory.recall.runtime``)."""

    mode: AnswerMode = Field(alias="ANSWER_MODE")
    backend: ResponderBackend = Field(alias="RESPONDER_BACKEND")
    recording_path: str = Field(alias="RESPONDER_RECORDING_PATH")
    max_tokens: int = Field(alias="RESPONDER_MAX_TOKENS", ge=1, le=4096)


class WebhookSettings(_Section):
    max_attempts: PositiveInt = Field(alias="WEBHOOK_MAX_ATTEMPTS")
    timeout_s: PositiveFloat = Field(alias="WEBHOOK_TIMEOUT_S")
    allow_private_targets: bool = Field(alias="WEBHOOK_ALLOW_PRIVATE_TARGETS")
    max_endpoints_per_tenant: PositiveInt = Field(alias="WEBHOOK_MAX_ENDPOINTS_PER_TENANT")
    max_concurrent_per_tenant: PositiveInt = Field(alias="WEBHOOK_MAX_CONCURRENT_PER_TENANT")


class OpsSettings(_Section):
    metrics_enabled: bool = Field(alias="METRICS_ENABLED")
    metrics_token: str = Field(alias="METRICS_TOKEN", repr=False)
    readyz_timeout_s: PositiveFloat = Field(alias="READYZ_TIMEOUT_S")


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


class SettingsError(ImproperlyConfigured, ValueError):
    """Invalid ``PERSONATREE`` settings. ``problems``: ``(section, message)`` pairs, one per bad value."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("invalid PERSONATREE settings: " + "; ".join(msg for _, msg in problems))


def _key_of(section: str, field: str) -> str:
    model = Settings.model_fields[section].annotation
    info = model.model_fields.get(field) if isinstance(model, type) else None
    return (info.alias or field) if info else field


def _problems(exc: ValidationError) -> list[tuple[str, str]]:
    out = []
    for err in exc.errors(include_url=False):
        section, key = str(err["loc"][0]), str(err["loc"][1] if len(err["loc"]) > 1 else "")
        if err["type"] == "missing":
            out.append((section, f"PERSONATREE_{key}: missing (give it a default in settings/base.py)"))
        else:
            out.append((section, f"PERSONATREE_{key}={err['input']!r}: {err['msg']}"))
    return out


# Engine fields (serving.config.EngineConfig) -> the section whose field of the same name feeds them.
_ENGINE_SOURCES = dict.fromkeys(
    ("max_tokens", "max_ops", "prompt_cache_dir", "timeout_s", "recording_path", "standin_mode")
    + ("standin_latency_ms", "candidate_k", "candidate_threshold"),
    "listener",
)
_ENGINE_SOURCES |= dict.fromkeys(("model_path", "base_url", "api_key", "model"), "models")
_ENGINE_SOURCES |= dict.fromkeys(("embedder", "embedder_path"), "recall")


def _client_config(s: Settings) -> ClientConfig:
    from serving.client import ClientConfig, engine_config_for

    lis = s.listener
    values = {name: getattr(getattr(s, section), name) for name, section in _ENGINE_SOURCES.items()}
    try:
        engine = EngineConfig(prompt_mode=lis.prompt_mode or None, **values)
        client = ClientConfig(backend=lis.backend, url=lis.url, timeout_s=lis.timeout_s, engine=engine)
        check_engine_config(engine_config_for(client))
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            name = str(err["loc"][0])
            key = _key_of(_ENGINE_SOURCES.get(name, "listener"), name)
            problems.append(("listener", f"PERSONATREE_{key}={err['input']!r}: {err['msg']}"))
        raise SettingsError(problems) from None
    except ValueError as exc:  # combinations the field types cannot express
        raise SettingsError([("listener", f"MemListener settings: {exc}")]) from None
    return client


def build(raw: Mapping[str, Any]) -> tuple[Settings, ClientConfig]:
    """Validate ``raw`` (a ``PERSONATREE`` dict); raises :class:`SettingsError`. Uncached."""
    try:
        typed = Settings.model_validate({name: raw for name in Settings.model_fields})
    except ValidationError as exc:
        raise SettingsError(_problems(exc)) from None
    return typed, _client_config(typed)


_lock = threading.Lock()
_built: tuple[dict, Settings, ClientConfig] | None = None  # (copy of the dict it was built from, ...)


def _current() -> tuple[dict, Settings, ClientConfig]:
    global _built
    raw = django_settings.PERSONATREE
    built = _built
    if built is not None and built[0] == raw:
        return built
    with _lock:
        if _built is None or _built[0] != raw:
            copy = dict(raw)
            _built = (copy, *build(copy))
        return _built


def get() -> Settings:
    """The typed settings (built once per distinct ``settings.PERSONATREE``); :class:`SettingsError`
    if a value is invalid."""
    return _current()[1]


def listener_client_config() -> ClientConfig:
    """The MemListener client configuration for ``serving.client.get_listener_client``."""
    return _current()[2]


def reset() -> None:
    """Forget the built settings (the next :func:`get` rebuilds them)."""
    global _built
    with _lock:
        _built = None


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "PERSONATREE":
        reset()


setting_changed.connect(_on_setting_changed, dispatch_uid="memory.conf.reset")
