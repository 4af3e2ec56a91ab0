"""The fixture tenant of the schema-migration tests and docs: ``acme-profile`` v1 and v2 uploaded,
subjects pinned to v1 with the trees given (tests/fixtures/schema_migration/)."""

from __future__ import annotations

import json
from pathlib import Path

from memory.engine.ops import Op, OpType
from memory.models import Subject, Tenant
from memory.services.schemas import schema_upload
from memory.services.tree import Actor, tree_apply_ops
from tests.factories import SubjectFactory, TenantFactory

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "schema_migration"
MAPPING_FILE = FIXTURES / "acme-profile.v1-to-v2.json"
MAPPING_ID = "acme-profile-v1-to-v2"

#: A full tree, a small one, one with only a kept value; u4 stays empty.
TREES = {
    "u1": {
        "identity/name/full_name": "Samira Okafor",
        "identity/name/nickname": "Sam",
        "learning/goals/current": "algebra for the GCSE resit in June",
        "learning/style/preferred_format": "short worked examples first, then one practice question at a time",
        "habits/media/music": "lo-fi while studying",
        "habits/media/podcasts": "a history podcast on Sundays",
        "habits/routine/daily": "school 8 to 3; homework after dinner; football on Saturday",
        "habits/sleep/schedule": "asleep by 11, up at 7",
        "wellbeing/mood/stressors": "exams and speaking in front of the class",
        "body/appearance/height": "170 cm",
    },
    "u2": {"identity/name/nickname": "Jo", "body/appearance/height": "tall"},
    "u3": {"identity/location/home": "Leeds"},
    "u4": {},
}


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def mapping() -> dict:
    return load("acme-profile.v1-to-v2.json")


def acme_tenant(name: str = "acme", trees: dict[str, dict[str, str]] | None = None, **fields) -> Tenant:
    """The tenant with both schema versions and one subject per tree, pinned to v1."""
    tenant = TenantFactory(name=name, **fields)
    for version in (1, 2):
        schema_upload(tenant=tenant, document=load(f"acme-profile.v{version}.json"))
    for external_id, tree in (TREES if trees is None else trees).items():
        subject_with(tenant, external_id, tree)
    return tenant


def subject_with(tenant: Tenant, external_id: str, tree: dict[str, str]) -> Subject:
    subject = SubjectFactory(
        tenant=tenant, external_id=external_id, schema_id="acme-profile", schema_version=1
    )
    if tree:
        ops = [Op(OpType.ADD, path, value) for path, value in tree.items()]
        out = tree_apply_ops(subject=subject, base_version=0, ops=ops, actor=Actor.system("seed"))
        assert len(out.applied) == len(tree), out.rejected
    return subject
