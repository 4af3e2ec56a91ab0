"""The extractive engine's rules: which leaf a fact goes to (fact_pointers), what a long clause keeps
(state_fact), and the whole-sentence rules (extractive_pointers); invented lines."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from memory.engine.candidates import Candidate, Candidates, UserSentence
from memory.engine.facts import VAGUE_FLOOR, FactVerdict
from serving.engines.extractive import _weight, extractive_pointers, fact_pointers, state_fact

MONDAY = datetime(2023, 7, 17, 14, 31, tzinfo=UTC)


@dataclass(frozen=True)
class Placed:
    leaves: tuple[tuple[str, float], ...]
    verdict: FactVerdict = FactVerdict("self", 0.9)
    concrete: bool = False
    verb: str = ""
    joined: tuple[str, ...] = ()


FULL = "Went to Porto (7 May 2023); Ran 10 km (9 May 2023); Met Ana (12 June 2023)"
RANKED = (("life/recent", 0.9), ("hobbies/outdoor", 0.7))


def _item(text: str, tree: dict[str, str]) -> dict:
    unit = UserSentence(1, text, 0, ts=MONDAY)
    leaves = tuple(Candidate(n, p, s, tree.get(p)) for n, (p, s) in enumerate(RANKED, 1))
    candidates = Candidates(leaves, {1: RANKED[0]}, {1: RANKED})
    budgets = {"life/recent": 80, "hobbies/outdoor": 80}
    (item,) = fact_pointers([unit], {1: Placed(RANKED)}, candidates, tree, budgets)
    return {**item, "path": next((c.path for c in leaves if c.id == item["leaf"]), None)}  # NO_OP: None


def _leaf_of(text: str, tree: dict[str, str]) -> str | None:
    return _item(text, tree)["path"]


def test_a_fact_goes_to_its_best_leaf_never_the_next() -> None:
    assert _leaf_of("I went camping in Sintra yesterday", {}) == "life/recent"
    # a full best leaf takes a dated fact, which pushes out its oldest dated clause
    item = _item("I went camping in Sintra yesterday", {"life/recent": FULL})
    assert (item["op"], item["path"], item["value"]) == (
        "ADD",
        "life/recent",
        "Went camping in Sintra (16 July 2023)",
    )


def test_a_vague_fact_never_pushes_a_dated_one_out() -> None:
    # with room, or where only vague clauses would go, the best leaf takes it
    assert _leaf_of("I love sleeping under the stars", {}) == "life/recent"
    vague = "Loves long walks; Enjoys quiet mornings; Likes cooking dinner at home"
    assert _leaf_of("I love sleeping under the stars", {"life/recent": vague}) == "life/recent"
    # a full best leaf that would lose a dated fact: not filed, even with room in the next leaf
    assert _leaf_of("I love sleeping under the stars", {"life/recent": FULL}) is None
    # where only vague clauses would go, it is weighed with them: it goes in only if it is not the
    # one that would go first (a passing feeling, here)
    vague = "Loves long walks by the sea; Enjoys quiet mornings; Likes cooking dinner at home"
    assert _leaf_of("I'm feeling so calm and happy", {"life/recent": vague}) is None
    assert _leaf_of("I'm feeling so calm and happy", {}) == "life/recent"


def test_on_a_single_state_leaf_what_one_is_doing_never_pushes_a_dated_state_out() -> None:
    leaves = (Candidate(1, "work/status", 0.9, None),)
    ranked = (("work/status", 0.9),)
    candidates = Candidates(leaves, {1: ranked[0]}, {1: ranked})
    lost = "Lost their job at Door Dash (January 2023); Found a temp job at a warehouse (March 2023)"

    def filed(text: str) -> str | None:
        unit = UserSentence(1, text, 0, ts=MONDAY)
        tree = {"work/status": lost}
        (item,) = fact_pointers(
            [unit], {1: Placed(ranked)}, candidates, tree, {"work/status": 100}, {"work/status"}
        )
        return item["value"]

    assert filed("I'm working hard on my online store these days") is None  # it would push out a date
    assert filed("I'm retired now") == "Is retired now"  # a new state replaces the leaf


def test_a_fact_naming_nothing_needs_a_surer_classifier() -> None:
    leaves = (Candidate(1, "life/recent", 0.9, None),)
    candidates = Candidates(leaves, {1: RANKED[0]}, {1: RANKED[:1]})

    def filed(text: str, p_keep: float, concrete: bool = False) -> bool:
        placed = Placed(RANKED[:1], FactVerdict("self", p_keep), concrete)
        unit = UserSentence(1, text, 0, ts=MONDAY)
        (item,) = fact_pointers([unit], {1: placed}, candidates, {}, {"life/recent": 80})
        return item["op"] == "ADD"

    unsure = VAGUE_FLOOR - 0.02
    assert not filed("I'm feeling good and ready to give it my best", unsure)
    assert filed("I'm feeling good and ready to give it my best", VAGUE_FLOOR)
    # a date, a number or a name is what a question asks for: filed at any kept score
    assert filed("I ran a half marathon yesterday", unsure)
    assert filed("I've been painting with Ana", unsure)
    # so is a clause whose verb does something to a thing it names (the grammar's reading)
    assert filed("I play clarinet", unsure, concrete=True)
    assert not filed("I play clarinet", unsure)


def test_a_fact_that_speaks_to_the_other_person_is_not_filed() -> None:
    unit = UserSentence(1, "I'm so proud of your courage", 0, ts=MONDAY)
    leaves = (Candidate(1, "life/recent", 0.9, None),)
    candidates = Candidates(leaves, {1: RANKED[0]}, {1: RANKED[:1]})
    items = fact_pointers([unit], {1: Placed(RANKED[:1])}, candidates, {}, {"life/recent": 80})
    assert items == [{"op": "NO_OP", "sentence": None, "leaf": None, "value": None}]


def test_the_word_budget_does_not_cut_off_a_date_or_a_name() -> None:
    clause = "I had a quiet weekend after we went camping with my fam two weekends ago."
    assert state_fact(clause, MONDAY, clause) == (
        "Had a quiet weekend after they went camping with their fam (two weekends before 17 July 2023)"
    )
    clause = "I'll always remember our camping trip last year when we saw the Perseid meteor shower."
    assert state_fact(clause, MONDAY, clause) == (
        "Will always remember their camping trip (2022) when they saw the Perseid meteor shower"
    )
    # nothing lost: the usual short fact, its evaluative tail gone
    clause = "I went to a LGBTQ support group yesterday and it was so powerful."
    assert state_fact(clause, MONDAY, clause) == "Went to a LGBTQ support group (16 July 2023)"


def test_just_done_is_dated_the_day_it_was_said() -> None:
    clause = "We just moved to Lisbon!"
    assert state_fact(clause, MONDAY, clause) == "Moved to Lisbon (17 July 2023)"
    clause = "Oh, on another note, I just adopted a cute pup from a shelter last week."  # the week wins
    assert (
        state_fact(clause, MONDAY, clause) == "Adopted a cute pup from a shelter (week before 17 July 2023)"
    )
    assert state_fact("I just love my dog.", MONDAY) == "Loves their dog"  # not an event
    assert state_fact("We just moved to Lisbon!") == "Moved to Lisbon"  # no timestamp, no date


def test_extractive_pointers_one_per_leaf_and_no_op():
    sentences = [
        UserSentence(1, "I run every morning.", 0),
        UserSentence(2, "I also run at night.", 0),
        UserSentence(3, "Nice weather!", 2),
    ]
    ranked = {sid: (("behaviour/habits/exercise", score),) for sid, score in ((1, 0.9), (2, 0.5), (3, 0.9))}
    best = {sid: leaves[0] for sid, leaves in ranked.items()}
    cands = Candidates((Candidate(1, "behaviour/habits/exercise", 0.9, None),), best, ranked)
    items = extractive_pointers(sentences, cands, {"behaviour/habits/exercise": 160})
    assert items == [{"op": "ADD", "sentence": 1, "leaf": 1, "value": "Runs every morning"}]
    assert extractive_pointers(sentences, Candidates((), {}), {})[0]["op"] == "NO_OP"


def test_extractive_keeps_numbers_and_names_as_weight():
    assert _weight("Has been vegetarian for ten years") >= 3
    assert _weight("Maya") >= 3
    assert _weight("Loves it") < 3
