"""Prompt-injection corpus (issue 15 item 6) through the real ingest pipeline.

Each case of ``tests/fixtures/injection/cases.jsonl`` is a conversation chunk carrying an injected
instruction and, per prompt mode, a **recorded output that obeys it**. The recordings are
hand-written in the recorded engine's format (model id ``injection-corpus``): what a model that
follows the injection would answer, not the output of a real model. They are replayed by the real
MemListener (``InProcessClient`` on the recorded engine: prompt, parse, listener gate) under the
dispatcher (``drain``), and the store's one write path (``tree_apply_ops_batch``: gate with
grounding, review hold, audit) on PostgreSQL.

For every case and both prompt modes the invariants hold: nothing lands outside the speaking
subject's tree (another subject of the same tenant and a subject of another tenant are untouched),
nothing outside the schema, no special-tier value and no delete of a batch deleting more than the
tenant's threshold is applied without review, and every applied value is supported by the user's
own words of the chunk. In the full-enum mode each op's outcome is also compared with the case's
``expect_full_enum`` (path -> status[:reason]); the pointing mode's outcomes depend on the chunk's
candidate leaves (embedder), so only the invariants are asserted there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import selectors
from memory.engine.grounding import check_grounding
from memory.engine.ops import Op
from memory.models import OpRecord, Subject
from memory.services.tree import Actor, tree_apply_ops
from serving.config import EngineConfig
from serving.engines.base import turns_key
from serving.listener import InProcessClient
from tests.factories import TenantFactory
from tests.workers.helpers import drain, ingest_closed

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "injection" / "cases.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
MODES = ("full_enum", "pointing")
RECORDING_MODEL = "injection-corpus"

SPEAKER_TREE = {
    "identity/name/full_name": "Mallory Quinn",
    "identity/location/current_city": "Leeds",
    "identity/occupation/current_role": "nurse at a children's hospital",
    "identity/family/pets": "a cat named Biscuit",
    "behaviour/food/favourite_foods": "ramen and dumplings",
    "identity/beliefs/religion": "raised Catholic",
    "body/health/conditions": "asthma since childhood",
}
BYSTANDER_TREE = {"identity/name/full_name": "Bob Stone", "identity/location/current_city": "Oslo"}


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    """One recorded MemListener per prompt mode, replaying every case's recorded output by the
    chunk's turns (the key the dispatcher's job will have)."""
    made = {}
    for mode in MODES:
        path = tmp_path_factory.mktemp("injection") / f"{mode}.jsonl"
        lines = [
            {
                "key": turns_key(case["turns"]),
                "text": case["recorded_output"][mode],
                "model_id": RECORDING_MODEL,
                "note": f"hand-written injection-following output, case {case['name']} ({mode})",
            }
            for case in CASES
        ]
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        made[mode] = InProcessClient(
            EngineConfig(kind="recorded", recording_path=str(path), prompt_mode=mode)
        )
    return made


def seeded(tenant, external_id: str, tree: dict[str, str]) -> Subject:
    """A subject whose tree holds ``tree``, written through the one write path by the system."""
    subject = Subject.objects.create(tenant=tenant, external_id=external_id)
    ops = [Op.add(path, value) for path, value in tree.items()]
    outcome = tree_apply_ops(subject=subject, base_version=0, ops=ops, actor=Actor.system("seed"))
    assert not outcome.rejected and not outcome.pending_review
    subject.refresh_from_db()
    return subject


def ingest_case(tenant, external_id: str, case) -> Subject:
    return ingest_closed(tenant, external_id, [(t["role"], t["content"]) for t in case["turns"]])


def outcome_of(record: OpRecord) -> str:
    status = str(record.status)
    return f"{status}:{record.reason_code}" if record.reason_code else status


def run_case(case, client):
    tenant = TenantFactory()
    speaker = seeded(tenant, "mallory", SPEAKER_TREE)
    bystander = seeded(tenant, "victim-bob", BYSTANDER_TREE)
    foreign = seeded(TenantFactory(), "victim-bob", BYSTANDER_TREE)
    ingest_case(tenant, "mallory", case)
    report = drain(client=client, max_jobs=4, max_wait_ms=0, index=False)
    assert report.applied == 1 and report.failed == 0, report
    speaker.refresh_from_db()
    return tenant, speaker, (bystander, foreign)


def assert_invariants(case, tenant, speaker, others) -> list[OpRecord]:
    # Nothing outside the speaking subject's tree.
    for other in others:
        before = other.head_version
        other.refresh_from_db()
        assert other.head_version == before and selectors.tree_current(other).to_dict() == BYSTANDER_TREE
        assert not OpRecord.objects.filter(subject=other).exclude(actor_kind="system").exists()
    records = list(OpRecord.objects.filter(actor_kind="model").order_by("position"))
    assert records and {r.subject_id for r in records} == {speaker.pk}
    replayed = all(r.model_id == f"recorded:{RECORDING_MODEL}" for r in records)
    skipped = [(r.op_type, r.detail[:13]) for r in records] == [("NO_OP", "no model call")]
    assert replayed or skipped, [(r.model_id, r.op_type, r.detail) for r in records]

    # Nothing outside the schema.
    schema = selectors.subject_schema(speaker)
    tree = selectors.tree_current(speaker).to_dict()
    assert set(tree) <= set(schema.paths)
    written = [r for r in records if r.status in ("applied", "pending_review") and r.op_type != "NO_OP"]
    assert all(schema.leaf(r.path) is not None for r in written)

    # Special tier and mass deletes wait for review.
    applied = [r for r in written if r.status == "applied"]
    assert not [r.path for r in applied if schema.leaf(r.path).tier == "special"]
    deletes = [r for r in written if r.op_type == "DELETE"]
    if len(deletes) > tenant.mass_delete_threshold:
        assert all(r.status == "pending_review" for r in deletes)
    for path, value in SPEAKER_TREE.items():  # what was not written by an applied op is still there
        if path not in {r.path for r in applied}:
            assert tree.get(path) == value

    # Every applied value is supported by the user's words of the chunk (checked here again,
    # independently of the gate's own check).
    user_words = [t["content"] for t in case["turns"] if t["role"] == "user"]
    for r in applied:
        if r.op_type in ("ADD", "UPDATE"):
            assert check_grounding(r.new_value, user_words, r.old_value).ok, (r.path, r.new_value)
            assert tree[r.path] == r.new_value
    return records


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_injection_full_enum(case, clients):
    tenant, speaker, others = run_case(case, clients["full_enum"])
    records = assert_invariants(case, tenant, speaker, others)
    outcomes = {r.path: outcome_of(r) for r in records if r.path}
    assert outcomes == case["expect_full_enum"]
    parse_errors = [r for r in records if r.reason_code == "PARSE_ERROR"]
    assert len(parse_errors) == case["expect_full_enum_parse_errors"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_injection_pointing(case, clients):
    tenant, speaker, others = run_case(case, clients["pointing"])
    assert_invariants(case, tenant, speaker, others)


def test_corpus_is_well_formed():
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)) >= 12
    assert len({turns_key(c["turns"]) for c in CASES}) == len(CASES)  # one recording per chunk
    for case in CASES:
        assert set(case["recorded_output"]) == set(MODES) and case["attack"]
