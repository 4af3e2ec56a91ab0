"""Erasure leaves only a tombstone: a raw scan of every text/json column finds none of the subject's text."""

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.urls import reverse

from memory.engine.ops import Op
from memory.models import Chunk, Message, OpRecord, Subject, Tombstone, TreeVersion
from memory.services.subjects import subject_erase
from memory.services.tree import Actor, Source, tree_apply_ops
from memory.signals import subject_erased
from tests.factories import ChunkFactory, MessageFactory, SubjectFactory

pytestmark = pytest.mark.django_db

MARKERS = ("zanzibar-subject-7781", "quokka whisperer", "marmalade-secret-9", "allergic to kumquats")


def scan(needle: str) -> list[tuple[str, str]]:
    """Every (table, column) of text/json type in the public schema that contains ``needle``."""
    hits = []
    with connection.cursor() as cur:
        cur.execute(
            """SELECT table_name, column_name FROM information_schema.columns
               WHERE table_schema = 'public'
                 AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')"""
        )
        for table, column in cur.fetchall():
            cur.execute(
                f'SELECT 1 FROM "{table}" WHERE "{column}"::text ILIKE %s LIMIT 1',  # noqa: S608 - names from the catalog
                [f"%{needle}%"],
            )
            if cur.fetchone():
                hits.append((table, column))
    return hits


def populate(subject):
    for seq, text in enumerate(["I work as a quokka whisperer", "my password hint is marmalade-secret-9"], 1):
        MessageFactory(subject=subject, seq=seq, content=text, idempotency_key=f"{MARKERS[0]}-{seq}")
    chunk = ChunkFactory(subject=subject, start_seq=1, end_seq=2)
    tree_apply_ops(
        subject=subject,
        base_version=0,
        ops=[
            Op.add("identity/occupation/current_role", "quokka whisperer"),
            Op.add("body/health/allergies", "allergic to kumquats"),
        ],
        actor=Actor.for_model(model_id="m"),
        source=Source(chunk.pk, 1, 2),
        parse_errors=[{"line_no": 2, "line": "ADD(x, 'marmalade-secret-9'", "message": "unclosed"}],
    )


@pytest.mark.postgres
def test_erase_removes_every_trace_and_leaves_a_tombstone(
    subject, admin_user, django_capture_on_commit_callbacks
):
    subject.external_id = MARKERS[0]
    subject.save()
    populate(subject)
    keeper = SubjectFactory(tenant=subject.tenant)  # another subject of the same tenant stays intact
    MessageFactory(subject=keeper, seq=1, content="unrelated")
    LogEntry.objects.log_actions(
        user_id=admin_user.pk, queryset=Subject.objects.filter(pk=subject.pk), action_flag=CHANGE
    )
    for needle in MARKERS:
        assert scan(needle), f"fixture should have stored {needle!r}"

    seen = []
    subject_erased.connect(lambda sender, **kw: seen.append(kw), weak=False, dispatch_uid="test-erase")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            tombstone = subject_erase(subject=subject, erased_by="test")
    finally:
        subject_erased.disconnect(dispatch_uid="test-erase")

    for needle in MARKERS:
        assert scan(needle) == [], needle
    assert not Subject.objects.filter(pk=subject.pk).exists()
    for model in (Message, Chunk, TreeVersion, OpRecord):
        assert not model.objects.filter(subject_id=subject.pk).exists()
    assert tombstone.counts == {"messages": 2, "chunks": 1, "versions": 1, "ops": 3}
    assert Tombstone.objects.get().external_id_hash == Tombstone.hash_external_id(
        subject.tenant_id, MARKERS[0]
    )
    assert seen == [
        {
            "signal": subject_erased,
            "tenant_id": subject.tenant_id,
            "subject_id": subject.pk,
            "external_id": MARKERS[0],
        }
    ]
    assert Message.objects.filter(subject=keeper).count() == 1
    assert not LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(Subject), object_id=str(subject.pk)
    ).exists()


def test_export_holds_tree_versions_and_ops(subject, make_api_client):
    populate(subject)
    url = reverse("subject-export", kwargs={"external_id": subject.external_id})
    special, _ = make_api_client(subject.tenant, scopes=["read", "read_special"])
    data = special.get(url).json()
    assert data["head_version"] == 1
    assert data["tree"]["identity/occupation/current_role"] == "quokka whisperer"
    assert [v["number"] for v in data["versions"]] == [1]
    # The special-tier allergy waits for review; the broken line is a rejected PARSE_ERROR.
    assert sorted(o["status"] for o in data["ops"]) == ["applied", "pending_review", "rejected"]
    plain, _ = make_api_client(subject.tenant, scopes=["read"])
    public = plain.get(url).json()
    assert public["tree"] == {"identity/occupation/current_role": "quokka whisperer"}
    assert all(o["path"] != "body/health/allergies" for o in public["ops"])
