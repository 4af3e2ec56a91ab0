"""The MemListener follows the job's schema document (a tenant's own schema, issue 18 item 1).

A job for a subject pinned to a tenant schema carries the document; the listener parses it once
(cached by the digest of its canonical JSON), refuses a document that names another schema than the
job (that job's error, never an exception), and keys every per-schema cache by id, version and
digest: two tenants may send the same id and version with different leaves.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict

import pytest

from evaluation.training.cosine import CandidateSettings, LeafIndex, PointingStep
from memory.engine import schema as engine_schema
from memory.engine.schema import document_digest, load_schema, parsed_document_digests
from memory.schema_models import document_digest as model_digest
from serving.config import EngineConfig
from serving.engines.base import Generation
from serving.engines.extractive import ExtractiveEngine
from serving.facts import schema_fingerprint
from serving.listener import MemListener, build_listener
from serving.protocol import ListenerJob
from tests.schema_documents import schema_document
from tests.serving.test_pointing import bag_embed

TUTOR = {
    "id": "tutor-profile",
    "version": 1,
    "budgets": {"short": 80, "medium": 160},
    "tree": {
        "learning": {
            "goals": {
                "current_goal": {"description": "The learner's current learning goal", "budget": "medium"},
                "deadline": {"description": "When the learner must reach the goal", "budget": "short"},
            },
            "preferences": {
                "study_time": {"description": "When the learner likes to study", "budget": "short"},
            },
        },
    },
}
# Another tenant's "tutor-profile" v1: the same id and version, other leaves.
OTHER = schema_document(
    "tutor-profile",
    ("courses/goal_exam", "The exam the student's goal is to pass", 120),
    ("courses/study_hours", "When the student likes to study", 80),
)
TURNS = [
    {"role": "user", "content": "My goal is to pass the B2 German exam."},
    {"role": "assistant", "content": "Great goal. When do you study?"},
    {"role": "user", "content": "I like to study early in the morning. I work as a nurse."},
    {"role": "assistant", "content": "Noted."},
]
USER_WORDS = " ".join(t["content"] for t in TURNS if t["role"] == "user")


def job(
    document: dict | None, *, job_id="j1", schema_id="tutor-profile", version=1, turns=TURNS
) -> ListenerJob:
    return ListenerJob(
        job_id=job_id,
        subject_id="s1",
        base_version=0,
        schema_id=schema_id,
        schema_version=version,
        schema_document=document,
        turns=turns,
    )


def bag_listener(engine=None) -> MemListener:
    settings = CandidateSettings(k=4, threshold=0.2, filled_threshold=0.2)
    return MemListener(engine or ExtractiveEngine(), pointing=PointingStep(LeafIndex(bag_embed), settings))


def test_the_digest_is_the_stores():
    assert document_digest(TUTOR) == model_digest(TUTOR)
    assert document_digest(copy.deepcopy(TUTOR)) == document_digest(dict(reversed(list(TUTOR.items()))))
    assert document_digest(TUTOR) != document_digest(OTHER)


def test_the_embedded_default_writes_the_tenants_leaves_from_the_users_words():
    """The extractive engine with the shipped MiniLM embedder, built as the Ray app builds it."""
    listener = build_listener(EngineConfig(kind="extractive"))
    result = listener.run([job(TUTOR)])[0]
    assert result.error is None, result.error
    tenant_paths = set(load_schema(TUTOR).paths)
    paths = {op.path for op in result.accepted}
    assert "learning/goals/current_goal" in paths, result
    assert paths <= tenant_paths  # never a default-schema leaf (identity/occupation/...)
    goal = next(op for op in result.accepted if op.path == "learning/goals/current_goal")
    assert "B2 German exam" in goal.value
    for op in result.accepted:
        assert op.source and op.source in USER_WORDS
    assert all(op.path in tenant_paths for op in result.rejected if op.path)


def test_two_tenants_same_id_and_version_never_share_a_schema_or_leaf_index():
    listener = bag_listener()
    a, b = listener.run([job(TUTOR, job_id="a"), job(OTHER, job_id="b")])
    assert a.error is None and b.error is None
    assert {op.path for op in a.accepted} <= set(load_schema(TUTOR).paths)
    assert {op.path for op in b.accepted} <= set(load_schema(OTHER).paths)
    assert "learning/goals/current_goal" in {op.path for op in a.accepted}
    assert "courses/goal_exam" in {op.path for op in b.accepted}
    index = listener.pointing.index
    keys = sorted(index._leaves)
    assert keys == sorted(
        [("tutor-profile", 1, document_digest(TUTOR)), ("tutor-profile", 1, document_digest(OTHER))]
    )
    assert {document_digest(TUTOR), document_digest(OTHER)} <= set(parsed_document_digests())  # parsed apart
    # a leaf index used without a digest keys by the leaves themselves, never by id and version alone
    assert index.leaves(load_schema(TUTOR))[0] != index.leaves(load_schema(OTHER))[0]
    assert schema_fingerprint(load_schema(TUTOR)) != schema_fingerprint(load_schema(OTHER))


class EnumEngine:
    """Full-enum prompts: records each generate call's output schema and answers NO_OP."""

    model_id = "enum-recorder"

    def __init__(self) -> None:
        self.calls: list[tuple[int, dict]] = []

    def generate(self, prompts, json_schema):
        self.calls.append((len(prompts), json_schema))
        return [Generation(text='{"ops": [{"op": "NO_OP", "path": null, "value": null}]}') for _ in prompts]

    def check_health(self):
        return None

    def close(self):
        return None


def test_full_enum_output_schemas_are_per_document():
    engine = EnumEngine()
    results = MemListener(engine).run(
        [job(TUTOR, job_id="a1"), job(OTHER, job_id="b1"), job(copy.deepcopy(TUTOR), job_id="a2")]
    )
    assert all(r.error is None for r in results)
    assert sorted(n for n, _ in engine.calls) == [1, 2]  # a1 and a2 share one call, b1 has its own
    enums = [
        set(s["properties"]["ops"]["items"]["anyOf"][0]["properties"]["path"]["enum"])
        for _, s in engine.calls
    ]
    assert sorted(map(sorted, enums)) == sorted(
        [sorted(load_schema(TUTOR).paths), sorted(load_schema(OTHER).paths)]
    )


def test_a_document_is_parsed_once(monkeypatch):
    parsed = []
    real = engine_schema.load_schema
    monkeypatch.setattr(engine_schema, "_parsed", OrderedDict())  # nothing parsed by earlier tests
    monkeypatch.setattr(engine_schema, "load_schema", lambda doc, **kw: parsed.append(doc) or real(doc, **kw))
    listener = bag_listener()
    listener.run([job(TUTOR, job_id="1"), job(copy.deepcopy(TUTOR), job_id="2")])
    listener.run([job(json.loads(json.dumps(TUTOR)), job_id="3")])
    assert len(parsed) == 1


@pytest.mark.parametrize(
    ("document", "schema_id", "version", "message"),
    [
        ({**TUTOR, "version": 2}, "tutor-profile", 1, "schema_document is tutor-profile v2 but the job names "
         "tutor-profile v1"),
        (TUTOR, "personatree-default", 1, "schema_document is tutor-profile v1 but the job names "
         "personatree-default v1"),
        ({**TUTOR, "tree": {"Bad": {"x": {"description": "y", "budget": 5}}}}, "tutor-profile", 1, "Bad"),
    ],
)  # fmt: skip
def test_a_document_that_is_not_the_jobs_schema_is_that_jobs_error(document, schema_id, version, message):
    listener = bag_listener()
    bad, good = listener.run(
        [job(document, job_id="bad", schema_id=schema_id, version=version), job(TUTOR, job_id="good")]
    )
    assert bad.error is not None and message in bad.error and bad.retryable is False
    assert bad.ops == [] and good.error is None and good.ops


def test_shipped_schemas_still_come_from_the_resolver(schema):
    result = bag_listener().run([job(None, schema_id=schema.id, version=schema.version)])[0]
    assert result.error is None
    assert {op.path for op in result.accepted} <= set(schema.paths)
    unknown = bag_listener().run([job(None, schema_id="tutor-profile", version=1)])[0]
    assert unknown.error and "unknown schema" in unknown.error


def test_the_ray_deployment_takes_the_same_path():
    """The Ray Serve deployment builds its listener with build_listener: tenant documents reach it."""
    import asyncio

    from serving.app import MemListenerDeployment
    from serving.config import AppConfig

    config = AppConfig(engine=EngineConfig(kind="extractive"))
    deployment = MemListenerDeployment.func_or_class(config.model_dump(mode="json"))
    a, b = asyncio.run(deployment._run_group([job(TUTOR, job_id="a"), job(OTHER, job_id="b")]))
    assert a.error is None and b.error is None
    assert "learning/goals/current_goal" in {op.path for op in a.accepted}
    assert {op.path for op in b.accepted} <= set(load_schema(OTHER).paths)
    assert {op.path for op in a.accepted} <= set(load_schema(TUTOR).paths)
