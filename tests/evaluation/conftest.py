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
