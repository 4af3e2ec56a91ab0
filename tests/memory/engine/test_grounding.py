"""Grounding (gate reason UNGROUNDED), no-change UPDATEs, clauses and pointer ops (the extractive
engine's rules: tests/serving/test_extractive.py; candidates by cosine:
tests/evaluation/training/test_cosine.py)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.engine import Op, OpType, Reason, Tree, default_schema, gate
from memory.engine.candidates import Candidate, Candidates, UserSentence, is_retraction, is_self_disclosure
from memory.engine.clauses import merge_clauses, retract, third_person, trim
from memory.engine.gate import GatePolicy
from memory.engine.grounding import check_grounding, proper_nouns
from memory.engine.pointing import ops_from_pointers
from memory.engine.text import number_tokens, split_sentences

SCHEMA = default_schema()
GROUNDED = GatePolicy(grounding=True)
SAID = "I'm a data engineer at a logistics startup. I've been vegetarian for ten years."


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("data engineer at a logistics startup", True),
        ("vegetarian for 10 years", True),  # number word == digits
        ("vegetarian for 12 years", False),  # invented number
        ("data engineer at Google", False),  # invented name
        ("200", False),
        ("brown eyes", False),  # nothing of it was said
        ("Data engineer; vegetarian", True),  # clause-initial capitals are not names
    ],
)
def test_check_grounding(value, ok):
    assert check_grounding(value, [SAID]).ok is ok


def test_old_value_counts_as_support():
    assert check_grounding("lives in Lisbon; vegetarian", ["I'm vegetarian."], "lives in Lisbon").ok
    assert not check_grounding("lives in Lisbon; vegetarian", ["I'm vegetarian."]).ok


def test_names_compare_without_accents_and_all_caps_are_names():
    assert check_grounding("partner Tomas", ["my partner Tomás"]).ok
    assert proper_nouns("went to an LGBTQ group") == ["LGBTQ"]
    assert not check_grounding("went to an LGBTQ group", ["I went to a support group"]).ok


def test_gate_rejects_ungrounded_with_reason_and_accepts_grounded():
    ops = [
        Op.add("identity/occupation/current_role", "data engineer at a logistics startup"),
        Op.add("body/appearance/height", "165"),
    ]
    result = gate(SCHEMA, Tree(), ops, GROUNDED, evidence=[SAID])
    assert [op.path for op in result.accepted] == ["identity/occupation/current_role"]
    assert [(r.reason, r.op.path) for r in result.rejected] == [(Reason.UNGROUNDED, "body/appearance/height")]
    assert "165" in result.rejected[0].detail


def test_gate_grounding_off_by_default_and_without_words():
    op = Op.add("body/appearance/height", "165")
    assert gate(SCHEMA, Tree(), [op]).accepted == (op,)
    rejected = gate(SCHEMA, Tree(), [op], GROUNDED).rejected
    assert rejected[0].reason is Reason.UNGROUNDED and "no user words" in rejected[0].detail


def test_cited_source_must_be_in_the_chunk():
    op = Op("ADD", "identity/occupation/current_role", "a pilot", source="I'm a pilot.")
    result = gate(SCHEMA, Tree(), [op], GROUNDED, evidence=[SAID])
    assert result.rejected[0].reason is Reason.UNGROUNDED
    assert "not in the chunk" in result.rejected[0].detail
    assert gate(SCHEMA, Tree(), [op], GROUNDED, evidence=["Hi. I'm a pilot. Bye."]).accepted == (op,)


def test_update_to_identical_value_is_no_change():
    tree = Tree({"behaviour/habits/exercise": "runs every morning"})
    result = gate(SCHEMA, tree, [Op.update("behaviour/habits/exercise", " runs  every morning ")])
    assert not result.accepted
    assert result.rejected[0].reason is Reason.NO_CHANGE


WORDS = st.sampled_from("I run swim Lisbon data engineer my knee vegetarian years cat Pastel the a".split())


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    source=st.lists(WORDS, min_size=1, max_size=12).map(" ".join),
    value_words=st.lists(WORDS, min_size=0, max_size=6),
    number=st.integers(min_value=0, max_value=100000),
)
def test_property_never_accepts_a_number_absent_from_its_source(source, value_words, number):
    value = " ".join([*value_words, str(number)])
    verdict = check_grounding(value, [source])
    if str(number) not in number_tokens(source):
        assert not verdict.ok
        gated = gate(SCHEMA, Tree(), [Op.add("identity/family/pets", value)], GROUNDED, evidence=[source])
        assert not gated.accepted


@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=15).map(" ".join))
def test_property_a_copy_of_the_source_is_grounded(sentence):
    assert check_grounding(sentence, [sentence]).ok
    clause = third_person(sentence)
    if clause:
        assert not check_grounding(clause, [sentence]).missing_numbers


def test_split_sentences_keeps_abbreviations_and_decimals():
    assert split_sentences("Hi! Dr. Lee said 3.5 km. Ok?") == ["Hi!", "Dr. Lee said 3.5 km.", "Ok?"]


@pytest.mark.parametrize(
    ("sentence", "clause"),
    [
        ("I'm a data engineer at a logistics startup.", "A data engineer at a logistics startup"),
        ("I've been vegetarian for ten years.", "Has been vegetarian for ten years"),
        ("I run every morning.", "Runs every morning"),
        ("Bad news: my knee has been hurting, the physio says no running.", "Their knee has been hurting, the physio says no running"),
        ("Also, we adopted a cat!", "They adopted a cat"),
    ],
)  # fmt: skip
def test_third_person(sentence, clause):
    assert third_person(sentence) == clause


def test_disclosure_and_retraction():
    assert is_self_disclosure("I switched to swimming.")
    assert not is_self_disclosure("Can you convert 5 km to miles for me?")
    assert not is_self_disclosure("What's the weather like?")
    assert not is_self_disclosure("Lisbon's hills will make you strong.")
    assert is_retraction("Please forget that I mentioned the half marathon, that plan is off.")
    assert not is_retraction("I run every morning.")


def test_merge_keeps_old_drops_restated_and_oldest_when_over_budget():
    assert (
        merge_clauses("runs every morning", "switched to swimming", 80)
        == "runs every morning; switched to swimming"
    )
    assert merge_clauses("runs every morning; swims", "swims", 80) == "runs every morning; swims"  # no change
    assert merge_clauses("lives in Lisbon city centre", "lives in Lisbon city centre by the park", 80) == (
        "lives in Lisbon city centre by the park"
    )  # restated with more: the new clause replaces the old one
    merged = merge_clauses("a" * 30 + " one; " + "b" * 30 + " two", "c" * 30 + " three", 80)
    assert merged == "b" * 30 + " two; " + "c" * 30 + " three" and len(merged) <= 80
    assert len(trim("word " * 50, 80)) <= 80
    long = "Their toughest challenges made them realize the importance of patience and perseverance"
    assert trim(long, 80) == "Their toughest challenges made them realize the importance of patience"
    assert trim("Is keen to try out jazz with their friends from the music school in the city", 60) == (
        "Is keen to try out jazz with their friends from the music"
    )


def test_retract_removes_named_clause_or_everything():
    value = "runs every morning, training for a half marathon; switched to swimming"
    assert retract(value, "forget that I mentioned the half marathon") == "switched to swimming"
    assert retract("switched to swimming", "forget the half marathon") is None


def test_pointer_ops_map_ids_merge_and_report_bad_ids():
    sentences = [
        UserSentence(1, "I run every morning.", 0),
        UserSentence(2, "Please forget the half marathon.", 2),
    ]
    tree = {
        "behaviour/habits/exercise": "training for a half marathon; swims",
        "identity/family/pets": "a cat",
    }
    cands = Candidates(
        (Candidate(1, "behaviour/habits/exercise", 0.9, tree["behaviour/habits/exercise"]),), {}
    )
    items = [
        {"op": "ADD", "sentence": 1, "leaf": 1, "value": "runs every morning"},
        {"op": "DELETE", "sentence": 2, "leaf": 1},  # a second item on the leaf folds into its op
        {"op": "ADD", "sentence": 9, "leaf": 1, "value": "x"},  # unknown sentence id
    ]
    budgets = {"behaviour/habits/exercise": 160, "identity/family/pets": 160}
    ops, errors = ops_from_pointers(items, sentences, cands, tree, budgets)
    assert ops == [
        Op(OpType.UPDATE, "behaviour/habits/exercise", "swims; runs every morning",
           source="I run every morning.\nPlease forget the half marathon."),
    ]  # fmt: skip
    assert [e.message for e in errors] == ["sentence id is not one of this chunk's"]
    deleted, _ = ops_from_pointers(
        [{"op": "DELETE", "sentence": 2, "leaf": 1}], sentences, cands, tree, budgets
    )
    assert deleted == [
        Op(OpType.UPDATE, "behaviour/habits/exercise", "swims", source="Please forget the half marathon.")
    ]
