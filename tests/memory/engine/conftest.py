"""Engine tests are plain functions: no database, no Django models, no services."""

from __future__ import annotations

import pytest

from memory.engine import Schema, load_schema

TINY = {
    "id": "tiny",
    "version": 1,
    "budgets": {"short": 20},
    "tree": {
        "identity": {
            "name": {"description": "The user's name", "budget": "short", "tier": "personal"},
            "family": {"pets": {"description": "Pets and their names", "budget": 40}},
        },
        "body": {
            "health": {"conditions": {"description": "Medical conditions", "budget": 60, "tier": "special"}}
        },
        "behaviour": {"hobbies": {"description": "Hobbies and pastimes", "budget": 60}},
    },
}


@pytest.fixture
def tiny() -> Schema:
    return load_schema(TINY)
