"""Step 5 of the listener pipeline: relative time expressions become absolute dates.

A fact such as "Went to a support group yesterday", said in a message stamped 8 May 2023, is
stored as "Went to a support group (7 May 2023)": the phrase is replaced by the date it names,
at the granularity the phrase has. Before a few words with no clause of their own the date goes
after them ("Took a short trip to Rome (week before 8 May 2023)"); before a clause it stays.

- **day** phrases: "yesterday", "today", "tonight", "this morning", "last night", "tomorrow",
  "the day before yesterday", "3 days ago", "last Friday" (or "last Fri"), "next Friday", "this Friday",
  "on Saturday" -> ``"(7 May 2023)"``; "just" before an event verb ("just moved", "just got") is
  the day it was said. A bare weekday ("on Saturday", "this Saturday") needs a
  tense: past ("went", "was", "-ed") -> the previous one, future ("will", "going to", "'m
  ...ing") -> the next one; with no tense cue it is left alone.
- **week** phrases: "this week", "next week" -> ``"(week of 8 May 2023)"`` (the Monday); a past
  week is counted back from the day it was said: "last week" -> ``"(week before 8 May 2023)"``,
  "two weeks ago" -> ``"(two weeks before 8 May 2023)"`` (LoCoMo's answers write them so, and
  a computed Monday would claim more than "last week" says); the approximate "a few days ago" /
  "a couple of days ago" give the week they fall in (a day would be invented precision).
- **vague counts** are counted back from when they were said: "a few weeks ago" ->
  ``"(a few weeks before 8 May 2023)"``, "a couple of months ago" -> ``"(a couple of months before
  May 2023)"``, "several years ago" -> ``"(several years before 2023)"``.
- **weekend** phrases: "this weekend", "next weekend" -> ``"(weekend of 13 May 2023)"`` (the
  Saturday); a past one is counted back like a week: "last weekend" (or "this weekend" in the past
  tense) -> ``"(weekend before 8 May 2023)"``, "two weekends ago" -> ``"(two weekends before 8
  May 2023)"``; said on a weekend, "last weekend" is the one before it, ``"(weekend of 8 July
  2023)"``.
- **month** phrases: "last month", "later this month", "next month", "3 months ago", "last May" ->
  ``"(April 2023)"``.
- **season** phrases: "this summer", "last winter" -> ``"(summer 2023)"`` (northern seasons;
  a winter is named by the year of its December).
- **ahead**: "in 3 days", "in two weeks", "in two weekends", "in a month", "in a year" of something
  to come (a future tense) -> the day, ``"(week of 22 May 2023)"``, the weekend, the month, the
  year; in a past or timeless sentence it is how long something took ("lost 5 pounds in a week").
- **year** phrases: "last year", "this year", "next year", "two years ago", "a year ago" ->
  ``"(2021)"``.

- **recent** phrases: "recently", "lately" -> ``"(by 8 May 2023)"`` in a past sentence,
  ``"(as of 8 May 2023)"`` otherwise and with "has been" ("Has been running a lot lately"): how
  long before is not said, but a reader a year on must not take it for the week they read it in.

Already absolute expressions ("in 2019", "on 3 May") and vague ones ("the other day", "a while
ago", "years ago") are left alone, as are durations, ordinals and idioms ("the last
week", "last year of college", "this year's festival", "feels like just yesterday").

Phrases are found with this module's own regular expression; each one is resolved by
``dateparser`` (``RELATIVE_BASE`` = the message's date, ``PREFER_DATES_FROM="past"``; forward
phrases such as "next month" resolve forward) when it is an offset dateparser knows, by date
arithmetic otherwise (bare weekdays, weekends, seasons, month names). Resolutions are cached per
(phrase, date), so a conversation pays dateparser's cost (about 1.5 ms) once per phrase and
session date; a clause without a time expression costs one regular-expression scan.

The gate may accept a date only when it comes from a message's timestamp:
:func:`grounding_dates` gives exactly the date strings :func:`with_dates` could insert for a
text and timestamp (both readings of a tense-dependent weekday, since a rewrite can drop the
tense cue). Without a timestamp nothing changes. Month names are written in full ("7 May 2023",
"June 2023"), the way LoCoMo's observations and answers write them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any

__all__ = [
    "DATE_EVIDENCE",
    "DatePhrase",
    "chunk_evidence",
    "is_counterfactual",
    "date_phrases",
    "derived_dates",
    "grounding_dates",
    "with_dates",
]


@dataclass(frozen=True, slots=True)
class DatePhrase:
    """A relative time expression at ``text[start:end]`` and the absolute date it names."""

    start: int
    end: int
    phrase: str  # the text replaced (a leading "on" is part of it)
    absolute: str  # "7 May 2023", "week before 8 May 2023", "April 2023", "summer 2023", "2021"


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # first month
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
}

#: Counts that say "some": "a few weeks ago" is written "(a few weeks before 8 May 2023)".
_VAGUE_COUNTS = ("a few", "a couple of", "several")
#: Such a written date: when it was told, not when it happened (:mod:`memory.engine.clauses`).
VAGUE_DATE = re.compile(rf"\((?:{'|'.join(_VAGUE_COUNTS)}) \w+ before [^)]*\)")

_DAYNAME = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_DAYABBR = r"(?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?(?!\w)"  # "last Fri", after last/this/next only
_MONTH = "|".join(m for m in _MONTHS if m != "may") + r"|(?-i:May)"  # "may" the verb is not a month
_NUM = "|".join(_NUMBERS)

# Alternatives are tried in order at each position; each names its groups.
_PHRASE = re.compile(
    r"(?i)\b(?:"
    r"(?P<dby>the\s+day\s+before\s+yesterday)"
    r"|(?P<yesterday>yesterday|last\s+night)"
    r"|(?P<today>(?:earlier\s+|later\s+)?today|tonight|this\s+(?:morning|afternoon|evening)"
    r"|just(?=\s+(?:(?:got|went|won|made|took|bought|met|found|finished|started|launched|joined|adopted"
    r"|moved|signed|opened|published|released|graduated|completed|booked|received|returned|came)\b)))"
    r"|(?P<tomorrow>tomorrow)"
    r"|(?P<few>a\s+(?:few|couple(?:\s+of)?)\s+days\s+ago)"
    r"|(?P<vague>a\s+few|a\s+couple(?:\s+of)?|several)\s+(?P<vunit>weekend|week|month|year)s\s+ago"
    r"|(?<!until\s)(?<!till\s)(?<!since\s)(?<!more\s)(?<!most\s)(?<!only\s)(?P<recent>recently|lately)"
    rf"|(?P<num>\d{{1,2}}|{_NUM})\s+(?P<unit>day|weekend|week|month|year)s?\s+ago"
    rf"|in\s+(?P<fnum>\d{{1,2}}|{_NUM})\s+(?P<funit>day|weekend|week|month|year)s?(?:\s+time)?"
    r"|(?<!the\s)(?P<rel>last|this\s+past|this|next|(?:earlier|later)\s+this)\s+(?:"
    r"(?P<unit2>weekend|week|month|year)"
    rf"|(?P<wd>{_DAYNAME}|{_DAYABBR})"
    r"|(?P<season>spring|summer|fall|autumn|winter)"
    rf"|(?P<relmon>{_MONTH}))"
    rf"|on\s+(?P<bwd>{_DAYNAME})"
    r"|on\s+the\s+(?P<dom>3[01]|[12]\d|[1-9])(?:st|nd|rd|th)"  # "on the 15th": of this month or the last
    r"(?!\s+(?:floor|anniversary|birthday|century|grade|time|day|place|row|street|avenue|of)\b)"
    r")\b(?!['\u2019]s\b|\s+of\b)"
)
# A relative phrase with an "on " before it ("on last Friday") takes it along.
_ON_BEFORE = re.compile(r"(?i)\bon\s+$")
# A hedge before "N years ago" ("about a year ago") is part of the phrase the date replaces.
_HEDGE_BEFORE = re.compile(r"(?i)\b(?:about|around|roughly|nearly|almost|approximately|some|over)\s+$")
_LIKE_BEFORE = re.compile(r"(?i)\blike\s+(?:just\s+|only\s+)?$")

_FUTURE = re.compile(
    r"(?i)\b(?:will|won['\u2019]t|shall|gonna|going\s+to|plan(?:s|ning)?\s+to|can['\u2019]t\s+wait"
    r"|looking\s+forward|hope\s+to|want\s+to|about\s+to)\b|['\u2019]ll\b"
    r"|\b(?:am|is|are|['\u2019]m|['\u2019]re)\s+(?:\w+\s+)?\w+ing\b"
    r"|\bgoing\s+\w+ing\b"
)
_IRREGULAR_PAST = frozenset(
    "was were had did went saw got made took came ran met ate bought found gave told felt left won "
    "lost spent brought thought sang swam wrote drove flew began knew heard sent built caught taught "
    "sold held kept slept wore rode fell became drew grew threw chose spoke broke forgot paid said "
    "sat stood understood led fed fought hung shot shut hurt let put read quit".split()
)
_NOT_PAST_ED = frozenset(
    {"need", "bed", "red", "shed", "seed", "feed", "speed", "weed", "breed", "ted", "ned"}
)
_WORD = re.compile(r"[A-Za-z]+")


def _tense(text: str) -> str | None:
    """ "future", "past" or None (no cue) for the text a bare weekday sits in."""
    if _FUTURE.search(text):
        return "future"
    for word in _WORD.findall(text.lower()):
        if word in _IRREGULAR_PAST or (len(word) > 4 and word.endswith("ed") and word not in _NOT_PAST_ED):
            return "past"
    return None


def _fmt_day(day: date) -> str:
    return f"{day.day} {_MONTHS[day.month - 1].capitalize()} {day.year}"


def _fmt_month(year: int, month: int) -> str:
    return f"{_MONTHS[month - 1].capitalize()} {year}"


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


@lru_cache(maxsize=4096)
def _dateparser_day(phrase: str, base: date) -> date | None:
    """dateparser's reading of a canonical offset phrase ("3 days ago", "last friday") on ``base``."""
    import dateparser  # the first call loads its English data (about 0.3 s); imported lazily

    parsed = dateparser.parse(
        phrase,
        languages=["en"],
        settings={
            "RELATIVE_BASE": datetime(base.year, base.month, base.day, 12, 0),
            "PREFER_DATES_FROM": "past",
        },
    )
    return parsed.date() if parsed is not None else None


def _week(day: date) -> str:
    return "week of " + _fmt_day(_monday(day))


def _weekend(saturday: date) -> str:
    return "weekend of " + _fmt_day(saturday)


_NUMBER_NAMES = {n: w for w, n in _NUMBERS.items() if w not in ("a", "an")}


def _before(n: int, unit: str, today: date) -> str:
    """A past week or weekend counted back from the day it was said: "week before 8 May 2023",
    "two weekends before 17 July 2023" (the way LoCoMo's answers write them; the day said is exact,
    a computed Monday would read as more precise than "last week" is)."""
    if n == 1:
        return f"{unit} before {_fmt_day(today)}"
    return f"{_NUMBER_NAMES.get(n, str(n))} {unit}s before {_fmt_day(today)}"


def _at(unit: str, day: date) -> str:
    """``day`` written at the granularity of ``unit``."""
    if unit == "day":
        return _fmt_day(day)
    if unit == "week":
        return _week(day)
    if unit == "month":
        return _fmt_month(day.year, day.month)
    return str(day.year)


def _last_saturday(today: date) -> date:
    """The Saturday of "last weekend": the latest weekend over (said on a weekend, the one before)."""
    if today.weekday() >= 5:
        return today - timedelta(days=today.weekday() - 5 + 7)
    return today - timedelta(days=today.weekday() + 2)


def _weekend_rel(rel: str, today: date, tense: str | None) -> str | None:
    if rel == "last":  # said on a weekend, "the weekend before" would read as this one
        return _weekend(_last_saturday(today)) if today.weekday() >= 5 else _before(1, "weekend", today)
    if today.weekday() >= 5:  # said on a weekend: "this weekend" is under way
        current = today - timedelta(days=today.weekday() - 5)
        return _weekend(current + timedelta(days=7) if rel == "next" else current)
    coming = today + timedelta(days=5 - today.weekday())
    if rel == "next":
        return _weekend(coming)
    if tense == "past":  # "we went hiking this weekend", said on a Monday
        return _before(1, "weekend", today)
    if tense == "future":
        return _weekend(coming)
    return None


def _ahead(raw: str, unit: str, today: date, tense: str | None) -> str | None:
    """ "in two weeks" said of something to come: the day, week, weekend, month or year it falls
    in. Not in a past or timeless sentence, where it is a duration ("ran 20 miles in a week")."""
    n = int(raw) if raw.isdigit() else _NUMBERS[raw]
    if tense != "future" or n == 0:
        return None
    if unit == "weekend":
        return _weekend(today + timedelta(days=(5 - today.weekday()) % 7 + 7 * (n - 1)))
    if unit == "month":
        return _fmt_month(*_add_months(today.year, today.month, n))
    if unit == "year":
        return str(today.year + n)
    return _at(unit, today + timedelta(days=n * (7 if unit == "week" else 1)))


def _season(name: str, rel: str, today: date) -> str:
    first = _SEASONS[name]
    label = "fall" if name == "autumn" else name
    # The occurrence of the season that contains today, or else the latest one started before it.
    year = today.year if date(today.year, first, 1) <= today else today.year - 1
    end_year, end_month = _add_months(year, first, 3)
    current = today < date(end_year, end_month, 1)
    if rel == "last":
        year = year - 1 if current else year
    elif rel == "next" or not current:  # "this summer" said in spring is the coming one
        year = year + 1
    return f"{label} {year}"


def _weekday(rel: str | None, weekday: int, today: date, tense: str | None) -> date | None:
    """The weekday of "on Saturday" (rel None) or "this Saturday" by tense; None without a cue."""
    if tense is None:
        return None
    if tense == "past":
        back = (today.weekday() - weekday) % 7
        return today - timedelta(days=back if rel == "this" else back or 7)
    ahead = (weekday - today.weekday()) % 7
    return today + timedelta(days=ahead if rel == "this" else ahead or 7)


def _resolve(match: re.Match[str], today: date, tense: str | None) -> str | None:
    """The absolute date string of one matched phrase, or None to leave it alone."""
    g = match.groupdict()
    for group, canonical in (("dby", "the day before yesterday"), ("yesterday", "yesterday")):
        if g[group]:
            day = _dateparser_day(canonical, today)
            return _fmt_day(day) if day else None
    if g["today"]:
        return _fmt_day(today)
    if g["tomorrow"]:
        day = _dateparser_day("tomorrow", today)
        return _fmt_day(day) if day else None
    if g["few"]:
        return _week(today - timedelta(days=2 if "couple" in g["few"].lower() else 3))
    if g["vague"]:  # "a few years ago" -> "a few years before 2023": how many is not said
        vague = next(v for v in _VAGUE_COUNTS if v.startswith(" ".join(g["vague"].lower().split())))
        unit = g["vunit"].lower()
        said = _fmt_day(today) if unit in ("week", "weekend") else _at(unit, today)
        return f"{vague} {unit}s before {said}"
    if g["recent"]:  # "Took a pottery class recently": when it was said, however long before
        return f"{'by' if tense == 'past' else 'as of'} {_fmt_day(today)}"
    if g["num"]:
        raw = g["num"].lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        unit = g["unit"].lower()
        if n == 0:
            return None
        if unit == "weekend" and today.weekday() >= 5:
            return _weekend(_last_saturday(today) - timedelta(days=7 * (n - 1)))
        if unit in ("weekend", "week"):
            return _before(n, unit, today)
        day = _dateparser_day(f"{n} {unit}s ago", today)
        return _at(unit, day) if day else None
    if g["fnum"]:
        return _ahead(g["fnum"].lower(), g["funit"].lower(), today, tense)
    if g["bwd"]:
        day = _weekday(None, _WEEKDAYS.index(g["bwd"].lower()), today, tense)
        return _fmt_day(day) if day else None
    if g["dom"]:
        day = _day_of_month(int(g["dom"]), today, tense)
        return _fmt_day(day) if day else None
    rel = " ".join((g["rel"] or "").lower().split())
    rel = {"this past": "last", "earlier this": "this", "later this": "this"}.get(rel, rel)
    if g["unit2"]:
        unit = g["unit2"].lower()
        if unit == "weekend":
            return _weekend_rel(rel, today, tense)
        if unit == "week" and rel == "last":
            return _before(1, "week", today)
        day = _dateparser_day(f"{rel} {unit}", today)
        return _at(unit, day) if day else None
    if g["wd"]:
        weekday = next(i for i, name in enumerate(_WEEKDAYS) if name.startswith(g["wd"].lower()[:3]))
        if rel == "this":
            day = _weekday("this", weekday, today, tense)
        else:
            day = _dateparser_day(f"{rel} {_WEEKDAYS[weekday]}", today)
        return _fmt_day(day) if day else None
    if g["season"]:
        return _season(g["season"].lower(), rel, today)
    if g["relmon"]:
        month = _MONTHS.index(g["relmon"].lower()) + 1
        if rel == "last":
            return _fmt_month(today.year if month < today.month else today.year - 1, month)
        if rel == "next":
            return _fmt_month(today.year if month > today.month else today.year + 1, month)
    return None  # "this May": which one is unclear


_GOING_ON = re.compile(r"(?i)\b(?:has|have|had|'ve|'s)\s+been\b")


def _tense_dependent(match: re.Match[str]) -> bool:
    """Does the reading of this phrase depend on the tense of its sentence?"""
    rel = " ".join((match.group("rel") or "").lower().split())
    weekend = (match.group("unit2") or "").lower() == "weekend"
    bare = bool(match.group("bwd") or match.group("dom") or match.group("recent"))
    return bare or (rel == "this" and bool(match.group("wd") or weekend))


def _day_of_month(n: int, today: date, tense: str | None) -> date | None:
    """Day ``n`` of a month: the next one for a future sentence, the last one for a past sentence
    (today included either way), the nearest one without a tense; None when that month has no such
    day."""
    if tense is None:
        days = [d for d in (_day_of_month(n, today, "past"), _day_of_month(n, today, "future")) if d]
        return min(days, key=lambda d: (abs((d - today).days), d), default=None)
    year, month = today.year, today.month
    if tense == "future" and n < today.day:
        year, month = _add_months(year, month, 1)
    elif tense == "past" and n > today.day:
        year, month = _add_months(year, month, -1)
    try:
        return date(year, month, n)
    except ValueError:
        return None


def _phrases(text: str, today: date, tense: str | None, both: bool = False) -> list[DatePhrase]:
    found: list[DatePhrase] = []
    for match in _PHRASE.finditer(text):
        start, end = match.span()
        if match.group("yesterday") and _LIKE_BEFORE.search(text, 0, start):
            continue  # "feels like (just) yesterday": an idiom, not a date
        readings = ("past", "future") if both and _tense_dependent(match) else (tense,)
        if match.group("recent") and _GOING_ON.search(text):
            readings = (None,)  # "Has been practicing lately": going on when said
        for reading in readings:
            absolute = _resolve(match, today, reading)
            if absolute is None:
                continue
            taken = (
                _HEDGE_BEFORE
                if match.group("num") or match.group("few") or match.group("vague")
                else _ON_BEFORE
            )
            before = taken.search(text, 0, start)
            if before is not None and not match.group("bwd"):
                start = before.start()  # "on last Friday", "about a year ago" -> the whole of it goes
            found.append(DatePhrase(start, end, text[start:end], absolute))
    return found


def _today(ts: datetime) -> date:
    """The message's calendar date in its own offset (a naive timestamp is taken as is)."""
    return ts.date()


def date_phrases(text: str, ts: datetime, *, context: str | None = None) -> list[DatePhrase]:
    """The relative time expressions of ``text`` resolved against ``ts``, in order.

    ``context`` (default ``text``) is what decides the tense of a bare weekday ("on Saturday"):
    pass the source sentence when ``text`` is a shortened rewrite of it.
    """
    if not text:
        return []
    return _phrases(text, _today(ts), _tense(context if context is not None else text))


def with_dates(fact: str, ts: datetime | None, *, context: str | None = None) -> str:
    """``fact`` with each relative time expression replaced by ``"(<absolute date>)"``.

    ``with_dates("Went to a support group yesterday", 8 May 2023)`` ->
    ``"Went to a support group (7 May 2023)"``. Without ``ts`` the fact is returned unchanged.
    """
    if ts is None or not fact:
        return fact
    phrases = date_phrases(fact, ts, context=context)
    if not phrases:
        return fact
    if is_counterfactual(fact):  # the fact's own words: its sentence may go on to a wish
        # "I would get two turtles today if I could": no event, so no date, and no "today" either
        for phrase in reversed(phrases):
            fact = fact[: phrase.start] + fact[phrase.end :]
        fact = " ".join(fact.split()).strip(" ,")
        return fact[:1].upper() + fact[1:]
    first = phrases[0]
    # "Yesterday, we joined a church" -> "We joined a church (7 May 2023)": the fact comes first
    lead = not fact[: first.start].strip(" ,") and bool(fact[first.end :].strip(" ,"))
    parts: list[str] = []
    cursor = first.end if lead else 0
    for phrase in phrases[1:] if lead else phrases:
        if phrase.start < cursor:
            continue
        parts.append(fact[cursor : phrase.start])
        # "our opener is next week" -> "... is in the week of 15 May 2023": the date is what is said
        said = _COPULA_BEFORE.search(fact, 0, phrase.start) is not None
        parts.append(_complement(phrase.absolute) if said else f"({phrase.absolute})")
        cursor = phrase.end
    parts.append(fact[cursor:])
    out = "".join(parts)
    if lead:
        out = out.lstrip(" ,")
        return f"{out[:1].upper()}{out[1:]} ({first.absolute})"
    return _date_last(out) if len(phrases) == 1 else out


# "Took a short trip (week before 19 June 2023) to Rome": the date before a tail of a few words
# with no clause of its own (no conjunction, relative word or subject pronoun) goes after it.
_DATE_THEN_TAIL = re.compile(r"^(?P<head>.+?) \((?P<date>[^()]+)\)(?P<tail>(?: [\w'\u2019-]+){1,8})$")
_CLAUSE_WORD = re.compile(
    r"(?i)\b(?:and|but|or|so|when|while|since|because|as|after|before|until|till|though|although"
    r"|which|that|who|whom|whose|where|if|then|they|he|she|it|we|i|you)\b"
)


def _date_last(fact: str) -> str:
    m = _DATE_THEN_TAIL.match(fact)
    if m is None or _CLAUSE_WORD.search(m.group("tail")):
        return fact
    return f"{m.group('head')}{m.group('tail')} ({m.group('date')})"


_COUNTERFACTUAL = re.compile(r"(?i)\b(?:would|'d)\b[^.?!]*\bif\b|\bif\b[^.?!]*\b(?:would|'d)\b")


def is_counterfactual(text: str) -> bool:
    """ "I would get two turtles today if I could", "If I had time, I'd go": what would be, not what
    happened or is planned."""
    return _COUNTERFACTUAL.search(text) is not None


_COPULA_BEFORE = re.compile(r"(?i)(?:\b(?:is|was|are|were|be)|'s|'re)\s+$")


def _complement(absolute: str) -> str:
    """A date said after "is"/"was" in running text: "on 9 May 2023", "in the week of 15 May 2023",
    "on the weekend of 13 May 2023", "in May 2023", "the week before 8 May 2023"."""
    if absolute.startswith(("as of", "by")):
        return absolute
    if "before" in absolute:  # "was two weeks before 8 May 2023", "was the week before 8 May 2023"
        return f"the {absolute}" if absolute.startswith("week") else absolute
    if absolute[:1].isdigit() and not absolute.isdigit() and " " in absolute:
        return f"on {absolute}"
    if absolute.startswith("weekend"):
        return f"on the {absolute}"
    if absolute.startswith("week"):
        return f"in the {absolute}"
    return f"in {absolute}"


def grounding_dates(text: str, ts: datetime | None) -> list[str]:
    """The absolute date strings :func:`with_dates` could insert for ``text`` stamped ``ts``.

    A weekday whose reading depends on tense ("on Saturday", "this Friday") gives both the
    previous and the next date, since the fact written from ``text`` may have lost the tense cue.
    Without ``ts``: ``[]``.
    """
    if ts is None or not text:
        return []
    seen: dict[str, None] = {}
    for phrase in _phrases(text, _today(ts), _tense(text), both=True):
        seen.setdefault(phrase.absolute, None)
    return list(seen)


#: Marks an evidence line that is a date derived from a message's timestamp, not the user's words.
DATE_EVIDENCE = "[date derived from the message time] "


def chunk_evidence(turns: Iterable[Mapping[str, Any]]) -> list[str]:
    """What a chunk's values may be grounded in: the user turns' text, then one marked line per
    absolute date derived from a relative phrase of a user turn and its message's time
    (:func:`grounding_dates`). The gate reads the marked lines as dates, nothing else."""
    texts: list[str] = []
    dates: dict[str, None] = {}
    for turn in turns:
        if turn.get("role") != "user":
            continue
        content = turn.get("content") or ""
        texts.append(content)
        ts = turn.get("ts")
        if isinstance(ts, str):
            try:
                ts = datetime.fromisoformat(ts.replace("Z", "+00:00"))
            except ValueError:
                ts = None
        for absolute in grounding_dates(content, ts if isinstance(ts, datetime) else None):
            dates.setdefault(DATE_EVIDENCE + absolute, None)
    return texts + list(dates)


def derived_dates(evidence: Iterable[str]) -> list[str]:
    """The dates :func:`chunk_evidence` marked in ``evidence``."""
    return [e[len(DATE_EVIDENCE) :] for e in evidence if e.startswith(DATE_EVIDENCE)]
