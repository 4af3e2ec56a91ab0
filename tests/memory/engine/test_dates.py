"""Relative time expressions become absolute dates (memory.engine.dates), with fixed timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.engine.dates import DatePhrase, date_phrases, grounding_dates, with_dates

MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # LoCoMo style: "1:56 pm on 8 May, 2023"
SATURDAY = datetime(2023, 7, 15, 10, 0, tzinfo=UTC)
SUNDAY = datetime(2023, 7, 16, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("fact", "expected"),
    [
        ("Went to a support group yesterday", "Went to a support group (7 May 2023)"),
        ("Cooked dinner today", "Cooked dinner (8 May 2023)"),
        ("Is cooking for friends tonight", "Is cooking for friends (8 May 2023)"),
        ("Ran 5 km this morning", "Ran 5 km (8 May 2023)"),
        ("Had a blast last night", "Had a blast (7 May 2023)"),
        ("Will see her tomorrow", "Will see her (9 May 2023)"),
        ("Did it the day before yesterday", "Did it (6 May 2023)"),
        ("Adopted a cat 3 days ago", "Adopted a cat (5 May 2023)"),
        ("Adopted a cat three days ago", "Adopted a cat (5 May 2023)"),
        ("Ran a charity race last Saturday", "Ran a charity race (6 May 2023)"),
        ("Adopted a cat on last Friday", "Adopted a cat (5 May 2023)"),
        ("Was there this past Friday", "Was there (5 May 2023)"),
        ("Has an interview next Friday", "Has an interview (12 May 2023)"),
        ("Gave a talk last week", "Gave a talk (week before 8 May 2023)"),
        ("Started a class two weeks ago", "Started a class (two weeks before 8 May 2023)"),
        ("Is busy this week", "Is busy (week of 8 May 2023)"),
        ("Moves next week", "Moves (week of 15 May 2023)"),
        ("Went camping last weekend", "Went camping (weekend before 8 May 2023)"),
        ("Camped two weekends ago", "Camped (two weekends before 8 May 2023)"),
        ("Quit her job last month", "Quit her job (April 2023)"),
        ("Is going camping next month", "Is going camping (June 2023)"),
        ("Visited Paris last May", "Visited Paris (May 2022)"),
        ("Is moving next May", "Is moving (May 2024)"),
        ("Will travel this summer", "Will travel (summer 2023)"),
        ("Went to Spain last summer", "Went to Spain (summer 2022)"),
        ("Painted a sunrise last year", "Painted a sunrise (2022)"),
        ("Moved here two years ago", "Moved here (2021)"),
        ("Turned 18 ten years ago", "Turned 18 (2013)"),
        ("Started running a year ago", "Started running (2022)"),
        ("Started running about a year ago", "Started running (2022)"),  # the hedge goes with it
        ("Quit smoking around three weeks ago", "Quit smoking (three weeks before 8 May 2023)"),
        # how many is not said, when it was said is: a reader a year on must not count from today
        ("Moved here a few years ago", "Moved here (a few years before 2023)"),
        ("Took up yoga a couple of months ago", "Took up yoga (a couple of months before May 2023)"),
        ("Adopted a cat several weeks ago", "Adopted a cat (several weeks before 8 May 2023)"),
        ("Two years ago she started painting", "She started painting (2021)"),  # the fact comes first
        ("Yesterday, they joined a choir", "They joined a choir (7 May 2023)"),
        # a date before a short tail with no clause of its own goes after it; before a clause it stays
        ("Took a short trip last week to Rome", "Took a short trip to Rome (week before 8 May 2023)"),
        (
            "Started the gym last week to stay on track",
            "Started the gym to stay on track (week before 8 May 2023)",
        ),
        ("Went hiking last week and got lost", "Went hiking (week before 8 May 2023) and got lost"),
        ("Fell ill last year when they lived abroad", "Fell ill (2022) when they lived abroad"),
        # what would be gets no date, and loses its "today"; a plan that depends on nothing keeps it
        ("Would get two turtles today if they could", "Would get two turtles if they could"),
        ("If they had time, they'd go hiking tomorrow", "If they had time, they'd go hiking"),
        ("Will go hiking tomorrow if it's sunny", "Will go hiking (9 May 2023) if it's sunny"),
    ],
)
def test_relative_phrase_becomes_a_dated_one(fact: str, expected: str) -> None:
    assert with_dates(fact, MONDAY) == expected


@pytest.mark.parametrize(
    "fact",
    [
        "Started painting in 2019",  # already absolute
        "Was born on 3 May 1990",
        "Met him the other day",  # vague
        "Was single until recently",  # not when something happened
        "Moved here a while ago",
        "Moved here years ago",
        "Her last year of college was hard",  # an ordinal, not a date
        "Ran every day in the last week",  # a duration
        "Loved this year's festival",
        "Hikes on Saturdays",  # a habit
        "May go to the gym",  # "may" the verb
        "Is a weekend person",
    ],
)
def test_absolute_vague_and_non_date_phrases_are_left_alone(fact: str) -> None:
    assert with_dates(fact, MONDAY) == fact
    assert grounding_dates(fact, MONDAY) == []


def test_a_bare_weekday_follows_the_tense() -> None:
    assert with_dates("Went to the beach on Saturday", MONDAY) == "Went to the beach (6 May 2023)"
    assert with_dates("Is going to a concert on Saturday", MONDAY) == "Is going to a concert (13 May 2023)"
    assert with_dates("Will call her on Monday", MONDAY) == "Will call her (15 May 2023)"  # not today
    # No tense cue: the fact keeps its weekday, though either reading would be grounded.
    assert with_dates("Goes hiking on Saturday", MONDAY) == "Goes hiking on Saturday"
    assert grounding_dates("Goes hiking on Saturday", MONDAY) == ["6 May 2023", "13 May 2023"]
    # A rewrite that lost the tense cue can borrow it from its source sentence.
    assert with_dates("Beach on Saturday", MONDAY, context="I went to the beach on Saturday") == (
        "Beach (6 May 2023)"
    )


def test_weekends_relative_to_the_day_said() -> None:
    assert with_dates("Went hiking this weekend", MONDAY) == "Went hiking (weekend before 8 May 2023)"
    assert with_dates("Is going hiking this weekend", MONDAY) == "Is going hiking (weekend of 13 May 2023)"
    assert with_dates("Is hiking this weekend", SATURDAY) == "Is hiking (weekend of 15 July 2023)"
    assert with_dates("Hiked last weekend", SUNDAY) == "Hiked (weekend of 8 July 2023)"
    assert with_dates("Will hike next weekend", SATURDAY) == "Will hike (weekend of 22 July 2023)"


def test_in_so_many_days_of_something_to_come() -> None:
    assert (
        with_dates("Is organizing a party in two weeks", MONDAY)
        == "Is organizing a party (week of 22 May 2023)"
    )
    assert with_dates("Will move in a month", MONDAY) == "Will move (June 2023)"
    assert with_dates("Will visit in 3 days", MONDAY) == "Will visit (11 May 2023)"
    assert (
        with_dates("Is going camping in two weekends", MONDAY) == "Is going camping (weekend of 20 May 2023)"
    )
    assert "11 May 2023" in grounding_dates("I'll visit my mom in 3 days", MONDAY)
    # in the past or said of no time, it is how long something took
    assert with_dates("Lost 5 pounds in a week", MONDAY) == "Lost 5 pounds in a week"
    assert with_dates("Runs 20 miles in a week", MONDAY) == "Runs 20 miles in a week"


def test_recently_is_anchored_to_the_day_it_was_said() -> None:
    assert with_dates("Saw her recently", MONDAY) == "Saw her (by 8 May 2023)"
    assert with_dates("Has been running a lot lately", MONDAY) == "Has been running a lot (as of 8 May 2023)"
    assert with_dates("Is training hard lately", MONDAY) == "Is training hard (as of 8 May 2023)"
    # the fact may lose the tense of its sentence: both readings ground it
    assert grounding_dates("I saw her recently", MONDAY) == ["by 8 May 2023", "as of 8 May 2023"]
    assert with_dates("Is the most recently hired", MONDAY) == "Is the most recently hired"


def test_a_few_days_ago_gives_its_week() -> None:
    assert with_dates("Saw her a few days ago", MONDAY) == "Saw her (week of 1 May 2023)"
    assert with_dates("Saw her a couple of days ago", SATURDAY) == "Saw her (week of 10 July 2023)"


def test_last_weekday_said_on_that_weekday_is_a_week_back() -> None:
    friday = datetime(2023, 5, 12, 9, 0, tzinfo=UTC)
    assert with_dates("Adopted a cat last Friday", friday) == "Adopted a cat (5 May 2023)"
    assert with_dates("Adopted a cat last Friday", SATURDAY) == "Adopted a cat (14 July 2023)"


def test_seasons_around_the_year() -> None:
    spring = datetime(2023, 4, 2, tzinfo=UTC)
    assert with_dates("Will travel this summer", spring) == "Will travel (summer 2023)"
    assert with_dates("Travelled last summer", spring) == "Travelled (summer 2022)"
    january = datetime(2023, 1, 20, tzinfo=UTC)
    assert with_dates("Skied this winter", january) == "Skied (winter 2022)"  # named by its December
    assert with_dates("Skied last winter", january) == "Skied (winter 2021)"
    assert with_dates("Visited in autumn last year", january) == "Visited in autumn (2022)"


def test_year_boundaries() -> None:
    new_year = datetime(2023, 1, 2, 8, 0, tzinfo=UTC)
    assert with_dates("Went skiing last week", new_year) == "Went skiing (week before 2 January 2023)"
    assert with_dates("Quit last month", new_year) == "Quit (December 2022)"
    assert with_dates("Met him yesterday", new_year) == "Met him (1 January 2023)"


def test_the_message_date_is_read_in_its_own_offset() -> None:
    late = datetime(2023, 5, 8, 23, 30, tzinfo=timezone(timedelta(hours=-5)))  # 9 May in UTC
    assert with_dates("Met him yesterday", late) == "Met him (7 May 2023)"
    assert with_dates("Met him yesterday", datetime(2023, 5, 8, 9, 0)) == "Met him (7 May 2023)"  # naive


def test_abbreviated_weekdays_later_this_and_an_idiom() -> None:
    assert with_dates("Took the kids to a pottery workshop last Fri", MONDAY) == (
        "Took the kids to a pottery workshop (5 May 2023)"
    )
    assert (
        with_dates("Joined an activist group last Tues.", MONDAY) == "Joined an activist group (2 May 2023)."
    )
    assert with_dates("Plans a fundraiser later this month", MONDAY) == "Plans a fundraiser (May 2023)"
    assert (
        with_dates("Feels like just yesterday she wore it", MONDAY) == "Feels like just yesterday she wore it"
    )


def test_several_phrases_and_case() -> None:
    fact = "Moved in LAST YEAR and started a job yesterday"
    assert with_dates(fact, MONDAY) == "Moved in (2022) and started a job (7 May 2023)"


@pytest.mark.parametrize(
    ("fact", "expected"),
    [
        ("Their season opener is next week", "Their season opener is in the week of 15 May 2023"),
        ("Their birthday is tomorrow", "Their birthday is on 9 May 2023"),
        ("The wedding was last month", "The wedding was in April 2023"),
        ("The move was last week", "The move was the week before 8 May 2023"),
        ("The party was two weeks ago", "The party was two weeks before 8 May 2023"),
        ("The recital's next weekend", "The recital's on the weekend of 13 May 2023"),
        ("Is busy next week", "Is busy (week of 15 May 2023)"),
    ],
)
def test_a_date_said_after_is_is_written_into_the_sentence(fact: str, expected: str) -> None:
    # "... is (week of 15 May 2023)" would leave "is" without its complement
    assert with_dates(fact, MONDAY) == expected


def test_a_day_of_the_month_follows_the_tense_or_is_the_nearest() -> None:
    said = datetime(2023, 8, 21, 10, 0, tzinfo=UTC)
    assert with_dates("Met their team on the 15th", said) == "Met their team (15 August 2023)"
    assert with_dates("Celebrated on the 31st", said) == "Celebrated (31 July 2023)"
    assert with_dates("Will see them on the 2nd", said) == "Will see them (2 September 2023)"
    assert with_dates("Their recital is on the 30th", said) == "Their recital is on 30 August 2023"
    assert with_dates("Lives on the 5th floor", said) == "Lives on the 5th floor"
    assert with_dates("Went there on the 15th of May", said) == "Went there on the 15th of May"
    assert set(grounding_dates("Met them on the 15th", said)) == {"15 August 2023", "15 September 2023"}


def test_date_phrases_give_exact_spans() -> None:
    text = "I went to a support group yesterday, and on Saturday I ran."
    phrases = date_phrases(text, MONDAY)
    assert phrases == [
        DatePhrase(26, 35, "yesterday", "7 May 2023"),
        DatePhrase(41, 52, "on Saturday", "6 May 2023"),
    ]
    assert all(text[p.start : p.end] == p.phrase for p in phrases)


def test_without_a_timestamp_nothing_changes() -> None:
    assert with_dates("Went to a support group yesterday", None) == "Went to a support group yesterday"
    assert grounding_dates("Went to a support group yesterday", None) == []
    assert with_dates("", MONDAY) == ""
    assert date_phrases("", MONDAY) == []


def test_grounding_dates_are_what_with_dates_can_insert() -> None:
    text = "I went to a support group yesterday and I'm moving next month"
    assert grounding_dates(text, MONDAY) == ["7 May 2023", "June 2023"]
    # Every date with_dates inserts into a rewrite of the text is among the text's grounding dates.
    for fact in ("Went to a support group yesterday", "Is moving next month"):
        inserted = with_dates(fact, MONDAY)
        assert any(f"({d})" in inserted for d in grounding_dates(text, MONDAY))
    # A tense-dependent weekday is grounded both ways: the rewrite may have lost the cue.
    assert grounding_dates("Saturday plans: on Saturday I went out", MONDAY) == ["6 May 2023", "13 May 2023"]
    assert grounding_dates("Nothing dated here", MONDAY) == []


def test_a_wish_later_in_the_sentence_leaves_the_event_dated() -> None:
    sentence = "I went to the zoo yesterday, and I would go again if I could"
    assert with_dates("Went to the zoo yesterday", MONDAY, context=sentence) == "Went to the zoo (7 May 2023)"
