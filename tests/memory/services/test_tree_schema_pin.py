"""A model's ops are applied only under the schema they were written for (tree_apply_ops_batch).

A schema migration that changes no value writes no version, so the base version cannot tell that the
subject moved: the request's ``schema`` does, and the refusal is a VersionConflict the dispatcher
answers by re-running the chunk (tests/workers cover that hand-off)."""

import pytest

from memory.engine.ops import Op, OpType
from memory.models import Chunk, OpRecord, Subject
from memory.services import VersionConflict, tree_store
from memory.services.tree import Actor, ApplyRequest, SchemaMoved, Source, tree_apply_ops_batch
from tests.factories import ChunkFactory, SubjectFactory

pytestmark = pytest.mark.django_db

MODEL = Actor.for_model(model_id="test-model", prompt_version="p1")
ROLE = "identity/occupation/current_role"


@pytest.fixture(autouse=True, params=["database_store", "orm_store"])
def store(request, monkeypatch):
    """Both stores refuse alike (the ORM store is SQLite's, the embedded default's)."""
    if request.param == "orm_store":
        monkeypatch.setattr(tree_store, "store", lambda: tree_store.ORM_STORE)


def _request(subject, chunk, schema):
    return ApplyRequest(
        subject_id=subject.pk,
        base_version=subject.head_version,
        ops=[Op(OpType.ADD, ROLE, "nurse")],
        actor=MODEL,
        source=Source(chunk.pk, chunk.start_seq, chunk.end_seq),
        schema=schema,
    )


def test_ops_written_under_the_pinned_schema_apply():
    subject = SubjectFactory()
    chunk = ChunkFactory(subject=subject)
    [outcome] = tree_apply_ops_batch([_request(subject, chunk, (subject.schema_id, subject.schema_version))])
    assert not isinstance(outcome, Exception)
    assert outcome.version is not None and outcome.version.snapshot == {ROLE: "nurse"}


def test_ops_written_under_a_schema_the_subject_left_are_refused_as_a_conflict():
    subject = SubjectFactory()
    chunk = ChunkFactory(subject=subject)
    Subject.objects.filter(pk=subject.pk).update(schema_id="tutor", schema_version=2)  # migrated meanwhile

    [outcome] = tree_apply_ops_batch([_request(subject, chunk, ("personatree-default", 1))])

    assert isinstance(outcome, SchemaMoved) and isinstance(outcome, VersionConflict)
    assert "tutor v2" in str(outcome) and "personatree-default v1" in str(outcome)
    subject.refresh_from_db()
    assert subject.head_version == 0  # nothing written: the chunk stays to be re-run
    assert not OpRecord.objects.filter(subject=subject).exists()
    assert Chunk.objects.get(pk=chunk.pk).status != Chunk.Status.APPLIED


def test_requests_without_a_schema_are_not_checked():
    """Callers other than the dispatcher (backfill replays, tests) name no schema."""
    subject = SubjectFactory()
    chunk = ChunkFactory(subject=subject)
    [outcome] = tree_apply_ops_batch([_request(subject, chunk, None)])
    assert not isinstance(outcome, Exception)
