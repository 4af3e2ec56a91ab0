"""Model output holding NUL or lone surrogates (issue 15) is written, not retried forever.

PostgreSQL refuses NUL in text and json columns, and a lone surrogate cannot be encoded; the API
refuses both in its input, but model output reaches the store from the MemListener. Before the
fix such an op failed the chunk's database write on every attempt and blocked its subject. The
listener now makes every string it returns storable (``serving.listener.storable``); these tests
go through the real write path: the dispatcher, the store's gate and ``tree_apply_ops_batch`` on
PostgreSQL, with an engine double that emits the bad text (raw and as JSON escapes).
"""

from __future__ import annotations

import json

import pytest

from memory import selectors
from memory.models import Chunk, OpRecord
from serving.engines.base import Generation
from serving.listener import MemListener, storable
from tests.workers.helpers import ingest_closed
from workers.dispatcher import dispatch_round

pytestmark = pytest.mark.django_db

CITY = "identity/location/current_city"
ROLE = "identity/occupation/current_role"
NUL, LONE = "\x00", "\ud800"

JSON_OUTPUT = json.dumps(  # json.dumps writes \\u0000 and \\ud800: they decode back to NUL / a lone surrogate
    {
        "ops": [
            {"op": "ADD", "path": CITY, "value": f"Lyon{NUL}", "source": f"I live in Lyon{NUL}"},
            {"op": "ADD", "path": ROLE, "value": f"nurse{LONE}", "source": f"I work as a nurse{LONE}"},
            {"op": "ADD", "path": f"identity/no{NUL}such{LONE}", "value": f"x{NUL}"},
        ]
    }
)
LINE_OUTPUT = f'ADD({CITY}, "Lyon{NUL}")\nADD({ROLE}, "nurse{LONE}")\nGARBAGE{NUL}({LONE}\n'


class FixedTextEngine:
    """Answers every prompt with the same raw text (a test double, not a model)."""

    model_id = f"fixed{NUL}-text{LONE}"

    def __init__(self, text: str) -> None:
        self.text = text

    def generate(self, prompts, json_schema):
        return [Generation(text=self.text, model_id=self.model_id) for _ in prompts]

    def check_health(self) -> None:
        return None

    def close(self) -> None:
        return None


class ListenerClient:
    def __init__(self, engine) -> None:
        self.listener = MemListener(engine)

    def run(self, jobs):
        return self.listener.run(list(jobs))


def _unstorable(text) -> bool:
    if not isinstance(text, str):
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return NUL in text


@pytest.mark.parametrize("output", [JSON_OUTPUT, LINE_OUTPUT], ids=["json-escapes", "raw-line-format"])
def test_nul_and_lone_surrogates_in_model_output_are_stored_clean(tenant, output):
    # one pair: a partial window, closed now
    subject = ingest_closed(
        tenant, "nul-subject", [("user", "I live in Lyon. I work as a nurse."), ("assistant", "Nice.")]
    )
    client = ListenerClient(FixedTextEngine(output))
    for _ in range(3):  # more than one round would mean a failed write was retried
        report = dispatch_round(client=client, max_jobs=16, max_wait_ms=0, index=False)
        if not report.claimed:
            break
    chunk = Chunk.objects.get(subject=subject)
    assert chunk.status == Chunk.Status.APPLIED, chunk.last_error
    assert chunk.attempts <= 1
    subject.refresh_from_db()
    _, tree = selectors.tree_at(subject, None)
    assert tree.get(CITY) == "Lyon"
    records = list(OpRecord.objects.filter(subject=subject))
    assert records, "the ops and rejections are in the audit log"
    for record in records:
        for name in ("path", "new_value", "old_value", "detail", "source_text", "model_id"):
            assert not _unstorable(getattr(record, name)), (name, getattr(record, name))
    assert any("\ufffd" in (r.new_value or "") + r.path + r.detail for r in records)


def test_storable_joins_pairs_and_replaces_what_cannot_be_stored():
    assert storable("a\x00b\x07c\td\n") == "a b\x07c\td\n"  # only NUL: PostgreSQL stores the rest
    assert storable("x\ud800y") == "x\ufffdy"
    assert storable("\ud83d\ude00") == "\U0001f600"  # a pair spelt as two code points is one character
    assert storable("plain Lyon, déjà vu") == "plain Lyon, déjà vu"
