"""Start-up checks catch bad MemListener settings before the first chunk."""

from __future__ import annotations

from memory.checks import personatree_settings


def test_default_settings_pass():
    assert personatree_settings() == []


def test_bad_prompt_mode_and_max_ops_fail_at_start(settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "MEMLISTENER_PROMPT_MODE": "pointy"}
    errors = personatree_settings()
    assert errors and errors[0].id == "personatree.E002" and "MEMLISTENER_PROMPT_MODE" in errors[0].msg
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_PROMPT_MODE": "",
        "MEMLISTENER_MAX_OPS": 100,  # the engine's own range: 1..64
    }
    assert "PERSONATREE_MEMLISTENER_MAX_OPS=100" in personatree_settings()[0].msg


def test_extractive_with_full_enum_fails_at_start(settings):
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "MEMLISTENER_BACKEND": "extractive",
        "MEMLISTENER_PROMPT_MODE": "full_enum",
    }
    assert "pointing" in personatree_settings()[0].msg
