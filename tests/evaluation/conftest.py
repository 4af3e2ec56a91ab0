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
