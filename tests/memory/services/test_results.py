"""The read services' typed results (memory/services/results.py): fields by name, and the JSON object
they are sent as."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from rest_framework.renderers import JSONRenderer

from memory.services.results import AnswerResult, ContextResult, IngestStatus

CONTEXT = {
    "subject": "u1",
    "query": "where do I live?",
    "mode": "auto",
    "mode_used": "fast",
    "version": 3,
    "router": {"mode": "fast", "reason": "tree overlap", "score": 0.2},
    "context": {"text": "city: Lyon", "paths": ["identity/location/current_city"], "tokens": 4},
    "evidence": [],
    "recall": None,
    "token_budget": 4000,
    "tokens": 4,
    "notices": [],
    "timings_ms": {"tree_ms": 0.1, "total_ms": 0.2},
}


def test_a_result_reads_by_field_and_as_the_json_object_it_is_sent_as():
    result = ContextResult(**CONTEXT)
    assert result.mode_used == result["mode_used"] == "fast"
    assert list(result) == list(CONTEXT) and dict(result) == CONTEXT and result == CONTEXT
    assert {**result} == CONTEXT and result.get("missing") is None
    with pytest.raises(KeyError):
        result["missing"]
    copy = result.to_dict()
    copy["extra"] = 1  # a plain dict of its own
    assert "extra" not in result
    assert json.loads(JSONRenderer().render(result)) == CONTEXT


def test_an_answer_is_the_context_plus_the_answer_and_model():
    model = {"model_id": "m", "prompt_version": "answer-v1", "prompt_tokens": 10, "completion_tokens": 2}
    answer = AnswerResult(**CONTEXT, answer="Lyon.", model=model)
    assert isinstance(answer, ContextResult)
    assert list(answer) == [*CONTEXT, "answer", "model", "citations"]
    assert json.loads(JSONRenderer().render(answer)) == {
        **CONTEXT,
        "answer": "Lyon.",
        "model": model,
        "citations": [],
    }


def test_ingest_status_renders_its_datetime():
    at = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    status = IngestStatus(
        cursor=12,
        chunked_through_seq=12,
        applied_through_seq=6,
        unchunked_messages=0,
        chunks={"pending": 1, "processing": 0, "applied": 1, "failed": 0},
        pending_chunks=1,
        head_version=1,
        last_applied_version=1,
        last_applied_at=at,
        blocked=False,
        failures=[],
    )
    body = json.loads(JSONRenderer().render({"subject": "u1", **status}))
    assert body["last_applied_at"].startswith("2026-12-03T12:00:00") and body["pending_chunks"] == 1
