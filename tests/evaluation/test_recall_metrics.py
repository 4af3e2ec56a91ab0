import json
from pathlib import Path

import pytest

from evaluation.recall_locomo import locomo_questions, locomo_turns, parse_locomo_time
from evaluation.recall_metrics import RecallQuestion, evaluate_recall, recall_at_k, unit_index
from memory.recall.units import UnitTurn, pair_units

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "locomo_tiny.json"


def test_recall_at_k_basic_and_dedup():
    assert recall_at_k(["a", "b", "c"], {"a", "c"}, 1) == 0.5
    assert recall_at_k(["a", "b", "c"], {"a", "c"}, 3) == 1.0
    # duplicates in the ranking do not use up k
    assert recall_at_k(["b", "b", "b", "a"], {"a"}, 2) == 1.0
    assert recall_at_k([], {"a"}, 5) == 0.0


def test_recall_at_k_rejects_undefined_cases():
    with pytest.raises(ValueError):
        recall_at_k(["a"], set(), 5)
    with pytest.raises(ValueError):
        recall_at_k(["a"], {"a"}, 0)


def test_pair_units_user_assistant_and_singletons():
    turns = [
        UnitTurn("t0", "assistant", "hi", 0, session="s1"),
        UnitTurn("t1", "user", "q", 1, session="s1"),
        UnitTurn("t2", "assistant", "a", 2, session="s1"),
        UnitTurn("t3", "user", "q2", 3, session="s1"),
        UnitTurn("t4", "assistant", "a2", 4, session="s2"),  # other session: not paired
        UnitTurn("sys", "system", "persona", 5, session="s2"),
    ]
    units = pair_units(turns)
    assert [tuple(t.turn_id for t in u.turns) for u in units] == [("t0",), ("t1", "t2"), ("t3",), ("t4",)]
    assert unit_index(units) == {"t0": 0, "t1": 1, "t2": 1, "t3": 3, "t4": 4}
    assert units[1].text == "user: q\nassistant: a"


def test_locomo_reader_and_report_per_category():
    sample = json.loads(FIXTURE.read_text())[0]
    turns = locomo_turns(sample)
    assert [t.role for t in turns[:3]] == ["user", "assistant", "user"]
    assert "cardboard box" in turns[3].content
    assert turns[0].ts_ms == parse_locomo_time("1:56 pm on 8 May, 2023") > 0
    units = pair_units(turns)
    t2u = unit_index(units)
    qs = locomo_questions(sample)
    assert qs[1].gold_turns == ("D2:1", "D2:3")
    # perfect retrieval for q0, half for q1 at k=1 (gold spans two units)
    retrieved = {"0": [t2u["D1:1"]], "1": [t2u["D2:3"], t2u["D2:1"]], "2": []}
    rep = evaluate_recall(qs, retrieved, t2u, ks=(1, 5))
    assert rep.n_scored == 2 and rep.n_skipped == 1
    assert rep.overall == {1: pytest.approx(0.75), 5: 1.0}
    assert rep.per_category == {"1": {1: 1.0, 5: 1.0}, "2": {1: 0.5, 5: 1.0}}


def test_missing_result_is_an_error():
    q = RecallQuestion("q", "1", ("x",))
    with pytest.raises(KeyError):
        evaluate_recall([q], {}, {"x": 1})
