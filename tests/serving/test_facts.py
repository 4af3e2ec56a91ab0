"""The fact pipeline end to end on the shipped artefacts (MiniLM, the fact classifier, the leaf
placer): one chunk in, short dated third-person facts in fitting leaves out, small talk refused,
and the gate accepting a date only when a message's timestamp derives it.

The dialogue is written for this test (no benchmark text)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.engine.dates import DATE_EVIDENCE, chunk_evidence
from memory.engine.gate import GatePolicy, Reason, gate
from memory.engine.ops import Op, OpType
from memory.engine.schema import default_schema
from memory.engine.tree import Tree
from serving.config import EngineConfig
from serving.engines.extractive import state_fact
from serving.listener import build_listener
from serving.protocol import ListenerJob

TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def chat(*contents: str) -> list[dict]:
    """Turns alternating user / assistant, the user first, all sent at ``TS``."""
    return [{"role": ("user", "assistant")[i % 2], "content": c, "ts": TS} for i, c in enumerate(contents)]


TURNS = chat(
    "Hey Sam! I joined a pottery class yesterday and it was so relaxing.",
    "Wow, that's cool! How did it go?",
    "It was great. I'm a nurse at the city hospital, so I work night shifts.",
    "Nice! Any pets?",
    "My dog Biscuit sleeps all day - pretty cute, huh? Thanks, bye!",
)


def job(turns, tree=None) -> ListenerJob:
    schema = default_schema()
    return ListenerJob(
        job_id="j1", subject_id="s1", base_version=0, schema_id=schema.id,
        schema_version=schema.version, tree=tree or {}, turns=turns,
    )  # fmt: skip


@pytest.fixture(scope="module")
def listener():
    return build_listener(EngineConfig(kind="extractive"))


def test_a_chunk_becomes_short_dated_facts_in_fitting_leaves(listener):
    result = listener.run([job(TURNS)])[0]
    assert result.error is None
    values = {op.path: op.value for op in result.accepted}
    assert values["identity/family/pets"].startswith("Their dog Biscuit")
    assert any("pottery class (7 May 2023)" in v for v in values.values())
    assert any("nurse at the city hospital" in v for v in values.values())
    for value in values.values():
        assert len(value.split()) <= 12
        assert not {"i", "me", "my", "we"} & {w.strip(".,!?").lower() for w in value.split()}
    text = " ".join(values.values()).lower()
    assert "thanks" not in text and "huh" not in text and "it was great" not in text


def test_small_talk_alone_writes_nothing(listener):
    turns = chat("Hey! How about you?", "All good, thanks.", "I hear ya. Ttyl, bye!")
    result = listener.run([job(turns)])[0]
    assert [op.to_op() for op in result.ops] == [Op.no_op()]


def test_a_derived_date_is_grounded_and_an_invented_one_is_not():
    schema, sentence = default_schema(), "I joined a pottery class yesterday."
    evidence = chunk_evidence([{"role": "user", "content": sentence, "ts": TS}])
    assert evidence == [sentence, DATE_EVIDENCE + "7 May 2023"]
    policy = GatePolicy(grounding=True)
    ok = Op(OpType.ADD, "behaviour/hobbies/main", "Joined a pottery class (7 May 2023)", source=sentence)
    made_up = Op(
        OpType.ADD, "behaviour/hobbies/main", "Joined a pottery class (9 June 2021)", source=sentence
    )
    assert gate(schema, Tree(), [ok], policy, evidence).accepted == (ok,)
    judged = gate(schema, Tree(), [made_up], policy, evidence)
    assert [r.reason for r in judged.rejected] == [Reason.UNGROUNDED]
    undated = chunk_evidence([{"role": "user", "content": sentence}])  # no timestamp: no date
    assert [r.reason for r in gate(schema, Tree(), [ok], policy, undated).rejected] == [Reason.UNGROUNDED]


def test_an_op_citing_two_sentences_needs_both_in_the_chunk():
    schema, policy = default_schema(), GatePolicy(grounding=True)
    evidence = ["I run every morning.", "I also swim on Sundays."]
    both = Op(OpType.ADD, "behaviour/habits/exercise", "Runs every morning; swims on Sundays",
              source="I run every morning.\nI also swim on Sundays.")  # fmt: skip
    forged = Op(OpType.ADD, "behaviour/habits/exercise", "Runs every morning; swims on Sundays",
                source="I run every morning.\nI also swim on Sundays and I am 45.")  # fmt: skip
    assert gate(schema, Tree(), [both], policy, evidence).accepted == (both,)
    assert [r.reason for r in gate(schema, Tree(), [forged], policy, evidence).rejected] == [
        Reason.UNGROUNDED
    ]


@pytest.mark.parametrize(
    ("clause", "fact"),
    [
        ("Two years ago I ran a marathon in Boston", "Ran a marathon in Boston (2021)"),
        ("Yesterday, I adopted a puppy", "Adopted a puppy (7 May 2023)"),
        ("Just yesterday I adopted a puppy", "Adopted a puppy (7 May 2023)"),
        ("Yesterday was wild, I adopted a puppy", "Adopted a puppy (7 May 2023)"),
        ("Just got back from a road trip yesterday", "Got back from a road trip (7 May 2023)"),
        ("Great, I'll check it out with my partner Tomás this weekend", None),
        ("I'm Maya.", "Maya"),
    ],
)
def test_state_fact_dates_after_the_rewrite(clause, fact):
    out = state_fact(clause, TS, clause)
    if fact is None:  # the date is never cut in half by the word budget
        assert out.count("(") == out.count(")") and "Tomás" in out
    else:
        assert out == fact


def test_a_request_to_forget_is_never_filed_as_a_fact(listener):
    turns = chat("I'm training for a half marathon in October.", "Good luck!")
    first = listener.run([job(turns)])[0]
    tree = {op.path: op.value for op in first.accepted if op.op != "NO_OP"}
    assert any("half marathon" in v for v in tree.values())
    forget = [
        {
            "role": "user",
            "content": "Oh, and please forget that I mentioned the half marathon, that plan is off.",
        }
    ]
    second = listener.run([job(forget, tree)])[0]
    assert all("forget" not in (op.value or "") for op in second.ops)
    assert [op.op for op in second.accepted] == ["DELETE"]


def test_a_pet_the_user_took_in_is_theirs_and_a_doctors_words_are_not(listener):
    turns = chat(
        "Good news: we adopted a puppy! His name is Ziggy, he's a beagle.",
        "Congratulations! How is your week otherwise?",
        "My wrist has been aching, the doctor says no climbing for now.",
    )
    result = listener.run([job(turns)])[0]
    values = {op.path: op.value for op in result.accepted}
    assert "Ziggy" in values["identity/family/pets"] and "beagle" in values["identity/family/pets"]
    assert "doctor" not in " ".join(values.values()).lower()  # the doctor's words are not the user's facts


def test_a_plain_liking_is_filed_however_unsure_the_classifier_is(listener):
    # the classifier, trained where "I love X" is often an echo, rates these well under its threshold
    turns = chat("I love to cook and I also love fishing.", "Nice!", "I loved the movie we saw.")
    values = [op.value for op in listener.run([job(turns)])[0].accepted]
    assert "Loves to cook" in values and "Loves fishing" in values, values
    assert not any("movie" in v for v in values), values


def test_a_shortened_fact_keeps_its_subjects_verb(listener):
    # cut at its list's "and", the clause was "The help they got from their aunt": a subject alone
    # and cut at its twelfth word, "The help they got ... teachers they looked"
    for content in (
        "The help I got from my aunt and the teachers I looked up to was huge for me.",
        "The help I got from my aunt and the teachers I looked up to was huge for me in those years.",
    ):
        values = [op.value for op in listener.run([job(chat(content, "Aww."))])[0].accepted]
        assert any(v.startswith("The help") and " was huge" in v for v in values), values


def test_a_standing_in_life_is_kept_however_short(listener):
    turns = chat("I'm retired and I love to gamble.", "Nice!")
    values = {op.value for op in listener.run([job(turns)])[0].accepted}
    assert {"Is retired", "Loves to gamble"} <= values, values


def test_verbs_joined_to_the_speakers_take_the_third_person_with_it(listener):
    def value(content):
        (op,) = listener.run([job(chat(content, "Cool."))])[0].accepted
        return op.value

    assert (
        value("I'm a sound engineer and own a small studio.") == "Is a sound engineer and owns a small studio"
    )
    assert value("I keep bees and drive an old van.") == "Keeps bees and drives an old van"
    # a list after "like to" is of infinitives, however the parser hangs it
    assert value("I like to bake bread, ride my bike and read comics.") == (
        "Likes to bake bread, ride their bike and read comics"
    )
    # verbs the parse hangs on the object list ("hike" read as a second thing watched)
    assert value("We usually watch movies, hike, and have game nights at my place.") == (
        "Usually watches movies, hikes, and has game nights at their place"
    )
    # a liking of a thing (not a list of infinitives) joins its verbs like any other
    assert (
        value("I love folk music and hope to record an album.")
        == "Loves folk music and hopes to record an album"
    )
    assert (
        value("I adore my dog and walk him every morning.") == "Adores their dog and walks him every morning"
    )
    assert value("I go for walks, play fetch, and go to the dog park.") == (
        "Goes for walks, plays fetch, and goes to the dog park"
    )
    # a word that may be a noun, with no object after it, is left as said
    assert (
        value("I eat rice and fish with my dad on Sundays.") == "Eats rice and fish with their dad on Sundays"
    )


def test_where_one_is_from_is_their_hometown_and_a_liked_breed_is_no_pet(listener):
    turns = chat(
        "I am from Italy, but I live in Denver now.",
        "Oh nice! Do you have any pets?",
        "No, but I love golden retrievers. I'm a dog groomer at a salon downtown.",
    )
    values = {op.path: op.value for op in listener.run([job(turns)])[0].accepted}
    assert "Italy" in values.get("identity/location/hometown", ""), values
    assert "identity/family/pets" not in values, values
    assert "golden retrievers" in values.get("behaviour/preferences/animals", ""), values
