import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


@pytest.fixture
def locomo_path() -> Path:
    return FIXTURES / "locomo_tiny.json"


@pytest.fixture
def pm_questions_path() -> Path:
    return FIXTURES / "personamem_questions_tiny.csv"


@pytest.fixture
def pm_contexts_path() -> Path:
    return FIXTURES / "personamem_contexts_tiny.jsonl"


@pytest.fixture
def evaluate(tmp_path):
    """``evaluate(benchmark, *args) -> (out, results)``: ``manage.py evaluate <benchmark> *args`` with
    its outputs in ``tmp_path / "out"`` and no progress bar; ``results`` is its results.json."""
    from django.core.management import call_command

    def run(benchmark: str, *args: str) -> tuple[Path, dict]:
        out = tmp_path / "out"
        call_command("evaluate", benchmark, *args, "--out", str(out), "--no-progress")
        return out, json.loads((out / "results.json").read_text())

    return run


@pytest.fixture
def no_replies(tmp_path) -> str:
    """A ``--responder`` recording with no entries: every responder call fails."""
    path = tmp_path / "no-replies.jsonl"
    path.write_text("")
    return f"recorded:{path}"


@pytest.fixture
def evaluate_locomo(evaluate, locomo_path, no_replies):
    """``evaluate_locomo(memlistener, *args)``: ``evaluate locomo`` on the tiny conversation with that
    MemListener and a responder whose every call fails."""

    def run(memlistener: str, *args: str) -> tuple[Path, dict]:
        return evaluate(
            "locomo",
            "--data",
            str(locomo_path),
            "--memlistener",
            memlistener,
            "--responder",
            no_replies,
            *args,
        )

    return run


@pytest.fixture(autouse=True)
def isolated_runtime(tmp_path, settings):
    """Each test gets its own Milvus Lite file, and the harness's responder overrides of
    settings.PERSONATREE (it mutates the dict in place) are undone afterwards."""
    from memory.recall import runtime

    saved = dict(settings.PERSONATREE)
    settings.PERSONATREE["MILVUS_URI"] = str(tmp_path / "milvus.db")
    runtime.reset_runtime()
    yield
    runtime.reset_runtime()
    settings.PERSONATREE.clear()
    settings.PERSONATREE.update(saved)
