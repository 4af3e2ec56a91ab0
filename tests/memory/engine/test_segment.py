"""segment(): chat turns cut into clauses with exact source spans (invented chat lines)."""

from __future__ import annotations

import re

import pytest

from memory.engine.segment import Clause, segment, strip_emoji

NAMES = ("Priya", "Tomasz")


def texts(content: str, names: tuple[str, ...] = NAMES) -> list[str]:
    return [c.text for c in segment(content, names=names)]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # greetings, thanks, farewells and evaluative sentences go entirely
        ("Hey Priya! Good to see you!", []),
        ("Thanks!", []),
        ("Bye!", []),
        ("ttyl", []),
        ("That's so cool!", []),
        ("Awesome!", []),
        ("Take care, Tomasz. Talk to you soon!", []),
        ("How have you been?", []),
        # openers and vocatives are stripped, the statement survives
        ("Wow, I just adopted a beagle.", ["I just adopted a beagle."]),
        ("Oh nice, I start at the bakery on Monday.", ["I start at the bakery on Monday."]),
        ("Great, I'll bring my guitar.", ["I'll bring my guitar."]),
        ("Tomasz, I finally finished my thesis!", ["I finally finished my thesis!"]),
        ("Hey Tom! I moved to Leeds last month.", ["I moved to Leeds last month."]),
        ("I got the job, Priya!", ["I got the job"]),
        ("Thanks, Tomasz! I signed up for the marathon.", ["I signed up for the marathon."]),
        ("Yeah Priya, my sister lives in Oslo.", ["my sister lives in Oslo."]),
        ("Hey Sam! My knee is finally better.", ["My knee is finally better."]),
        # tag questions go, the statement stays and is no longer a question
        ("I built the treehouse myself - pretty cool, huh?", ["I built the treehouse myself"]),
        ("My brother is a pilot, right?", ["My brother is a pilot"]),
        ("I hate mornings, you know?", ["I hate mornings"]),
        # clause breaks
        ("I lost my job, so I'm starting a bakery.", ["I lost my job", "I'm starting a bakery."]),
        (
            "I love painting; my favourite is watercolour.",
            ["I love painting", "my favourite is watercolour."],
        ),
        ("I teach yoga - I've done it for six years.", ["I teach yoga", "I've done it for six years."]),
        (
            "I wanted to go hiking, but my ankle still hurts.",
            ["I wanted to go hiking", "my ankle still hurts."],
        ),
        (
            "My parents visited, and I cooked dinner for everyone.",
            ["My parents visited", "I cooked dinner for everyone."],
        ),
        ("I sold my car, because I bike everywhere now.", ["I sold my car", "I bike everywhere now."]),
        # two statements joined by a bare "and I"; a pair as the subject stays whole
        (
            "I'm from a small town and I want to move to the city.",
            ["I'm from a small town", "I want to move to the city."],
        ),
        ("My husband and I went hiking.", ["My husband and I went hiking."]),
        # a name given after a comma is a fact of its own
        (
            "We adopted a cat last week, her name is Pastel!",
            ["We adopted a cat last week", "her name is Pastel!"],
        ),
        ("He and I have been friends for years.", ["He and I have been friends for years."]),
        ("I think my dad and I are close.", ["I think my dad and I are close."]),
        # a piece too short to stand alone stays attached, unless it is only small talk
        ("I ran a 10k, so worth it!", ["I ran a 10k, so worth it!"]),
        ("I ran a 10k, so fun!", ["I ran a 10k"]),
        # a comma splice before a subject pronoun starts a clause of its own
        (
            "We all made our own pots, it was fun and therapeutic!",
            ["We all made our own pots", "it was fun and therapeutic!"],
        ),
        ("Just started doing aerial yoga, it's great.", ["Just started doing aerial yoga"]),
        # two first-person statements spliced by a comma are two clauses; a subordinate one is not
        (
            "I run every morning, I've been training for a half marathon.",
            ["I run every morning", "I've been training for a half marathon."],
        ),
        ("She moved away, I stayed in Leeds.", ["She moved away", "I stayed in Leeds."]),
        ("When I was young, I played piano.", ["When I was young, I played piano."]),
        ("If we win, we'll celebrate in Rome.", ["If we win, we'll celebrate in Rome."]),
        ("After the game, I went home.", ["After the game, I went home."]),
        # an evaluation before the statement goes
        ("Good thing I run every morning.", ["I run every morning."]),
        ("Lucky for me, I found a flat near work.", ["I found a flat near work."]),
        ("Guess what - I got a puppy two weeks ago!", ["I got a puppy two weeks ago!"]),
        ("Bad news: my ankle is sprained.", ["my ankle is sprained."]),
        ("Good news, I passed the bar exam!", ["I passed the bar exam!"]),
        # what someone else says of it goes alone
        (
            "My back has been aching, the doctor says it's a strain.",
            ["My back has been aching", "the doctor says it's a strain."],
        ),
        ("I moved in June, the month my son was born.", ["I moved in June, the month my son was born."]),
        # questions are kept and recognisable
        (
            "I just got back from Kyoto - have you ever been?",
            ["I just got back from Kyoto", "have you ever been?"],
        ),
        ("I play the cello, how about you?", ["I play the cello", "how about you?"]),
        ("Did you watch the game, Priya?", ["Did you watch the game?"]),
        # emoji and emoticons
        ("I got a puppy 🐶😍", ["I got a puppy"]),
        ("My cat knocked over the plant :) lol", ["My cat knocked over the plant lol"]),
        ("😂😂", []),
        # dates and adverbs at the start are not vocatives
        ("Yesterday, I went to the dentist.", ["Yesterday, I went to the dentist."]),
        ("Sadly, my grandpa passed away.", ["Sadly, my grandpa passed away."]),
        ("Monday, I have a job interview.", ["Monday, I have a job interview."]),
        # an unknown capitalised word is a vocative only before the start of a sentence
        ("Larry, I finally bought a kayak.", ["I finally bought a kayak."]),
        (
            "Shawarma, falafel and hummus are my favourites.",
            ["Shawarma, falafel and hummus are my favourites."],
        ),
        ("Together, we built a shed.", ["Together, we built a shed."]),
        ("Yum, I baked banana bread.", ["I baked banana bread."]),
        # a dash before "a"/"an" names what was just said: one clause; before anything else, two
        (
            "I'm working on a new project - a thriller set in a small Ohio town.",
            ["I'm working on a new project - a thriller set in a small Ohio town."],
        ),
        ("I ran my first 10k\u2014 a new record for me!", ["I ran my first 10k\u2014 a new record for me!"]),
        ("I adopted a cat - my landlord said yes.", ["I adopted a cat", "my landlord said yes."]),
        # "I'm married" is a clause of its own, however short
        ("I'm a vegetarian, and I'm married.", ["I'm a vegetarian", "I'm married."]),
        # abbreviations and decimals do not end a sentence
        (
            "I saw Dr. Patel about my back. It's 3.5 cm off.",
            ["I saw Dr. Patel about my back.", "It's 3.5 cm off."],
        ),
    ],
)
def test_segment_clauses(content: str, expected: list[str]) -> None:
    assert texts(content) == expected


def test_a_name_with_my_x_after_it_is_who_it_is_not_a_vocative() -> None:
    assert [c.text for c in segment("Luna, my cat, sleeps all day.")] == ["Luna, my cat, sleeps all day."]
    assert [c.text for c in segment("Oscar, my guinea pig.")] == ["Oscar, my guinea pig."]
    assert [c.text for c in segment("Larry, I got the job!")] == ["I got the job!"]


def test_trailing_name_only_when_known() -> None:
    # "France" is not a speaker: an appositive place stays
    assert texts("I live in Lyon, France.") == ["I live in Lyon, France."]
    assert texts("I live in Lyon, Priya.") == ["I live in Lyon"]


def test_name_prefix_counts_as_vocative() -> None:
    assert texts("Wow, Mel, I got engaged!", ("Melanie",)) == ["I got engaged!"]


@pytest.mark.parametrize(
    "content",
    [
        "Hey Priya! Wow, I just adopted a beagle 🐶 - pretty cool, huh? Thanks, Tomasz!",
        "I lost my job, so I'm starting a bakery; my partner thinks it's brave.\nAnyway, how about you?",
        "  Yeah,   I teach   yoga -- I've done it for six years!!  ",
        "Oh, and my daughter turned 5 last week, Priya.",
    ],
)
def test_spans_are_exact(content: str) -> None:
    clauses = segment(content, turn=3, names=NAMES)
    assert clauses
    for c in clauses:
        assert isinstance(c, Clause)
        assert c.turn == 3
        assert 0 <= c.start < c.end <= len(content)
        source = content[c.start : c.end]
        for word in re.findall(r"\w+", c.text):
            assert word in source
        assert source.strip() == source
        assert source in content and " ".join(source.split()) in c.sentence or c.text in c.sentence


def test_sentence_is_the_whole_source_sentence() -> None:
    (first, second) = segment("I lost my job, so I'm starting a bakery. Wish me luck.")[:2]
    assert first.sentence == second.sentence == "I lost my job, so I'm starting a bakery."
    assert first.start < first.end <= second.start


def test_small_talk_pieces_are_dropped_and_emoji_stripped() -> None:
    assert segment("Good to see you!") == []
    assert segment("Thanks so much, Priya!", names=NAMES) == []
    assert [c.text for c in segment("I love my new job")] == ["I love my new job"]
    # an exclamation after a dash is the speaker's reaction, not part of the fact
    assert [c.text for c in segment("I had a crazy game - crazy intense!")] == ["I had a crazy game"]
    assert strip_emoji("Nice 😀 day :-) <3") == "Nice day"
    assert strip_emoji("see https://x.org/a:b") == "see https://x.org/a:b"


def test_a_clause_not_in_english_is_dropped() -> None:
    turn = "Me encanta pasar tiempo con mi familia y la playa. I love the beach in Rio de Janeiro."
    assert [c.text for c in segment(turn)] == ["I love the beach in Rio de Janeiro."]
    # names and chat words do not make English foreign
    kept = "I love George Strait, Dolly Parton and Johnny Cash. Gonna grab some boba lol."
    assert len(segment(kept)) == 2


def test_an_emoji_before_a_capital_ends_a_sentence() -> None:
    said = "So happy for you! Inspiring 💪 I emailed some wholesalers today."
    assert [c.text for c in segment(said)][-1] == "I emailed some wholesalers today."
    assert [c.text for c in segment("I love it 😊 and my kids do too.")] == ["I love it and my kids do too."]


def test_a_quotation_is_never_cut_and_keeps_its_marks() -> None:
    quote = (
        'There\'s a line by J.K. Rowling I like: "Turn on the light - hope hides in the dark." It helps me.'
    )
    assert texts(quote) == [
        'There\'s a line by J.K. Rowling I like: "Turn on the light - hope hides in the dark."',
        "It helps me.",
    ]
    assert texts('I watched "Little Women" - it made me cry') == [
        'I watched "Little Women"',
        "it made me cry",
    ]
    assert texts('"Up" is my favourite film.') == ['"Up" is my favourite film.']
