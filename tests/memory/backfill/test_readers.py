"""Backfill format readers: pure parsing, no database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.backfill import BackfillFormatError, JsonlSource, LocomoSource, PersonamemSource, source_open
from memory.backfill.records import derive_key

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "backfill"


def test_jsonl_reads_histories_in_file_order_with_keys():
    source = JsonlSource(FIXTURES / "history.jsonl")
    histories = list(source)
    assert len(source) == 3
    assert [h.external_id for h in histories] == ["alice", "bob", "alice"]
    first = histories[0].messages
    assert first[0].role == "system" and first[0].idempotency_key == "alice-sys"  # explicit id kept
    assert first[1].ts == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert first[1].session_id == "s1"
    assert first[1].idempotency_key == derive_key("history.jsonl", 1, 1)
    keys = [m.idempotency_key for h in histories for m in h.messages]
    assert len(keys) == len(set(keys))


def test_derived_keys_are_stable_across_reads_and_depend_on_label(tmp_path):
    a = [m.idempotency_key for h in JsonlSource(FIXTURES / "history.jsonl") for m in h.messages]
    b = [m.idempotency_key for h in JsonlSource(FIXTURES / "history.jsonl") for m in h.messages]
    c = [
        m.idempotency_key for h in JsonlSource(FIXTURES / "history.jsonl", label="other") for m in h.messages
    ]
    assert a == b
    assert a[0] == c[0]  # explicit ids do not depend on the label
    assert a[1:] != c[1:]


@pytest.mark.parametrize(
    ("line", "location", "fragment"),
    [
        (b"not json", "bad.jsonl:1", "not JSON"),
        (b"\xff\xfe{}", "bad.jsonl:1", "not UTF-8"),
        (b"[1, 2]", "bad.jsonl:1", "JSON object"),
        (b'{"subject": "", "messages": []}', "bad.jsonl:1 subject", "non-empty"),
        (b'{"subject": "u", "messages": {}}', "bad.jsonl:1 messages", "must be a list"),
        (b'{"subject": "u", "messages": [], "extra": 1}', "bad.jsonl:1", "unknown keys"),
        (
            b'{"subject": "u", "messages": [{"role": "bot", "content": "x"}]}',
            "bad.jsonl:1 messages[0].role",
            "role",
        ),
        (
            b'{"subject": "u", "messages": [{"role": "user", "content": 3}]}',
            "bad.jsonl:1 messages[0].content",
            "string",
        ),
        (
            b'{"subject": "u", "messages": [{"role": "user", "content": "x", "ts": "yesterday"}]}',
            "bad.jsonl:1 messages[0].ts",
            "ISO",
        ),
    ],
)
def test_jsonl_errors_name_the_location(tmp_path, line, location, fragment):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(line + b"\n")
    with pytest.raises(BackfillFormatError) as err:
        list(JsonlSource(path))
    assert err.value.location == location
    assert fragment in err.value.message


def test_jsonl_error_reports_the_right_line_after_good_ones(tmp_path):
    path = tmp_path / "mixed.jsonl"
    good = json.dumps({"subject": "u", "messages": [{"role": "user", "content": "hi"}]})
    path.write_text(f"{good}\n\n{good}\n{{broken\n")
    reader = iter(JsonlSource(path))
    assert next(reader).external_id == "u"
    assert next(reader).external_id == "u"
    with pytest.raises(BackfillFormatError, match=r"mixed.jsonl:4"):
        next(reader)


def test_locomo_builds_one_tree_per_speaker_with_roles_swapped():
    histories = list(LocomoSource(FIXTURES / "locomo_tiny.json"))
    assert [h.external_id for h in histories] == ["conv-t1:Rosa", "conv-t1:Tomas"]
    rosa, tomas = histories
    assert [m.role for m in rosa.messages[:2]] == ["user", "assistant"]
    assert [m.role for m in tomas.messages[:2]] == ["assistant", "user"]
    assert [m.content for m in rosa.messages] == [m.content for m in tomas.messages]
    # the two trees are separate subjects, so the same turn may carry the same key
    assert rosa.messages[0].idempotency_key == tomas.messages[0].idempotency_key
    assert rosa.messages[0].ts == datetime(2023, 3, 3, 9, 15, tzinfo=UTC)
    assert rosa.messages[-1].ts == datetime(2023, 3, 20, 18, 40, tzinfo=UTC)
    assert rosa.messages[-1].content.endswith("[shares an image: a photo of a blue ceramic bowl]")
    assert rosa.messages[-1].session_id == "session_2"


@pytest.mark.parametrize(("speakers", "expected"), [(["b"], ["conv-t1:Tomas"]), (["Rosa"], ["conv-t1:Rosa"])])
def test_locomo_speaker_selection(speakers, expected):
    source = LocomoSource(FIXTURES / "locomo_tiny.json", speakers=speakers)
    assert [h.external_id for h in source] == expected
    assert len(source) == 1


def test_locomo_rejects_a_record_without_speakers(tmp_path):
    path = tmp_path / "l.json"
    path.write_text(json.dumps([{"sample_id": "x", "conversation": {"speaker_a": "A", "session_1": []}}]))
    with pytest.raises(BackfillFormatError, match="speaker_a and speaker_b"):
        list(LocomoSource(path))


def test_personamem_contexts_and_end_index():
    full = list(PersonamemSource(FIXTURES / "personamem_tiny.jsonl"))
    assert [h.external_id for h in full] == ["ctx-synthetic-01", "ctx-synthetic-02"]
    assert full[0].messages[0].role == "system"
    prefix = list(PersonamemSource(FIXTURES / "personamem_tiny.jsonl", end_index={"ctx-synthetic-01": 3}))
    assert len(prefix[0].messages) == 3
    assert [m.idempotency_key for m in prefix[0].messages] == [
        m.idempotency_key for m in full[0].messages[:3]
    ]
    assert len(prefix[1].messages) == 4


def test_personamem_rejects_unknown_role(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"c1": [{"role": "narrator", "content": "x"}]}) + "\n")
    with pytest.raises(BackfillFormatError, match=r"c1\[0\]\.role"):
        list(PersonamemSource(path))


def test_source_open_dispatches_and_rejects_unknown_format():
    assert isinstance(source_open(FIXTURES / "history.jsonl", format="jsonl"), JsonlSource)
    with pytest.raises(ValueError, match="unknown backfill format"):
        source_open(FIXTURES / "history.jsonl", format="csv")
