"""Checks on the hand-labelled leaf fixture (evaluation/fixtures/leaf_labels.jsonl).

The fixture is the gold data for step 3 of the listener pipeline (issue 23): development clauses
with the default-schema leaf a careful moderator would file them under. These tests read it from
the repository only; they never touch ../shared.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memory.engine.schema import default_schema

FIXTURE = Path(__file__).resolve().parents[2] / "evaluation" / "fixtures" / "leaf_labels.jsonl"
README = FIXTURE.parent / "README.md"

KEYS = {"clause", "fact", "leaf", "alt", "source", "speaker"}
DEV_LOCOMO = {"conv-26", "conv-30", "conv-41", "conv-42"}
SPC_DEV_LAST = 799  # dialogues 0..799 are development; 800..999 are kept for validation
LOCOMO_SOURCE = re.compile(r"^locomo:(conv-\d+):D(\d+):(\d+)$")
SPC_SOURCE = re.compile(r"^spc:(\d+):(?:(user [12]):persona|turn (\d+))$")
FIRST_PERSON = {
    "i",
    "i'm",
    "i've",
    "i'd",
    "i'll",
    "me",
    "my",
    "mine",
    "myself",
    "we",
    "our",
    "ours",
    "us",
    "ourselves",
}


def _first_person(text: str) -> bool:
    """True when the text holds a first-person word ("US" as in the country does not count)."""
    return any(w.lower() in FIRST_PERSON and w != "US" for w in re.findall(r"[A-Za-z'-]+", text))


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    with FIXTURE.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def leaves() -> set[str]:
    return set(default_schema().paths)


def test_enough_rows_from_both_sources(rows: list[dict[str, Any]]) -> None:
    assert len(rows) >= 300
    by_source = Counter(row["source"].split(":", 1)[0] for row in rows)
    assert set(by_source) == {"locomo", "spc"}
    assert by_source["locomo"] >= 100
    assert by_source["spc"] >= 100


def test_every_row_has_the_documented_fields(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert set(row) == KEYS, row
        for key in ("clause", "fact", "leaf", "source", "speaker"):
            assert isinstance(row[key], str) and row[key].strip() == row[key] and row[key], row
        assert isinstance(row["alt"], list) and all(isinstance(a, str) for a in row["alt"]), row


def test_leaves_and_alternatives_exist_in_the_default_schema(
    rows: list[dict[str, Any]], leaves: set[str]
) -> None:
    for row in rows:
        assert row["leaf"] in leaves, row
        assert all(alt in leaves for alt in row["alt"]), row
        assert row["leaf"] not in row["alt"], row
        assert len(set(row["alt"])) == len(row["alt"]), row


def test_labels_spread_over_many_leaves_and_every_trunk(rows: list[dict[str, Any]]) -> None:
    used = {row["leaf"] for row in rows}
    assert len(used) >= 60
    assert {leaf.split("/", 1)[0] for leaf in used} == set(default_schema().trunks)
    # no single leaf dominates, so a constant answer cannot score well
    assert Counter(row["leaf"] for row in rows).most_common(1)[0][1] / len(rows) < 0.10


def test_no_duplicate_clause(rows: list[dict[str, Any]]) -> None:
    counts = Counter(_norm(row["clause"]) for row in rows)
    assert [clause for clause, n in counts.items() if n > 1] == []


def test_sources_come_from_the_development_split_only(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        source = row["source"]
        if source.startswith("locomo:"):
            match = LOCOMO_SOURCE.match(source)
            assert match, source
            assert match.group(1) in DEV_LOCOMO, source  # conv-43 is validation
        else:
            match = SPC_SOURCE.match(source)
            assert match, source
            assert 0 <= int(match.group(1)) <= SPC_DEV_LAST, source
            if match.group(2):  # a persona sentence belongs to the speaker named in the source
                assert row["speaker"] == match.group(2), row
            else:
                assert row["speaker"] in {"user 1", "user 2"}, row


def test_facts_are_short_and_third_person(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert len(row["fact"].split()) <= 12, row
        assert not _first_person(row["fact"]), row


def test_clauses_are_first_person_user_words(rows: list[dict[str, Any]]) -> None:
    # a clause is what the user said, not a rewrite: most keep a first-person word
    first_person = sum(1 for row in rows if _first_person(row["clause"]))
    assert first_person / len(rows) > 0.9


def test_readme_counts_match_the_file(rows: list[dict[str, Any]]) -> None:
    text = README.read_text(encoding="utf-8")
    assert f"{len(rows)} clauses" in text
    for trunk, n in Counter(row["leaf"].split("/", 1)[0] for row in rows).items():
        assert re.search(rf"\|\s*`?{trunk}`?\s*\|\s*{n}\s*\|", text), (trunk, n)


RECENT = "identity/life_events/recent"
RECENT_TIME = re.compile(
    r"\b(just|recently|yesterday|this month|last (week|weekend|month|mon|tues?|wed|thu|fri|sat|sun)\w*"
    r"|\w+ (days?|weeks?|months?) ago)\b",
    re.IGNORECASE,
)
SITUATION_CHANGE = re.compile(
    r"\b(moved|joined|adopted|got an? (new )?(job|puppy|apartment)|new addition|lost my job|was fired"
    r"|passed away|broke up|bought my first home|started (volunteering|helping))\b",
    re.IGNORECASE,
)


def test_a_recent_change_of_situation_accepts_recent_life_events(rows: list[dict[str, Any]]) -> None:
    # fixtures/README.md, "Rule: a recent change of situation accepts life_events/recent"
    changes = [
        row for row in rows if RECENT_TIME.search(row["clause"]) and SITUATION_CHANGE.search(row["clause"])
    ]
    assert len(changes) >= 20  # the patterns still find the clauses the rule is about
    missing = [row["clause"] for row in changes if RECENT not in {row["leaf"], *row["alt"]}]
    assert missing == []


def test_the_recent_rule_patterns_read_as_intended() -> None:
    told = "I just moved here from China"
    assert RECENT_TIME.search(told) and SITUATION_CHANGE.search(told)
    assert not SITUATION_CHANGE.search("I went to a pride parade last Friday")
    assert not RECENT_TIME.search("I joined the army when I was eighteen")
