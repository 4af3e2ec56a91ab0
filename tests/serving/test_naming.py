"""What a pronoun names (``serving.naming``), read through ``serving.syntax`` with the real spaCy
pipeline on sentences written for this test: written out only when the speaker named it, never
past what the speaker told since, a group or an animal of theirs, an "it" that names nothing."""

from __future__ import annotations

import pytest

from memory.engine.aboutness import judge, resolve
from tests.serving.reading import read, read_reply


def test_a_pronoun_is_written_out_only_when_the_speaker_named_its_antecedent(syntax):
    named = read(syntax, "My dog Pepper is eight. She naps under my desk.")
    assert named[1][1].antecedent == "My dog Pepper"
    assert judge(named[1][1]).keep
    other = read(syntax, "A stray dog followed me home. She naps under the porch.")
    assert other[1][1].antecedent == "" and judge(other[1][1]).reason == "unresolved_pronoun"


def test_an_it_never_names_a_noun_buried_in_a_clause_said_by_the_way(syntax):
    # the nearest noun by position, three clauses down, is not what "it" is about
    buried = read(syntax, "I met new people who weren't from my normal circle. It was a bit overwhelming.")
    assert buried[1][1].antecedent == "" and judge(buried[1][1]).reason == "unresolved_pronoun"
    # two arcs below the root is still named, and a pet or person however deep
    near = read(syntax, "We spent a week at my grandma's cabin. It has a lake right behind it.")
    assert near[1][1].antecedent == "grandma's cabin" and judge(near[1][1]).keep
    pet = read(syntax, "I like to spend time with my dog, Barnaby. He's a German Shepherd.")
    assert pet[1][1].antecedent == "my dog Barnaby"


def test_a_pronoun_does_not_reach_past_what_the_speaker_told_since(syntax):
    before = "Your commitment really stands out. How did you come up with the designs?"
    *_, (text, found) = read_reply(
        syntax, before, "I got the idea from a magazine. It's all about being different."
    )
    assert found.antecedent == "" and not judge(found).keep  # not "My commitment is all about ..."
    # nothing told since, or told of the same "it": the question's thing is still in reach
    before = "How is your new bike?"
    *_, (text, found) = read_reply(syntax, before, "Thanks! It's fast and light.")
    assert resolve(text, found) == "My new bike is fast and light."
    *_, (text, found) = read_reply(syntax, before, "It climbs well. It's my favourite thing.")
    assert found.antecedent == "my new bike"


def test_a_time_said_by_the_way_is_no_antecedent(syntax):
    # "last week" is nearer than "guitar", but no thing the speaker played
    (_text, _got), (text, found) = read(syntax, "I got a new guitar last week. I play it every day.")
    assert found.antecedent == "the new guitar" and judge(found).keep
    # and what "it" then was is a judgement of it, not a fact: "It's been super positive"
    (_text, _got), (_text, found) = read(syntax, "I joined a gym last week. It's been super positive.")
    assert not judge(found).keep


def test_a_reply_to_a_pronoun_question_names_what_the_speaker_said_before(syntax):
    own = "Here are my turtles soaking up the sun."
    (text, found), *_ = read_reply(
        syntax, "Aww, they're so cute! What do they eat?", "They eat lettuce and insects.", own
    )
    assert found.antecedent == "my turtles" and judge(found).keep
    assert resolve(text, found) == "My turtles eat lettuce and insects."
    # the speaker's "my" before the other's turn is theirs, the other's "?" still makes an answer
    (_text, found), *_ = read_reply(
        syntax, "What are your plans?", "Researching adoption agencies", "I love my job?"
    )
    assert judge(found).keep
    # only when nothing nearer agrees: "the girl" in the reply is no one of the speaker's
    content = "I noticed a little girl sitting alone. She seemed so sad."
    *_, (_text, found) = read_reply(
        syntax, "Which moment stands out?", content, "My aunt helped my family a lot."
    )
    assert found.antecedent == "" and judge(found).reason == "unresolved_pronoun"
    # nor for an ellipsis or a definition of the thing
    said = "I never had close relationships with my family."
    (_text, found), *_ = read_reply(syntax, "That must be hard.", "It is sometimes.", said)
    assert found.antecedent == ""
    (_text, found), *_ = read_reply(
        syntax, "What's it like?", "It's a kind of fast heavy metal.", "I like death metal."
    )
    assert found.antecedent == ""


def test_a_pronoun_names_what_the_other_speaker_called_the_speakers(syntax):
    (text, found), *_ = read_reply(syntax, "Aww! What do your turtles eat?", "They eat lettuce and insects.")
    assert found.antecedent == "my turtles" and judge(found).keep
    assert resolve(text, found) == "My turtles eat lettuce and insects."
    (_text, found), *_ = read_reply(syntax, "What do the turtles eat?", "They eat lettuce and insects.")
    assert found.antecedent == "" and judge(found).reason == "unresolved_pronoun"
    # a noun that names no thing is no antecedent: "My favourite part was peaceful" says nothing
    (_text, found), *_ = read_reply(syntax, "What was your favourite part of it?", "It was so peaceful.")
    assert found.antecedent == "" and not judge(found).keep


def test_the_speakers_it_names_what_they_were_asked_about(syntax):
    (text, found), *_ = read_reply(syntax, "Have you ever tried pottery?", "Yes, I love it!")
    assert judge(found).keep and resolve(text, found) == "I love pottery!"
    (text, found), *_ = read_reply(syntax, "My sister tried pottery.", "I love it!")
    assert resolve(text, found) == "I love it!"  # the other speaker's own doing is not the speaker's
    (text, found), *_ = read_reply(syntax, "Looks like you had fun!", "It was a great day at the lake.")
    assert not judge(found).keep  # "fun" names no thing: not "Fun was a great day at the lake"


def test_a_pronoun_names_the_thing_the_speaker_just_did_something_to(syntax):
    found = read(syntax, "I really enjoy the upside-down poses. They make me feel free.")
    assert found[1][1].antecedent == "the upside-down poses" and judge(found[1][1]).keep
    found = read(syntax, 'I enjoyed "The Name of the Rose" by Umberto Eco. It is a mystery novel.')
    assert found[1][1].antecedent == '"The Name of the Rose"'  # a title is named whole
    found = read(syntax, "I bought a new bike. It is fast.")
    assert found[1][1].antecedent == "the new bike"  # "a" said as "the"
    # how it was, after the fact: a judgement, not a fact of theirs
    found = read(syntax, "I opened my studio. It was both stressful and great.")
    assert not judge(found[1][1]).keep, found[1]
    found = read(syntax, "I rode my bike to the coast. It was so worth it.")
    assert not judge(found[1][1]).keep, found[1]
    found = read(syntax, "I finished my quilt. It took me a while.")  # how long, not the quilt
    assert found[1][1].antecedent == "" and not judge(found[1][1]).keep
    found = read(syntax, "I finished my screenplay. It's been ages.")  # time gone by, not the screenplay
    assert found[1][1].antecedent == "" and not judge(found[1][1]).keep
    person = read(syntax, "I met a guy at the bar. He was rude.")  # a person is not the speaker's thing
    assert person[1][1].antecedent == "" and judge(person[1][1]).reason == "unresolved_pronoun"


def test_they_names_a_group_the_speaker_said_in_the_singular(syntax):
    found = read(syntax, "My family has been there for me. They've been my rock through all of it.")
    assert judge(found[1][1]).keep and resolve(*found[1]) == "My family have been my rock through all of it."
    found = read(syntax, "My band just signed with a label. They booked a tour of Japan.")
    assert found[1][1].antecedent.lower() == "my band"
    found = read(syntax, "My boss quit. They never liked the job.")  # one person, not a group
    assert found[1][1].antecedent == ""


def test_an_animal_the_speaker_took_in_is_theirs_to_describe(syntax):
    found = read(syntax, "Guess what, we adopted a cat! Her name is Pastel, she's a grey tabby.")
    (name, of_name), (tabby, of_tabby) = found[-2:]
    assert judge(of_name).keep and resolve(name, of_name) == "Our cat's name is Pastel"
    assert judge(of_tabby).keep and resolve(tabby, of_tabby) == "Our cat is a grey tabby."
    (text, found) = read(syntax, "I got a puppy! Her name's Coco and she's adorable.")[-1]
    assert resolve(text, found) == "My puppy's name is Coco and my puppy is adorable."  # "her" is hers too
    person = read(syntax, "I met a woman at the gym. Her name is Dana.")  # not the speaker's to tell
    assert judge(person[-1][1]).reason == "other"
    stray = read(syntax, "A stray cat sat on the wall. Her fur was grey.")  # nobody's cat
    assert judge(stray[-1][1]).reason == "other"
    (names, of_names) = read(syntax, "We adopted two cats last year. Their names are Luna and Max.")[-1]
    assert resolve(names, of_names).endswith("cats' names are Luna and Max.")


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        ("My son's name is Kyle.", True),
        ("Our dog's name is Luna.", True),
        ("My daughter's school is in Boston.", True),
        ("My friend's dog is a beagle.", False),  # a friend's, not the speaker's household
        ("My sister's husband is a doctor.", False),  # a person of theirs: someone else
        ("Your son's name is Kyle.", False),
        ("John's son's name is Kyle.", False),
    ],
)
def test_a_thing_of_the_speakers_family_or_pet_is_theirs_to_tell(syntax, content, kept):
    (_text, found) = read(syntax, content)[0]
    assert judge(found).keep is kept, found


def test_what_the_speaker_did_by_the_way_is_no_antecedent(syntax):
    # "mistakes" is what the speaker makes in a "when" clause, not who encourages them
    found = read(
        syntax, "They always support me, even when I make mistakes. Their encouragement keeps me going."
    )
    assert not judge(found[-1][1]).keep, found[-1]


def test_an_it_standing_for_the_clause_after_it_names_nothing(syntax):
    found = read(syntax, "My store opened in May. It was great to see the customers. It is huge.")
    assert found[1][1].antecedent == "" and judge(found[1][1]).reason == "unresolved_pronoun"
    assert found[2][1].antecedent == "My store"
    # "for me to ...", an infinitive hung off the adjective, the situation just told
    for content in (
        "I'm building my brand. It's important for me to think about life after basketball.",
        "I'm building my brand. It is so rewarding to see it grow.",
        "I worked hard to strengthen my body. It was a tough challenge.",
        # a gerund after it, and a participle as what "it" is, however the parser labels them
        "I joined a support group. It's been awesome seeing so many people coming together.",
        "My goal is to help veterans. It's empowering to know I can help make a difference.",
    ):
        _first, (_text, second) = read(syntax, content)
        assert second.antecedent == "" and not judge(second).keep, (content, second)
    _first, (_text, second) = read(
        syntax, "I practised basketball for hours. It was my way of dealing with stress."
    )
    assert second.antecedent == "basketball", second


def test_an_it_one_knows_or_means_is_a_thing_said(syntax):
    *_, (_text, found) = read(syntax, "I want to turn my dancing passion into a business. I just know it!")
    assert found.antecedent == "" and not judge(found).keep, found
