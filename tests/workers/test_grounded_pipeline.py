"""Grounded memory through the real path: ingest -> dispatcher -> MemListener -> store.

The embedded default listener (extractive, pointing pipeline, the shipped MiniLM embedder) on
Postgres; and the store's own grounding check on a model output that invents a value
(a hand-written output in the recorded engine's format, not a model recording).
"""

from __future__ import annotations

import json

import pytest

from memory.engine.ops import Op
from memory.models import OpRecord, TreeVersion
from memory.services.ingest import IncomingMessage, messages_ingest
from memory.services.tree import Actor, Source, tree_apply_ops
from serving.config import EngineConfig
from serving.listener import InProcessClient
from serving.protocol import ListenerOp, ListenerResult
from tests.workers.helpers import drain

pytestmark = pytest.mark.django_db

DIALOGUE = [
    ("Hi! I'm Maya. I just moved to Lisbon from Toronto for a new job.", "Welcome! What do you do?"),
    ("I'm a data engineer at a logistics startup.", "Great fit."),
    ("I've been vegetarian for ten years.", "Noted."),
    ("Thanks, that's all!", "Anytime."),
    ("Ha, okay.", "Sure."),
    ("Cool, bye!", "Bye!"),
]


def ingest(tenant, external_id, pairs):
    msgs = []
    for i, (user, assistant) in enumerate(pairs):
        msgs += [IncomingMessage("user", user, f"u{i}"), IncomingMessage("assistant", assistant, f"a{i}")]
    return messages_ingest(tenant=tenant, external_id=external_id, messages=msgs, enqueue=False)


def test_extractive_default_builds_a_grounded_tree_with_sources(tenant):
    subject = ingest(tenant, "maya", DIALOGUE).subject
    client = InProcessClient(EngineConfig(kind="extractive"))
    report = drain(client=client, max_jobs=4, max_wait_ms=0, index=False)
    assert report.applied == 2 and report.failed == 0
    subject.refresh_from_db()
    tree = TreeVersion.objects.get(subject=subject, number=subject.head_version).snapshot
    assert tree["identity/name/full_name"] == "Maya"
    assert any("data engineer at a logistics startup" in v for v in tree.values())
    assert any("vegetarian for ten years" in v for v in tree.values())
    applied = OpRecord.objects.filter(subject=subject, status="applied").exclude(op_type="NO_OP")
    assert applied.exists() and all(r.source_text for r in applied)
    for r in applied:  # every value is traceable to the user's words of its chunk
        assert all(line in " ".join(u for u, _ in DIALOGUE) for line in r.source_text.split("\n"))
        assert r.model_id == "extractive/2" and r.prompt_version == "memlistener-pointing/4"
    # the small-talk chunk never reached a model: a NO_OP with the reason
    no_op = OpRecord.objects.get(subject=subject, op_type="NO_OP")
    assert no_op.status == "applied" and no_op.detail.startswith("no model call")


class InventingClient:
    """A listener whose (full-enum) output invents a value; the listener-side gate is bypassed so
    only the store's grounding check stands between it and the tree."""

    def run(self, jobs):
        ops = [
            {"op": "ADD", "path": "body/appearance/height", "value": "165 cm"},
            {"op": "ADD", "path": "identity/occupation/current_role", "value": "data engineer at a logistics startup"},
        ]  # fmt: skip
        return [
            ListenerResult(job_id=j.job_id, ops=ops, model_id="inventor", raw_text=json.dumps(ops))
            for j in jobs
        ]


def test_store_rejects_a_model_value_absent_from_the_users_words(tenant):
    subject = ingest(tenant, "maya2", DIALOGUE[:3]).subject
    drain(client=InventingClient(), max_jobs=4, max_wait_ms=0, index=False)
    records = {r.path: r for r in OpRecord.objects.filter(subject=subject)}
    assert records["body/appearance/height"].status == "rejected"
    assert records["body/appearance/height"].reason_code == "UNGROUNDED"
    assert records["identity/occupation/current_role"].status == "applied"


class PrecheckingClient:
    """Hands over a pre-check verdict beside each op that is the opposite of the store's."""

    def run(self, jobs):
        ops = [
            ListenerOp(op="ADD", path="body/appearance/height", value="165 cm"),  # the pre-check passed it
            ListenerOp(op="ADD", path="identity/occupation/current_role", value="data engineer at a logistics startup",
                       precheck="UNGROUNDED", detail="the listener's own opinion"),
        ]  # fmt: skip
        return [ListenerResult(job_id=j.job_id, ops=ops, model_id="prechecker") for j in jobs]


def test_the_stores_verdict_is_the_one_recorded_once(tenant):
    subject = ingest(tenant, "maya5", DIALOGUE[:3]).subject
    report = drain(client=PrecheckingClient(), max_jobs=4, max_wait_ms=0, index=False)
    assert report.applied == 1
    records = OpRecord.objects.filter(subject=subject).order_by("path")
    assert [(r.path, r.status, r.reason_code) for r in records] == [
        ("body/appearance/height", "rejected", "UNGROUNDED"),
        ("identity/occupation/current_role", "applied", ""),
    ]


def test_tenant_can_turn_grounding_off_and_admin_writes_are_not_checked(tenant):
    subject = ingest(tenant, "maya3", DIALOGUE[:3]).subject
    evidence = Source(evidence=("I'm a data engineer.",))
    out = tree_apply_ops(subject=subject, base_version=0, ops=[Op.add("body/appearance/height", "165 cm")],
                         actor=Actor.for_model(model_id="m"), source=evidence)  # fmt: skip
    assert [r.reason_code for r in out.rejected] == ["UNGROUNDED"]
    tenant.require_grounding = False
    tenant.save()
    subject.refresh_from_db()
    out = tree_apply_ops(subject=subject, base_version=0, ops=[Op.add("body/appearance/height", "165 cm")],
                         actor=Actor.for_model(model_id="m"), source=evidence)  # fmt: skip
    assert out.version is not None
    out = tree_apply_ops(subject=subject, base_version=1, ops=[Op.update("body/appearance/height", "170 cm")],
                         actor=Actor.system("test"), source=evidence)  # fmt: skip
    assert out.version is not None  # grounding judges model text only


def test_update_to_the_same_value_is_audited_as_no_change(tenant):
    subject = ingest(tenant, "maya4", DIALOGUE[:3]).subject
    actor = Actor.system("test")
    tree_apply_ops(
        subject=subject, base_version=0, ops=[Op.add("behaviour/habits/exercise", "runs")], actor=actor
    )
    out = tree_apply_ops(
        subject=subject, base_version=1, ops=[Op.update("behaviour/habits/exercise", "runs")], actor=actor
    )
    assert out.version is None and [r.reason_code for r in out.rejected] == ["NO_CHANGE"]
