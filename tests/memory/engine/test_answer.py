"""Extractive answers (memory.engine.answer) on small hand-made contexts."""

from __future__ import annotations

import pytest

from memory.engine.answer import (
    NOTHING,
    Passage,
    extractive_answer,
    passage_texts,
    passages,
    subject_names,
    without_names,
)

LEAVES = {
    "identity/work/occupation": "Data engineer at a logistics startup; mostly pipelines and a lot of SQL",
    "identity/location/home": "Moved to Lisbon from Toronto",
    "relationships/pets": "Adopted a cat named Pastel, a grey tabby",
    "identity/name/full_name": "Maya",
}
EVIDENCE = [
    {
        "text": "user: Bad news: my knee has been hurting, the physio says no running for a while.\n"
        "assistant: I'm sorry to hear that.",
        "source": {"start_seq": 1, "end_seq": 2, "ts": "2026-04-14T08:30:00+00:00", "session": "s2"},
    },
    {
        "text": "user: I switched to swimming three times a week at the municipal pool.",
        "source": {"start_seq": 3, "end_seq": 3, "ts": None, "session": "s2"},
    },
]


def test_passages_cut_leaves_into_clauses_and_evidence_into_cited_sentences():
    items = passages(LEAVES, EVIDENCE)
    leaf = [p for p in items if p.kind == "leaf"]
    assert [p.text for p in leaf[:2]] == [
        "Data engineer at a logistics startup",
        "mostly pipelines and a lot of SQL",
    ]
    assert {p.cite for p in leaf} == set(LEAVES)
    ev = [p for p in items if p.kind == "evidence"]
    assert ev[0].cite == "evidence 1" and ev[0].role == "user" and ev[0].date == "14 Apr 2026"
    assert any(p.role == "assistant" for p in ev) and ev[-1].cite == "evidence 2" and ev[-1].date == ""
    assert passage_texts(leaf[:1]) == ["identity work occupation: Data engineer at a logistics startup"]


def test_job_question_quotes_the_job_leaf_with_its_path():
    got = extractive_answer("What does Maya do for work?", passages(LEAVES, EVIDENCE))
    assert got.text.startswith("Data engineer at a logistics startup [identity/work/occupation]")
    assert "not" not in got.text.split()
    assert got.citations[0]["cite"] == "identity/work/occupation"


def test_evidence_sentence_is_quoted_with_speaker_and_date_for_when_questions():
    got = extractive_answer(
        "When did the knee start hurting and stop the running?", passages(LEAVES, EVIDENCE)
    )
    assert got.supports[0].passage.cite == "evidence 1"
    assert "(the user, 14 Apr 2026) [evidence 1]" in got.text and "knee has been hurting" in got.text


def test_nothing_relevant_says_so_plainly():
    got = extractive_answer("What is the capital of Peru?", passages(LEAVES, EVIDENCE))
    assert got.text == NOTHING and got.supports == () and got.citations == []
    assert extractive_answer("anything?", []).text == NOTHING


def test_cosine_chooses_when_words_do_not_overlap():
    items = [
        Passage("Swims three times a week", "behaviour/sport", "leaf"),
        Passage("Grey tabby", "pets", "leaf"),
    ]
    # no shared content word: only the vectors can tell
    got = extractive_answer(
        "How does she keep fit?", items, query_vector=[1.0, 0.0], vectors=[[0.9, 0.1], [0.0, 1.0]]
    )
    assert got.supports[0].passage.cite == "behaviour/sport" and len(got.supports) == 1
    assert got.supports[0].cosine == pytest.approx(0.9 / (0.81 + 0.01) ** 0.5)


def test_close_runner_up_is_quoted_too_but_never_twice():
    items = [
        Passage("Runs every morning", "behaviour/exercise", "leaf"),
        Passage("Runs every morning", "behaviour/habits", "leaf"),
        Passage("Every morning a run by the river, then coffee with friends", "routine/mornings", "leaf"),
        Passage("Grey tabby cat", "pets", "leaf"),
    ]
    got = extractive_answer("Does she run every morning?", items, max_supports=3)
    texts = [s.passage.text for s in got.supports]
    assert texts.count("Runs every morning") == 1 and len(texts) == 2


def test_deterministic_and_checks_vector_count():
    items = passages(LEAVES, EVIDENCE)
    assert extractive_answer("Where does Maya live?", items) == extractive_answer(
        "Where does Maya live?", items
    )
    with pytest.raises(ValueError):
        extractive_answer("x", items, query_vector=[1.0], vectors=[[1.0]])


def test_the_subjects_name_does_not_pull_the_name_leaf():
    names = subject_names(LEAVES)
    assert (
        names == {"maya"}
        and without_names("What does Maya's cat eat, Maya?", names) == "What does cat eat, ?"
    )
    got = extractive_answer("Which home location does Maya have?", passages(LEAVES, EVIDENCE), names=names)
    assert got.supports[0].passage.cite == "identity/location/home"
    assert all(s.passage.cite != "identity/name/full_name" for s in got.supports)


def test_questions_in_evidence_are_not_quoted_and_near_duplicates_once():
    evidence = [
        {"text": "assistant: Are there other ways you'd like to stay active?\nuser: I switched to swimming."},
    ]
    items = passages({"behaviour/habits/exercise": "Switched to swimming"}, evidence)
    assert [p.text for p in items] == ["Switched to swimming", "I switched to swimming."]
    got = extractive_answer("What does she do to stay active, swimming?", items)
    assert [s.passage.kind for s in got.supports] == ["leaf"]


def test_a_runner_up_that_meets_the_question_by_a_name_only_is_not_quoted():
    items = [
        Passage("Mentors a transgender teen", "identity/education/field", "leaf"),
        Passage("Sounds great, Caroline", "evidence 3", "evidence", role="user"),
    ]
    # both score on word overlap alone: "caroline" for the second, "mentor" for the first
    got = extractive_answer("Whom does Caroline mentor?", items)
    assert [s.passage.cite for s in got.supports] == ["identity/education/field"]


def test_names_the_other_speaker_calls_the_subject_by_and_vocative_small_talk():
    evidence = [
        {
            "text": "user: I researched adoption agencies this week.\nassistant: Wow, that's so cool, Caroline!"
        },
        {"text": "assistant: Yep, Caroline."},
    ]
    assert subject_names({}, evidence) == {"caroline"}
    items = passages({}, evidence)
    assert [p.text for p in items] == ["I researched adoption agencies this week."]  # no "Yep, Caroline."
