"""``serving.syntax`` with the real spaCy pipeline (the registry package the recall extra
installs) on sentences written for this test: each class of non-fact the fact pipeline must drop,
the speaker's facts it must keep, what is said plainly; what a pronoun names is in
``test_naming.py``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.engine.aboutness import judge, resolve
from tests.serving.reading import read, read_reply


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("Puppies are incredibly forgiving creatures.", "generic"),
        ("Gardening is a lovely way to unwind.", "clausal"),
        ("The mountain trails are perfect for hiking.", "generic"),
        ("Volunteering at a shelter can be so uplifting.", "clausal"),
        ("Coaching must be fulfilling.", "clausal"),
        ("Must be exciting to see the results of all that work.", "modal_guess"),
        ("You should write a book about your travels.", "addressee"),
        ("His dedication to the team is a big motivation for me.", "other"),
        ("That's so relaxing and calm, Priya.", "deictic"),
        ("Keep pushing and never stop learning.", "imperative"),
        ("Watching the sunrise over the lake.", "no_finite_verb"),
        ("Plus baking bread and going for long walks on weekends.", "no_finite_verb"),
        ("It made them appreciate the little things.", "unresolved_pronoun"),
        ("My brother wrote it.", "unresolved_object"),
        ("Made it in my pottery class last week.", "unresolved_object"),
        ("I helped her find a new place.", "unresolved_object"),
        ("I think it's great.", "unresolved_object"),
        ("I'm really proud of this.", "unresolved_object"),
        ("I went hiking with them on Sunday.", "unresolved_object"),
        ("I've been one for a year.", "unresolved_object"),  # one what?
        ("We're brainstorming some to help the community.", "unresolved_object"),
        ("I've been playing for about four months now.", "unresolved_object"),  # playing what?
        ("I practice every day.", "unresolved_object"),
        ("Last Friday at dance class with my friends I felt it.", "unresolved_object"),  # where, not what
        ("I went to school for it.", "unresolved_object"),
        ("I started when I was young.", "unresolved_object"),  # started what?
        ("Started when I was young and it's been great.", "unresolved_object"),  # the cut tail names nothing
        (
            "I chatted with my family and friends about it.",
            "unresolved_object",
        ),  # "about it": the chat's topic
        ("I started writing another one while I wait.", "unresolved_object"),
        ("I'm a much better cook because of it.", "unresolved_object"),  # a cause told before
        ("I feel like a new person thanks to it.", "unresolved_object"),
        ("When I'm feeling down.", "subordinate"),
        ("Because my mom is a nurse.", "subordinate"),
        ("Especially when I'm snacking dairy-free.", "subordinate"),
        # advice, even to oneself; a gerund subject the parser hangs off the verb; what is shown
        ("We should all volunteer more often.", "modal_guess"),
        ("Gotta stay focused on my goals.", "modal_guess"),
        ("I'd recommend starting with the first book.", "modal_guess"),
        ("I reccomend getting a plant for your desk.", "modal_guess"),
        # a "can" of picturing or relating reacts, whatever follows; so does an inverted ellipsis
        ("So does having supportive people around me.", "reaction"),
        ("Neither can my sister.", "reaction"),
        ("I can picture waking up to the sound of the waves.", "reaction"),
        ("I can totally relate to that feeling.", "reaction"),
        ("I could imagine living in a place like that.", "reaction"),
        ("Being out on the water, far from the city, was great.", "clausal"),
        ("Here's a picture of the lake.", "deictic"),
        ("The photo is from a forest near my hometown.", "deictic"),  # what a picture shows
        ("That pic was from our trip to the coast.", "deictic"),
        ("Those moments make me love football so much.", "deictic"),  # an empty noun pointed at
        # a thing acting on the speaker's mood says nothing lasting about them
        ("Nature has an effect on me.", "generic"),
        ("These shoes remind me of what I've achieved.", "generic"),
        ("My childhood reminds me of the good old times.", "generic"),
        ("My favourite part was peaceful and refreshing.", "generic"),  # a mood about nothing named
        ("My day was great.", "generic"),
        ("Yoga is so cool for showing us what we can do.", "generic"),  # "us" is everyone here
        # nothing of the speaker's to keep alone: a two-word clause, a past "since", a pointer
        ("He naps on my desk while I wait.", "unresolved_pronoun"),
        ("Mine is a big sweetheart.", "unresolved_pronoun"),  # the speaker's what?
        ("I'll bring mine next time.", "unresolved_object"),
        ("He was scared of it since I was a kid.", "unresolved_pronoun"),
        ("She loves it because it helps me.", "unresolved_pronoun"),
        ("I can imagine the first week was exhausting.", "reaction"),
        ("I can see why the quiet helps you focus.", "reaction"),
        ("Next Friday works.", "reaction"),  # an "I" left off never takes -s
        ("Works for me.", "reaction"),
        ("Gave me a real sense of peace.", "reaction"),  # an "I" left off is not what gave "me"
        # a maybe of the speaker's own, an answer to a question said before, an exclamation
        ("I might go camping with my family this summer.", "modal_guess"),
        ("I could play chess all day.", "modal_guess"),
        ("I may have found a new flat.", "modal_guess"),
        ("Maybe I'll start writing a drama myself.", "modal_guess"),
        ("I'd have to say The Empire Strikes Back.", "reaction"),
        ("I think I would have to say Moby Dick.", "reaction"),
        ("I still can't believe we sold so many tickets.", "reaction"),
        ("I submitted a few more last week.", "unresolved_object"),  # more of what?
        ("I made some more for the kids.", "unresolved_object"),
        ("I have three of my own.", "unresolved_object"),  # three what?
        ("I have two.", "unresolved_object"),
        ("I'm working on one with my writing group.", "unresolved_object"),
        ("I've been to a few in Europe.", "unresolved_object"),  # a few what?
        ("I haven't been to any in the US yet.", "unresolved_object"),
    ],
)
def test_non_facts_are_dropped_for_their_class(syntax, content, reason):
    (_text, found), *_ = read(syntax, content)
    assert judge(found).reason == reason


@pytest.mark.parametrize(
    "content",
    [
        "I work as a pharmacist in Leeds.",
        "My brother Tomas is a firefighter.",
        "One of my neighbours plays the cello.",
        "Our band rehearses on Thursdays.",
        "Signed up for a ceramics course last month.",
        "Been training for a triathlon since March.",
        "There's a community garden behind my flat.",
        # a pronoun the clause itself names, an idiom, a "when"
        "I love helping the community and making it a better place.",
        "I'm reading a novel about sailors and hoping it inspires me.",
        "I made it to the finals last year.",
        "After that, I moved to Porto.",
        "I can see the harbour from my kitchen.",
        "I can speak three languages.",
        "So I moved to Denver last spring.",
        "I can't imagine my mornings without coffee.",
        "I saw how the flooding changed my town.",
        # what a person, an animal or a group does to the speaker, what their job gives them
        "My family motivates me.",
        "My dog makes me laugh.",
        "My job gives me a lot of freedom.",
        "My favourite part was the view.",
        "My time in Paris was amazing.",
        "I play for a local team.",
        "I've been learning German since January.",
        # "not" makes a modal a stance; a hedge before a statement of the speaker's own
        "I couldn't live without my bike.",
        "I'd say my favourite city is Porto.",
        "I would have to say I'm a morning person.",
        "I wrote a few more poems for the magazine.",
        "I went to one of the best schools in the state.",
        "I've been to a few of the national parks.",
    ],
)
def test_the_speakers_facts_are_kept(syntax, content):
    (_text, found), *_ = read(syntax, content)
    assert judge(found).keep, found


def test_an_auxiliary_outside_the_clause_gives_it_no_tense(syntax):
    # parsed with "being" as the auxiliary of "going": the -ing list after the dash has no verb of its own
    content = "We love being outdoors - going for hikes, hanging out at the park, having picnics."
    (_text, first), (text, found) = read(syntax, content)
    assert judge(first).keep and text.startswith("going") and not judge(found).keep, found


def test_the_speakers_thing_acting_on_their_mood_is_dropped_when_named_by_a_pronoun(syntax):
    found = read(syntax, "I love my old shoes. They remind me of what I've achieved.")
    assert judge(found[-1][1]).reason == "generic", found[-1]


def test_a_verb_said_again_without_its_object_takes_the_one_said_before(syntax):
    found = read(syntax, "I'm learning to play the violin. I've been playing for four months.")
    text, syntax_ = found[-1]
    assert judge(syntax_).keep and resolve(text, syntax_) == "I've been playing the violin for four months."
    (text, syntax_), *_ = read_reply(syntax, "Do you play chess?", "Yes, I've been playing for years.")
    assert judge(syntax_).keep and "playing chess for years" in resolve(text, syntax_)


def test_a_name_said_before_is_taken_whole(syntax):
    (text, found), *_ = read_reply(
        syntax, "I've played Call of Duty a few times.", "I've been playing for years."
    )
    assert judge(found).keep and resolve(text, found) == "I've been playing Call of Duty for years."


def test_the_speaker_among_the_subjects_and_a_vocative_outside_the_clause(syntax):
    (_text, found), *_ = read(syntax, "Max and I had a blast on our camping trip.")
    assert found.subject == "speaker"
    (_text, found), *_ = read(syntax, "Hey Nate, my favorite treat is this chocolate raspberry tart.")
    assert found.subject == "owned" and judge(found).keep


def test_a_joined_clause_about_something_else_is_cut_off(syntax):
    (text, found), *_ = read(syntax, "I've been taking walks at the park and it's made a big impact.")
    assert judge(found).keep and resolve(text, found) == "I've been taking walks at the park"
    (text, found), *_ = read(syntax, "My grandma passed away and it's been hard.")
    assert resolve(text, found) == "My grandma passed away"
    (text, found), *_ = read(syntax, "I cook and my partner cleans.")  # the speaker's partner: kept
    assert resolve(text, found) == text
    (text, found), *_ = read(syntax, "We adopted a cat and she sleeps all day.")  # the cat is theirs
    assert resolve(text, found) == text
    # how the thing just named went is no fact of its own, however the parser splits the sentence
    (text, found), *_ = read(syntax, "I'm doing kickboxing and it's giving me so much energy.")
    assert resolve(text, found) == "I'm doing kickboxing"
    (text, found), *_ = read(syntax, "I tried a new recipe and it was a winner.")
    assert resolve(text, found) == "I tried a new recipe"


def test_a_name_said_to_the_other_speaker_at_the_end_goes(syntax):
    (text, found), *_ = read(syntax, "I've had some tough times with my business, Jon.")
    assert resolve(text, found) == "I've had some tough times with my business"
    (text, found), *_ = read(syntax, "I moved to a new city, Boston.")  # what the city is
    assert resolve(text, found) == text
    (text, found), *_ = read(syntax, "I love my brother, Jon.")
    assert resolve(text, found) == text


def test_a_pointing_determiner_is_said_plainly(syntax):
    (text, found), *_ = read(syntax, "I decorated this tree myself with a Harry Potter theme.")
    assert resolve(text, found) == "I decorated a tree myself with a Harry Potter theme."
    (text, found), *_ = read(syntax, "I love how these poses challenge my body.")
    assert resolve(text, found) == "I love how poses challenge my body."
    (text, found), *_ = read(syntax, "I bought that old guitar this week.")  # "this week" is a date
    assert resolve(text, found) == "I bought an old guitar this week."
    (text, found), *_ = read(syntax, "This necklace is special to me.")  # the subject is theirs
    assert resolve(text, found) == "My necklace is special to me."
    # one of a kind, or said with what makes it so: "the"; a mass noun takes "some"
    (text, found), *_ = read(syntax, "I'm joining a new team after this next tourney.")
    assert resolve(text, found) == "I'm joining a new team after the next tourney."
    (text, found), *_ = read(syntax, "I dropped off that stuff I baked at the shelter.")
    assert resolve(text, found) == "I dropped off the stuff I baked at the shelter."
    (text, found), *_ = read(syntax, "I gave away that stuff last week.")
    assert resolve(text, found) == "I gave away some stuff last week."
    # "that way" saying how, pointing back at what was just said, goes
    (text, found), *_ = read(syntax, "That way I can express myself through stories.")
    assert resolve(text, found) == "I can express myself through stories."


def test_the_kids_after_my_kids_are_the_speakers(syntax):
    found = read(syntax, "I took my kids to the zoo. The kids fed the goats. They loved it.")
    assert [s.subject for _t, s in found] == ["speaker", "owned", "pronoun"]
    assert found[2][1].antecedent == "my kids"


def test_the_fact_step_writes_the_pronoun_out_and_files_no_platitude():
    from memory.engine.schema import default_schema
    from serving.config import EngineConfig
    from serving.listener import build_listener
    from serving.protocol import ListenerJob

    ts = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turns = [
        {"role": "user", "content": "My cat Miso is three. She sleeps on my keyboard all day.", "ts": ts},
        {"role": "assistant", "content": "Ha, cats do that!", "ts": ts},
        {
            "role": "user",
            "content": "Cats are such independent creatures. I adopted her from a shelter.",
            "ts": ts,
        },
    ]
    schema = default_schema()
    job = ListenerJob(
        job_id="j1", subject_id="s1", base_version=0, schema_id=schema.id,
        schema_version=schema.version, tree={}, turns=turns,
    )  # fmt: skip
    result = build_listener(EngineConfig(kind="extractive")).run([job])[0]
    text = " ".join(op.value or "" for op in result.accepted)
    assert "Their cat Miso sleeps on their keyboard" in text
    assert "independent creatures" not in text


def test_a_thing_shown_that_the_speaker_made_is_said_as_made(syntax):
    content = "Here are some lemon tarts that I baked for the fair."
    (text, found), *_ = read(syntax, content)
    assert judge(found).keep
    assert resolve(text, found) == "I baked some lemon tarts for the fair."
    # a picture of it: what the picture shows is what they made
    (text, found), *_ = read(syntax, "Here's a photo of my quilt I made last winter.")
    assert judge(found).keep and resolve(text, found) == "I made my quilt last winter.", found


def test_a_clause_is_judged_by_its_own_subject_not_one_a_dash_left_behind(syntax):
    (_first, _), (text, found) = read(
        syntax, "Crowds of people cheering - it really pushed me to keep running."
    )
    assert text.startswith("it really pushed") and judge(found).reason == "unresolved_pronoun"


@pytest.mark.parametrize(
    ("content", "fact"),
    [
        # a clause that is no fact keeps the speaker's own fact inside it
        ("He naps on my desk while I work from home on Mondays.", "I work from home on Mondays"),
        ("I'll try it out with my sister Noor on Sunday.", "My sister is Noor"),
        ("It seems all the late nights paid off now that I'm a head chef.", "I'm a head chef"),
        ("Oscar, my guinea pig.", "My guinea pig is Oscar"),  # the name before the noun
        ("Since I lost my job at the bakery, things have been tough.", "I lost my job at the bakery"),
        ("Things have been hard since my dad passed away.", "My dad passed away"),
        ("It's been rough, especially after I failed my driving test.", "I failed my driving test"),
    ],
)
def test_the_speakers_fact_inside_a_dropped_clause_is_kept_alone(syntax, content, fact):
    (text, found), *_ = read(syntax, content)
    assert judge(found).keep
    assert resolve(text, found).rstrip(".") == fact


def test_an_answer_that_leaves_off_im_is_the_speakers(syntax):
    (text, found), *_ = read_reply(
        syntax, "What are your plans for the summer?", "Researching adoption agencies."
    )
    assert found.subject == "elided" and judge(found).keep, found
    (_text, found), *_ = read_reply(syntax, "What's new?", "Loving it!")
    assert not judge(found).keep  # two words: a reaction
    # unasked, an -ing fragment may describe a picture
    (_text, found), *_ = read_reply(syntax, "Nice pic!", "Watching the sunrise over the lake.")
    assert judge(found).reason == "no_finite_verb"
    # after a sentence of the turn, a fragment goes on with it: no answer to the question
    read = read_reply(
        syntax,
        "How's boot camp?",
        "We've been supporting each other - cheering each other on during workouts.",
    )
    assert judge(read[-1][1]).reason == "no_finite_verb", read


@pytest.mark.parametrize(
    ("content", "concrete"),
    [
        ("I play clarinet!", True),
        ("I applied to adoption agencies.", True),
        ("I'm a nurse at the children's hospital.", True),
        ("Contacted my mentor for adoption advice.", True),
        ("I'm grateful for my supportive friends.", False),  # a state
        ("I feel proud of my kids.", False),  # a feeling
        ("I had a blast.", False),  # a noun that names no thing
        ("I'm feeling good and ready to give it my best.", False),
    ],
)
def test_a_clause_is_concrete_when_its_verb_does_something_to_a_thing(syntax, content, concrete):
    (_text, found), *_ = read(syntax, content)
    assert found.concrete is concrete, found


@pytest.mark.parametrize(
    "content",
    ["Pizza is my favourite food.", "Spider-Man has always been a favourite of mine.", "Ana is my sister."],
)
def test_what_a_thing_is_to_the_speaker_is_theirs(syntax, content):
    (_text, found), *_ = read(syntax, content)
    assert found.subject == "owned" and found.mine and judge(found).keep, found


def test_a_favourite_part_of_a_day_is_not_the_persons(syntax):
    (_text, found), *_ = read(syntax, "The sunset was my favourite part.")
    assert not found.mine


@pytest.mark.parametrize(
    ("content", "liked"),
    [
        ("I love fishing.", True),
        ("I love to cook too.", True),
        ("I've always loved dogs.", True),
        ("I like Star Wars.", True),
        ("I enjoy reading mystery novels.", True),
        # a reaction to one thing, not a liking of a kind of thing
        ("I loved the movie.", False),
        ("I love your idea.", False),
        ("I love the yellow leaves.", False),
        ("I love their fragrance.", False),
        ("I'd love to go.", False),
        ("I love to hear that.", False),
    ],
)
def test_a_present_liking_of_a_kind_of_thing_is_a_lasting_fact(syntax, content, liked):
    (_text, found), *_ = read(syntax, content)
    assert found.liked is liked, found
    if liked:
        assert found.concrete and judge(found).keep, found


def test_each_turn_of_a_batch_is_parsed_once_and_read_as_when_alone(syntax, monkeypatch):
    own = "Here are my turtles soaking up the sun."
    other = "Aww, they're so cute! What do they eat?"
    reply = "They eat lettuce and insects."
    alone = syntax.analyse([(reply, [(0, len(reply))], other, own)])[0]
    parsed: list[str] = []
    pipe = syntax.nlp.pipe
    monkeypatch.setattr(syntax.nlp, "pipe", lambda texts: pipe(parsed.extend(texts) or texts))
    # the speaker's turn is a request of its own and the context of the reply
    batch = syntax.analyse([(own, [(0, len(own))], ""), (reply, [(0, len(reply))], other, own)])
    assert sorted(parsed) == sorted([own, other, reply])
    assert batch[1] == alone and batch[1][0].antecedent == "my turtles"


@pytest.mark.parametrize(
    ("before", "content", "said"),
    [
        ("What's your favorite video game?", "My favorite is probably Tetris.", "My favorite video game is"),
        ("Do you have any favorite bands?", "My favourite is AC/DC.", "My favourite band is"),
        ("What's your favorite TV show?", "My favorite is The Office.", "My favorite show is"),  # no new name
        ("Pizza is my favorite food.", "My favorite is pasta.", "My favorite is"),  # nothing asked
        ("What are your favorite foods?", "My favorites are donuts.", "My favorites are"),
    ],
)
def test_favourite_what_is_what_the_other_speaker_asked(syntax, before, content, said):
    (text, found), *_ = read_reply(syntax, before, content)
    assert resolve(text, found).startswith(said) and judge(found).keep
