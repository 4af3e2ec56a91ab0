"""Backfill service and command: import, dry run, re-run, in-process processing, bad input."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memory.backfill import BackfillFormatError, JsonlSource, LocomoSource, PersonamemSource
from memory.backfill.records import SubjectHistory
from memory.backfill.service import Pacer, backfill_run
from memory.messages import IncomingMessage
from memory.models import Chunk, Message, OpRecord, Subject, TreeVersion
from tests.workers.helpers import WatchingClient

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "backfill"


def state(tenant) -> dict:
    out = {}
    for s in Subject.objects.filter(tenant=tenant):
        out[s.external_id] = {
            "messages": Message.objects.filter(subject=s).count(),
            "spans": list(
                Chunk.objects.filter(subject=s).order_by("start_seq").values_list("start_seq", "end_seq")
            ),
            "versions": TreeVersion.objects.filter(subject=s).count(),
            "ops": OpRecord.objects.filter(subject=s).count(),
            "tree": s.head.snapshot if s.head_id else {},
        }
    return out


def test_jsonl_import_then_rerun_duplicates_nothing(tenant):
    report = backfill_run(tenant=tenant, histories=JsonlSource(FIXTURES / "history.jsonl"), progress=False)
    assert (report.subjects, report.messages, report.new_messages, report.duplicates) == (3, 15, 15, 0)
    first = state(tenant)
    assert first["alice"]["messages"] == 11 and first["bob"]["messages"] == 4
    # alice: system + 4 pairs in line 1 -> one complete window + a flushed partial; line 3 adds one pair
    assert first["alice"]["spans"] == [(2, 7), (8, 9), (10, 11)]
    again = backfill_run(tenant=tenant, histories=JsonlSource(FIXTURES / "history.jsonl"), progress=False)
    assert (again.new_messages, again.duplicates, again.chunks) == (0, 15, 0)
    assert state(tenant) == first


def test_dry_run_writes_nothing_and_counts_chunks(tenant):
    report = backfill_run(
        tenant=tenant, histories=LocomoSource(FIXTURES / "locomo_tiny.json"), dry_run=True, progress=False
    )
    assert report.subjects == 2 and report.messages == 18 and report.chunks >= 2
    assert not Message.objects.exists() and not Subject.objects.exists()


def processed(tenant, histories, client):
    """``histories`` imported into ``tenant`` and processed by ``client`` in process (no progress
    display, no evidence indexing)."""
    return backfill_run(
        tenant=tenant, histories=histories, process=True, client=client, progress=False, index=False
    )


def _process_tiny(tenant, client):
    """The tiny PersonaMem file imported and processed by ``client``."""
    return processed(tenant, PersonamemSource(FIXTURES / "personamem_tiny.jsonl"), client)


def test_process_runs_the_listener_in_batches_and_rerun_adds_no_versions(tenant):
    client = WatchingClient()
    report = _process_tiny(tenant, client)
    assert report.applied == report.chunks == Chunk.objects.count() and report.failed == 0
    assert set(Chunk.objects.values_list("status", flat=True)) == {"applied"}
    assert len(client.calls[0]) == 2  # both subjects' first chunks in one call
    assert client.violations == []
    first = state(tenant)
    # the stand-in writes a turn's first words; the gate files some (a re-run must add none)
    assert sum(s["versions"] for s in first.values()) >= 1
    again = _process_tiny(tenant, client)
    assert again.applied == 0 and again.new_messages == 0
    assert state(tenant) == first


def test_process_warms_an_in_process_client_before_its_first_batch(tenant):
    class Warmed(WatchingClient):
        def warm(self, schema_id, schema_version):
            self.calls.append([f"warm {schema_id} v{schema_version}"])

    client = Warmed()
    report = _process_tiny(tenant, client)
    assert report.applied == report.chunks > 0
    # in its own thread, while the messages are stored (an in-process client's lock orders the rest)
    assert [f"warm {tenant.default_schema_id} v{tenant.default_schema_version}"] in client.calls


def test_interrupted_run_resumes_to_the_same_state_as_a_clean_run(tenant, other_tenant):
    histories = [
        SubjectHistory(
            f"r{i}",
            tuple(
                IncomingMessage(role, f"{role} {i}.{j}", f"key-{i}-{j}-{role}")
                for j in range(7)
                for role in ("user", "assistant")
            ),
        )
        for i in range(4)
    ]

    class Boom(BaseException):  # not an Exception: escapes the dispatcher like a killed process
        pass

    class DyingClient(WatchingClient):
        def __init__(self, die_at):
            super().__init__()
            self.die_at = die_at

        def run(self, jobs):
            if len(self.calls) == self.die_at:
                raise Boom  # the process "dies" mid-batch
            return super().run(jobs)

    for die_at in (0, 1, 1):  # dies before any, after one, after one more batch
        with pytest.raises(Boom):
            processed(tenant, histories, DyingClient(die_at))
        # the dead run's claimed chunks are "processing"; the next run takes them back (reclaim)
    processed(tenant, histories, WatchingClient())
    processed(other_tenant, histories, WatchingClient())
    resumed, clean = state(tenant), state(other_tenant)
    assert resumed == clean
    assert set(Chunk.objects.values_list("status", flat=True)) == {"applied"}


def test_restart_takes_back_only_its_own_subjects_chunks(tenant):
    """A killed run's in-flight chunk of a subject being re-imported is taken back at once; a chunk
    another live run holds (another subject of the tenant, e.g. the other speaker) is left alone."""
    from datetime import timedelta

    from django.utils import timezone

    def history(name):
        return SubjectHistory(
            name,
            tuple(
                IncomingMessage(role, f"{role} {name} {j}", f"{name}-{j}-{role}")
                for j in range(6)
                for role in ("user", "assistant")
            ),
        )

    backfill_run(tenant=tenant, histories=[history("live"), history("mine")], progress=False)
    a_minute_ago = timezone.now() - timedelta(minutes=1)
    for name in ("live", "mine"):  # each subject's first chunk is in flight (lease not yet expired)
        first = Chunk.objects.filter(subject__external_id=name).order_by("start_seq").first()
        Chunk.objects.filter(pk=first.pk).update(status="processing", attempts=1, updated_at=a_minute_ago)

    report = processed(tenant, [history("mine")], WatchingClient())
    assert report.reclaimed == 1
    mine = list(
        Chunk.objects.filter(subject__external_id="mine")
        .order_by("start_seq")
        .values_list("status", "attempts")
    )
    assert mine == [("applied", 2), ("applied", 1)]  # the dead run's chunk ran again, once
    live = list(
        Chunk.objects.filter(subject__external_id="live")
        .order_by("start_seq")
        .values_list("status", "attempts")
    )
    assert live == [("processing", 1), ("pending", 0)]  # still the live run's; its order kept


def test_bad_message_is_reported_with_its_location(tenant, tmp_path):
    path = tmp_path / "bad.jsonl"
    good = {"subject": "ok", "messages": [{"role": "user", "content": "fine"}]}
    bad = {
        "subject": "bad",
        "messages": [{"role": "user", "content": "x"}, {"role": "user", "content": "ctrl \u0007"}],
    }
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(BackfillFormatError) as err:
        backfill_run(tenant=tenant, histories=JsonlSource(path), progress=False)
    assert "bad.jsonl:2" in str(err.value) and "messages[1].content" in str(err.value)
    assert Message.objects.filter(subject__external_id="ok").count() == 1  # what came before stays
    assert not Message.objects.filter(subject__external_id="bad").exists()


def test_pacer_keeps_the_rate():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    pacer = Pacer(10, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        pacer.wait(4)
    assert now[0] == pytest.approx(2.0)  # 20 chunks at 10/s
    assert Pacer(None).rate is None


def test_command_imports_and_reports(tenant):
    out = StringIO()
    call_command(
        "backfill",
        str(FIXTURES / "locomo_tiny.json"),
        "--tenant",
        tenant.name,
        "--format",
        "locomo",
        "--speaker",
        "Rosa",
        "--no-progress",
        stdout=out,
    )
    assert "imported 1 subjects, 9 messages (9 new, 0 already present)" in out.getvalue()
    assert list(Subject.objects.values_list("external_id", flat=True)) == ["conv-t1:Rosa"]


def test_command_limit_and_dry_run(tenant):
    out = StringIO()
    call_command(
        "backfill",
        str(FIXTURES / "history.jsonl"),
        "--tenant",
        tenant.name,
        "--limit",
        "1",
        "--dry-run",
        "--no-progress",
        stdout=out,
    )
    assert "would import 1 subjects, 9 messages" in out.getvalue()
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--tenant", "nobody"], "unknown tenant"),
        (["--speaker", "Rosa"], "--speaker applies to --format locomo only"),
        (["--limit", "0"], "--limit must be at least 1"),
    ],
)
def test_command_errors(tenant, args, fragment):
    argv = [str(FIXTURES / "history.jsonl")] + (
        args if "--tenant" in args else ["--tenant", tenant.name, *args]
    )
    with pytest.raises(CommandError, match=fragment):
        call_command("backfill", *argv, "--no-progress")


def test_command_reports_bad_input_as_command_error(tenant, tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text("{not json\n")
    with pytest.raises(CommandError, match=r"broken.jsonl:1.*re-run"):
        call_command("backfill", str(path), "--tenant", tenant.name, "--no-progress")
