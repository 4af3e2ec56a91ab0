"""Runtime components built from settings.PERSONATREE."""

import logging

import pytest

from memory.recall import runtime


@pytest.fixture
def pt(settings):
    runtime.reset_runtime()
    settings.PERSONATREE = {**settings.PERSONATREE}
    yield settings.PERSONATREE
    runtime.reset_runtime()


def test_no_responder_configured(pt):
    pt["RESPONDER_BACKEND"] = "none"
    engine, why = runtime.responder_engine()
    assert engine is None and "RESPONDER_BACKEND=none" in why


def test_unbuildable_responder_reports_why_and_is_not_cached(pt, tmp_path):
    pt["RESPONDER_BACKEND"] = "recorded"
    pt["RESPONDER_RECORDING_PATH"] = ""
    engine, why = runtime.responder_engine()
    assert engine is None and "recording_path" in why
    rec = tmp_path / "answers.jsonl"
    rec.write_text("")
    pt["RESPONDER_RECORDING_PATH"] = str(rec)
    engine, why = runtime.responder_engine()  # retried, now buildable
    assert engine is not None and why == ""
    assert isinstance(engine, runtime.SerializedEngine)


def test_an_unavailable_responder_is_a_warning_once_per_cause(pt, caplog):
    pt["RESPONDER_BACKEND"] = "recorded"
    pt["RESPONDER_RECORDING_PATH"] = ""
    with caplog.at_level(logging.DEBUG, logger="memory.recall.runtime"):
        for _ in range(3):
            engine, why = runtime.responder_engine()
            assert engine is None and "recording_path" in why  # every call still says why
    levels = [r.levelno for r in caplog.records if "responder engine recorded unavailable" in r.message]
    assert levels == [logging.WARNING, logging.DEBUG, logging.DEBUG]


def test_unknown_backend(pt):
    pt["RESPONDER_BACKEND"] = "telepathy"
    engine, why = runtime.responder_engine()
    assert engine is None and "telepathy" in why


def test_reranker_only_when_configured(pt):
    pt["RERANKER_PATH"] = ""
    assert runtime.configured_reranker() is None
    pt["RERANKER_PATH"] = "/models/reranker"
    assert runtime.configured_reranker().path == "/models/reranker"  # loads lazily, on first score


def test_recall_strategy_comes_from_settings_and_is_checked(pt):
    assert runtime.recall_config().strategy == pt["RECALL_STRATEGY"] == "batch"  # the default
    pt["RECALL_STRATEGY"] = "batch"
    assert runtime.recall_config().strategy == "batch"
    pt["RECALL_STRATEGY"] = "psychic"
    with pytest.raises(ValueError, match="PERSONATREE_RECALL_STRATEGY='psychic'"):
        runtime.recall_config()


def test_system_check_refuses_an_unknown_recall_strategy(pt):
    from memory.checks import personatree_settings

    assert personatree_settings() == []
    pt["RECALL_STRATEGY"] = "psychic"
    (error,) = personatree_settings()
    assert error.id == "personatree.E001" and "overlap" in error.hint
