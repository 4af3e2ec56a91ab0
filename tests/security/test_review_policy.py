"""The review hold of the one write path (``memory.services.tree.split_for_review``) against
what an injected instruction makes a model write: found by the prompt-injection corpus
(``tests/security/test_injection_corpus.py``, case ``delete_split_across_tiers``)."""

from __future__ import annotations

import pytest

from memory import selectors
from memory.engine.ops import Op
from memory.services.tree import Actor, tree_apply_ops
from tests.factories import SubjectFactory, TenantFactory

pytestmark = pytest.mark.django_db

MODEL = Actor.for_model(model_id="test-model")
NORMAL = ["identity/name/full_name", "identity/location/current_city", "identity/family/pets"]
SPECIAL = ["identity/beliefs/religion", "body/health/conditions"]


def seeded_subject(**tenant_policy):
    subject = SubjectFactory(tenant=TenantFactory(mass_delete_threshold=3, **tenant_policy))
    ops = [Op.add(p, "something") for p in NORMAL + SPECIAL]
    tree_apply_ops(subject=subject, base_version=0, ops=ops, actor=Actor.system("seed"))
    subject.refresh_from_db()
    return subject


def test_a_mass_delete_counts_its_special_tier_deletes_too():
    subject = seeded_subject()
    out = tree_apply_ops(
        subject=subject, base_version=1, ops=[Op.delete(p) for p in NORMAL + SPECIAL], actor=MODEL
    )  # 5 deletes > threshold 3, though only 3 of them are ordinary leaves
    assert out.version is None and not out.applied
    assert sorted(r.path for r in out.pending_review) == sorted(NORMAL + SPECIAL)
    assert len(selectors.tree_current(subject)) == 5


def test_deletes_within_the_threshold_still_apply_and_special_ones_still_wait():
    subject = seeded_subject()
    out = tree_apply_ops(
        subject=subject, base_version=1, ops=[Op.delete(NORMAL[0]), Op.delete(SPECIAL[0])], actor=MODEL
    )
    assert [r.path for r in out.applied] == [NORMAL[0]]
    assert [r.path for r in out.pending_review] == [SPECIAL[0]]
    assert out.pending_review[0].detail == "special-tier leaf: held for review"


def test_without_the_special_tier_hold_a_mass_delete_is_held_whole():
    subject = seeded_subject(review_special_tier=False)
    out = tree_apply_ops(
        subject=subject, base_version=1, ops=[Op.delete(p) for p in NORMAL + SPECIAL], actor=MODEL
    )
    assert not out.applied and len(out.pending_review) == 5
    assert {r.detail for r in out.pending_review} == {"mass delete: held for review"}
