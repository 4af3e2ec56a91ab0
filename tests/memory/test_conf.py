"""Typed settings (memory/conf.py): built once from settings.PERSONATREE, validated with messages that
name the environment variable, rebuilt when the settings change, and reported by the system check."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from django.test import override_settings

from memory import conf
from memory.checks import personatree_settings
from memory.recall.search import STRATEGIES
from personatree_site.settings import base
from serving.client import Backend, ClientConfig, RayServeClient, get_listener_client, reset_listener_clients
from serving.config import PromptMode
from serving.listener import InProcessClient


def test_defaults_are_declared_once_in_conf_and_validate():
    typed = conf.build(base.PERSONATREE)
    client = conf.listener_client_config(ClientConfig, typed)
    assert typed.dispatch.batch_max_jobs == base.PERSONATREE["BATCH_MAX_JOBS"] == 16
    assert typed.listener.max_ops == base.PERSONATREE["MEMLISTENER_MAX_OPS"] == client.engine.max_ops
    assert typed.recall.milvus_timeout_s == base.PERSONATREE["MILVUS_TIMEOUT_S"]
    assert typed.answer.max_tokens == base.PERSONATREE["RESPONDER_MAX_TOKENS"]
    # Every field carries its help, and base.py holds no default of its own.
    for section in conf.Settings.model_fields.values():
        for info in section.annotation.model_fields.values():  # type: ignore[union-attr]
            assert info.description, f"{info.alias} has no help"
    source = (Path(base.__file__)).read_text(encoding="utf-8")
    # The data directory, which the other defaults are built from, is the one variable it reads itself.
    assert set(re.findall(r"PERSONATREE_[A-Z_]+", source)) <= {
        "PERSONATREE_DATA_DIR",
        "PERSONATREE_LOG_FORMAT",
    }
    assert re.findall(r"env\.\w+\(\s*\"(PERSONATREE_[A-Z_]+)", source) == ["PERSONATREE_DATA_DIR"]
    beat = {entry["task"]: entry["schedule"] for entry in base.CELERY_BEAT_SCHEDULE.values()}
    assert beat["workers.sweep"] == typed.beat.sweep_seconds == 30.0
    assert base.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["api_key"] == typed.ops.throttle_rate


def test_environment_variables_are_read_as_their_types(tmp_path):
    raw = conf.from_environ(
        {
            "PERSONATREE_CHUNK_PAIRS": "4",
            "PERSONATREE_EVIDENCE_INDEXING": "false",
            "PERSONATREE_BATCH_MAX_JOBS": "x",
        },
        data_dir=tmp_path,
        base_dir=tmp_path,
    )
    assert raw["CHUNK_PAIRS"] == 4 and raw["EVIDENCE_INDEXING"] is False
    assert raw["MILVUS_URI"] == f"{tmp_path}/milvus.db"
    assert raw["MAX_REQUEST_BYTES"] == 500 * (4 * 20000 + 1024)  # derived from the two ingest limits
    with pytest.raises(conf.SettingsError, match="PERSONATREE_BATCH_MAX_JOBS='x'"):
        conf.build(raw)  # kept as given, reported by name


def test_every_key_of_base_py_is_read_by_a_section():
    aliases = {
        info.alias
        for section in conf.Settings.model_fields.values()
        for info in section.annotation.model_fields.values()  # type: ignore[union-attr]
    }
    assert aliases == set(base.PERSONATREE)


def test_choices_match_the_modules_that_use_them():
    assert get_args(conf.RecallStrategy) == STRATEGIES
    assert get_args(conf.PromptModeSetting) == (*get_args(PromptMode), "")
    assert get_args(conf.ListenerBackend) == get_args(Backend)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("CHUNK_PAIRS", 0, "PERSONATREE_CHUNK_PAIRS=0: Input should be greater than 0"),
        ("BATCH_MAX_JOBS", "many", "PERSONATREE_BATCH_MAX_JOBS='many'"),
        ("MEMLISTENER_BACKEND", "telepathy", "PERSONATREE_MEMLISTENER_BACKEND='telepathy'"),
        ("RESPONDER_BACKEND", "extractive", "PERSONATREE_RESPONDER_BACKEND='extractive'"),
        ("MEMLISTENER_URL", "127.0.0.1:8000/x", "http:// or https:// URL"),
        ("OPENAI_BASE_URL", "localhost:8080", "http:// or https:// URL"),
        ("EMBEDDER", "bge", "PERSONATREE_EMBEDDER='bge'"),
        ("ROUTER_THRESHOLD", 1.5, "PERSONATREE_ROUTER_THRESHOLD=1.5"),
        ("WEBHOOK_MAX_ATTEMPTS", 0, "PERSONATREE_WEBHOOK_MAX_ATTEMPTS=0"),
        ("MEMLISTENER_MAX_OPS", 0, "PERSONATREE_MEMLISTENER_MAX_OPS=0"),  # EngineConfig's own range
        ("MEMLISTENER_MAX_TOKENS", 10_000, "PERSONATREE_MEMLISTENER_MAX_TOKENS=10000"),
        ("MILVUS_COLLECTION", "evi-dence", "PERSONATREE_MILVUS_COLLECTION='evi-dence'"),
        ("READYZ_TIMEOUT_S", 0, "PERSONATREE_READYZ_TIMEOUT_S=0"),
        ("THROTTLE_RATE", "600 per minute", "PERSONATREE_THROTTLE_RATE='600 per minute'"),
        ("LOG_FORMAT", "xml", "PERSONATREE_LOG_FORMAT='xml'"),
        ("SWEEP_SECONDS", 0, "PERSONATREE_SWEEP_SECONDS=0"),
    ],
)
def test_bad_values_name_their_variable(key, value, message):
    with pytest.raises(conf.SettingsError) as caught:
        conf.listener_client_config(ClientConfig, conf.build({**base.PERSONATREE, key: value}))
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_combination_the_engine_cannot_run_is_reported():
    raw = {**base.PERSONATREE, "MEMLISTENER_BACKEND": "extractive", "MEMLISTENER_PROMPT_MODE": "full_enum"}
    with pytest.raises(conf.SettingsError) as caught:
        conf.listener_client_config(ClientConfig, conf.build(raw))
    [(section, message)] = caught.value.problems
    assert section == "listener" and message.startswith("MemListener settings: the extractive listener")


def test_every_bad_value_is_reported_at_once():
    raw = {**base.PERSONATREE, "CHUNK_PAIRS": -1, "WEBHOOK_TIMEOUT_S": 0, "RECALL_STRATEGY": "psychic"}
    with pytest.raises(conf.SettingsError) as caught:
        conf.build(raw)
    assert {section for section, _ in caught.value.problems} == {"ingest", "webhooks", "recall"}


def test_built_once_and_rebuilt_when_the_settings_change(settings):
    first = conf.get()
    assert conf.get() is first  # cached
    settings.PERSONATREE = {**settings.PERSONATREE, "BATCH_MAX_JOBS": 3}  # setting_changed
    assert conf.get() is not first and conf.get().dispatch.batch_max_jobs == 3
    settings.PERSONATREE["BATCH_MAX_JOBS"] = 5  # changed in place: noticed too
    assert conf.get().dispatch.batch_max_jobs == 5
    with override_settings(PERSONATREE={**settings.PERSONATREE, "CHUNK_LEASE_SECONDS": 42}):
        assert conf.get().dispatch.chunk_lease_seconds == 42
    assert conf.get().dispatch.chunk_lease_seconds == settings.PERSONATREE["CHUNK_LEASE_SECONDS"]


def test_invalid_settings_raise_on_read_and_recover(settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_MAX_ATTEMPTS": 0}
    with pytest.raises(conf.SettingsError, match="PERSONATREE_CHUNK_MAX_ATTEMPTS=0"):
        conf.get()
    settings.PERSONATREE = {**settings.PERSONATREE, "CHUNK_MAX_ATTEMPTS": 2}
    assert conf.get().dispatch.chunk_max_attempts == 2


def test_system_check_reports_each_bad_value_with_its_section_id(settings):
    assert personatree_settings() == []
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "RECALL_STRATEGY": "psychic",
        "MEMLISTENER_STANDIN_MODE": "sometimes",
        "WEBHOOK_MAX_ATTEMPTS": 0,
    }
    errors = {e.id: e for e in personatree_settings()}
    assert set(errors) == {"personatree.E001", "personatree.E002", "personatree.E003"}
    assert "overlap" in errors["personatree.E001"].hint
    assert "PERSONATREE_MEMLISTENER_STANDIN_MODE='sometimes'" in errors["personatree.E002"].msg
    assert "PERSONATREE_WEBHOOK_MAX_ATTEMPTS=0" in errors["personatree.E003"].msg


def test_listener_client_config_carries_every_listener_setting(settings):
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_BACKEND": "standin",
        "MEMLISTENER_STANDIN_MODE": "derived",
        "MEMLISTENER_MAX_OPS": 4,
        "MEMLISTENER_PROMPT_MODE": "",
        "MEMLISTENER_LEAF_VECTORS_DIR": "/tmp/leaf-vectors",
        "MEMLISTENER_TIMEOUT_S": 12.5,
    }
    cfg = conf.listener_client_config(ClientConfig)
    assert cfg.backend == "standin" and cfg.timeout_s == 12.5
    engine = cfg.engine
    assert (engine.standin_mode, engine.max_ops, engine.leaf_vectors_dir, engine.prompt_mode) == (
        "derived",
        4,
        "/tmp/leaf-vectors",
        None,
    )
    assert engine.timeout_s == 12.5


def test_settings_select_the_client_and_max_ops_reaches_the_listener(settings):
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_BACKEND": "standin",
        "MEMLISTENER_STANDIN_MODE": "derived",
        "MEMLISTENER_MAX_OPS": 3,
    }
    reset_listener_clients()
    try:
        client = get_listener_client(conf.listener_client_config(ClientConfig))
        assert isinstance(client, InProcessClient) and client.engine_config.kind == "standin"
        assert get_listener_client(conf.listener_client_config(ClientConfig)) is client  # cached per config
        assert client.listener.max_ops == 3  # the one factory (serving.listener.build_listener)
        settings.PERSONATREE = {
            **settings.PERSONATREE,
            "MEMLISTENER_BACKEND": "ray",
            "MEMLISTENER_URL": "http://127.0.0.1:1/x",
        }
        assert isinstance(get_listener_client(conf.listener_client_config(ClientConfig)), RayServeClient)
    finally:
        reset_listener_clients()


@pytest.mark.django_db
def test_readyz_answers_not_ready_when_the_settings_are_invalid(settings):
    from personatree_site.ops.readiness import readiness

    settings.PERSONATREE = {**settings.PERSONATREE, "MEMLISTENER_BACKEND": "telepathy"}
    ready, body = readiness()
    memlistener = body["checks"]["memlistener"]
    assert not ready and memlistener["error"] == "SettingsError" and memlistener["detail"] == "unknown"
    assert "telepathy" not in str(body)  # only the class is reported
