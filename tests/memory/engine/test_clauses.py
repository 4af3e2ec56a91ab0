"""Update rules for leaf values: single-state leaves are replaced, duplicates found across a tree."""

from __future__ import annotations

import pytest

from memory.engine.clauses import (
    anchored,
    clause_key,
    duplicate_leaf,
    merge_clauses,
    no_state,
    present_habit,
)


def test_single_leaf_is_replaced_not_appended() -> None:
    assert merge_clauses("Lives in Boston", "Moved to Lisbon (May 2023)", 80, single=True) == (
        "Moved to Lisbon (May 2023)"
    )
    assert merge_clauses("Works at Google; Works at Meta", "Works at a bakery", 80, single=True) == (
        "Works at a bakery"
    )
    assert merge_clauses(None, "Is single", 80, single=True) == "Is single"


def test_single_leaf_keeps_a_value_that_already_holds_the_new_clause() -> None:
    old = "Works as a nurse at St Mary's hospital"
    assert merge_clauses(old, "Works as a nurse", 80, single=True) == old
    assert merge_clauses("works as a nurse", "Works as a nurse", 80, single=True) == "works as a nurse"


def test_what_someone_is_doing_or_wanted_adds_to_a_single_leaf_instead_of_replacing_it() -> None:
    role = "Is a recording engineer"
    doing = "Is offering one-on-one mentoring and training"
    assert merge_clauses(role, doing, 120, single=True) == f"{role}; {doing}"
    assert merge_clauses(doing, "Has been doing some promotion", 120, single=True) == (
        f"{doing}; Has been doing some promotion"
    )
    assert (
        merge_clauses(doing, "Works as a nurse", 120, single=True) == "Works as a nurse"
    )  # a state replaces
    assert merge_clauses(None, doing, 120, single=True) == doing
    lost = "Lost their job at Door Dash (January 2023)"
    wish = "Wanted to take control of their own destiny"
    assert merge_clauses(lost, wish, 120, single=True) == f"{lost}; {wish}"


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("Is expanding their studio", True),
        ("Works at a bakery", False),
        ("Is still teaching kindergarten", True),
        ("Has been doing some promotion", True),
        ("Can make a special shopping experience", True),
        ("Is a nurse", False),
        ("Is king of the castle", False),
        ("Got promoted", False),
        ("Is living in Denver", False),  # states said in the progressive replace as states do
        ("Has been dating Sam", False),
        ("Is working as a nurse", False),
        ("Will move to Austin", False),  # a plan is the state of a planned move
        ("Wanted to take control of their own destiny", True),
        ("Decided to quit their job", False),
    ],
)
def test_no_state(clause: str, expected: bool) -> None:
    assert no_state(clause) is expected


def test_multi_leaf_appends_and_drops_restated_clauses_as_before() -> None:
    assert merge_clauses("Has a dog", "Has a cat named Luna", 80) == "Has a dog; Has a cat named Luna"
    assert (
        merge_clauses("Runs 5 km every morning", "Runs 10 km every morning", 80) == "Runs 10 km every morning"
    )
    assert merge_clauses("Is 31", "Is 32", 80) == "Is 31; Is 32"  # numbers count: not "already held"
    assert merge_clauses("Is 31", "Is 32", 80, single=True) == "Is 32"
    assert merge_clauses("Has a dog; Loves hiking", "Loves hiking", 80) == "Has a dog; Loves hiking"


def test_a_dated_event_is_not_superseded_by_another_one() -> None:
    old = "Took the kids to the museum (5 July 2023)"
    new = "Took the kids to a pottery workshop (14 July 2023)"
    assert merge_clauses(old, new, 120) == f"{old}; {new}"
    old = "Won their first video game tournament (21 January 2022)"
    new = "Is playing in the video game tournament again"
    assert merge_clauses(old, new, 120) == f"{old}; {new}"
    # the same event restated with its date still replaces the old clause
    assert merge_clauses(old, "Won their first big video game tournament (21 January 2022)", 120) == (
        "Won their first big video game tournament (21 January 2022)"
    )


def test_a_clause_naming_someone_is_not_superseded_by_one_that_does_not() -> None:
    old = "Took Max for a walk"
    assert (
        merge_clauses(old, "Took their turtles out for a walk", 120)
        == f"{old}; Took their turtles out for a walk"
    )
    assert merge_clauses(old, "Took Max for a long walk", 120) == "Took Max for a long walk"


def test_clause_key_counts_numbers_and_months() -> None:
    assert clause_key("Is 32") == {"32"}
    assert clause_key("Went to a concert (May 2023)") != clause_key("Went to a concert (June 2023)")
    assert clause_key("Has two kids") == clause_key("Has 2 kids")


def test_duplicate_leaf_finds_the_same_fact_anywhere_in_the_tree() -> None:
    tree = {
        "identity/family/pets": "Has a dog named Max; Has a cat",
        "behaviour/hobbies/outdoor": "Loves hiking in the Alps",
        "identity/location/city": "Lives in Lisbon",
    }
    assert duplicate_leaf("Has a dog named Max", tree) == "identity/family/pets"
    assert duplicate_leaf("Loves hiking", tree) == "behaviour/hobbies/outdoor"  # subset of a held clause
    assert duplicate_leaf("Lives in Lisbon", tree) == "identity/location/city"
    assert duplicate_leaf("Really loves hiking in the Alps", tree) == "behaviour/hobbies/outdoor"  # overlap


def test_duplicate_leaf_is_none_for_a_new_fact() -> None:
    tree = {"identity/family/pets": "Has a dog named Max", "events/trips": "Went to a concert (May 2023)"}
    assert duplicate_leaf("Has a dog named Rex", tree) is None
    assert duplicate_leaf("Went to a concert (June 2023)", tree) is None
    assert duplicate_leaf("Loves hiking", tree) is None
    assert duplicate_leaf("Is", tree) is None  # nothing to compare
    assert duplicate_leaf("Has a dog", {}) is None


def test_over_budget_a_clause_without_date_number_or_name_goes_first() -> None:
    old = "Went to Porto (7 May 2023); Is feeling hopeful and optimistic"
    assert (
        merge_clauses(old, "Adopted a cat named Luna", 80)
        == "Went to Porto (7 May 2023); Adopted a cat named Luna"
    )
    # of the vague clauses, the one that says least goes first
    old = "Is feeling hopeful; Has gone camping a few times but never tried climbing; Went to Porto (7 May 2023)"
    assert merge_clauses(old, "Adopted a cat named Luna", 120) == (
        "Has gone camping a few times but never tried climbing; Went to Porto (7 May 2023); Adopted a cat named Luna"
    )
    old = "Has gone camping a few times but never tried climbing; Is feeling hopeful; Went to Porto (7 May 2023)"
    assert merge_clauses(old, "Adopted a cat named Luna", 120) == (
        "Has gone camping a few times but never tried climbing; Went to Porto (7 May 2023); Adopted a cat named Luna"
    )
    # every clause anchored: the oldest goes, as before
    old = "Went to Porto (7 May 2023); Ran 10 km (9 May 2023)"
    assert (
        merge_clauses(old, "Met Ana (12 June 2023)", 60) == "Ran 10 km (9 May 2023); Met Ana (12 June 2023)"
    )
    # a vague date says when it was told, not when it happened: it anchors nothing
    old = "Went to Porto (7 May 2023); Went to a parade (a few weeks before 9 May 2023)"
    assert (
        merge_clauses(old, "Met Ana (12 June 2023)", 60)
        == "Went to Porto (7 May 2023); Met Ana (12 June 2023)"
    )


@pytest.mark.parametrize(
    ("old", "new", "kept"),
    [
        # a passing feeling goes before a fact, however many words it has
        ("Enjoys dramas and films; Feels at peace on a comfy couch with a good blanket",
         "Organized a toy drive for kids", "Enjoys dramas and films; Organized a toy drive for kids"),
        # a taste outlasts a longer story: it holds until it is taken back
        ("Enjoys dramas and films; The screenplay they sent in has been on their mind all day",
         "Set up meetings with producers", "Enjoys dramas and films; Set up meetings with producers"),
        # so does a habit told in the present: what someone does as a rule, not what they did once
        ("Plays clarinet; Made something to catch the eye and make people smile",
         "Found their muses: painting and pottery", "Plays clarinet; Found their muses: painting and pottery"),
        # of two facts, the one that names less goes: "help" and "be involved" name little
        ("Organized a toy drive for kids; Wants to help out and be involved",
         "Renovated a community center", "Organized a toy drive for kids; Renovated a community center"),
    ],
)  # fmt: skip
def test_over_budget_a_feeling_goes_first_then_a_story_then_what_names_least(
    old: str, new: str, kept: str
) -> None:
    assert merge_clauses(old, new, 70) == kept


@pytest.mark.parametrize(
    ("clause", "habit"),
    [
        ("Plays clarinet", True), ("Works at a bakery", True), ("Still teaches kindergarten", True),
        ("Volunteers at the shelter", True),
        ("Made something", False), ("Is a nurse", False), ("Thinks it is fine", False),
        ("Kids are great", False), ("Bus rides", False), ("", False),
    ],
)  # fmt: skip
def test_present_habit(clause: str, habit: bool) -> None:
    assert present_habit(clause) is habit


def test_anchored() -> None:
    assert anchored("Is 32") and anchored("Loves Paris") and anchored("Has a dog, Luna")
    assert not anchored("Is feeling hopeful") and not anchored("Thinks I am fine") and not anchored("")
