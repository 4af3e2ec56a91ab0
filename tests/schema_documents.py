"""Tenant schema documents for tests, in the flat form a tenant uploads (docs/SCHEMAS.md).

``schema_document("coach", ("health/habits/sleep", "How the user sleeps", 80))`` is
``{"id": "coach", "version": 1, "leaves": [{"path": ..., "description": ..., "budget": 80}]}``.
Pure Python (no Django), so that serving tests use it too.
"""

from __future__ import annotations

#: The learner's profile of the training tests: a tenant's own schema of two leaves.
TUTOR_LEAVES = (
    ("learning/goals/current_goal", "The learner's current goal", 160),
    ("learning/preferences/study_time", "When the learner studies", 80),
)


def schema_document(schema_id: str, *leaves: tuple[str, str, int], version: int = 1) -> dict:
    """A new document (a fresh dict each call): ``leaves`` as ``(path, description, budget)``."""
    return {
        "id": schema_id,
        "version": version,
        "leaves": [{"path": path, "description": text, "budget": budget} for path, text, budget in leaves],
    }
