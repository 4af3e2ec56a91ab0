"""LLM-free quality metrics (evaluation/quality.py) with a fake bag-of-words embedder."""

import zlib

import numpy as np
import pytest

from evaluation.quality import (
    answer_forms,
    answer_present,
    answer_tokens,
    answerable,
    answerable_ratio,
    context_answer_recall,
    context_tokens,
    first_person_rate,
    invented_tokens,
    neutralise,
    observation_coverage,
    pool_coverage,
    removal,
    sample_values,
    stated_facts,
    tree_clauses,
    value_metrics,
    word_count,
    words_per_clause_p50,
)
from memory.engine.render import count_tokens

DIM = 512


def bow_embed(texts):
    """Unit bag-of-words vectors (crc32 buckets, stable across processes): cosine = word overlap."""
    out = np.zeros((len(texts), DIM))
    for i, text in enumerate(texts):
        for w in text.lower().replace(".", " ").replace(",", " ").split():
            out[i, zlib.crc32(w.encode()) % DIM] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


def row(new, user, other="", old=None):
    return {"new_value": new, "old_value": old, "user_text": user, "other_text": other}


# value_metrics ------------------------------------------------------------------------------


def test_value_metrics_counts_grounded_invented_and_wrong_speaker():
    rows = [
        # copied from the user: grounded, nothing invented
        row("Adopted a dog named Max in 2019", "I adopted a dog named Max in 2019!", "Cute!"),
        # invented number and name: the user said neither
        row("Adopted a dog named Rex in 2021", "I adopted a dog last year.", "Nice."),
        # the other speaker's fact written into the user's tree
        row(
            "Plays violin in the Boston orchestra",
            "That sounds great, tell me more.",
            "I play violin in the Boston orchestra.",
        ),
    ]
    m = value_metrics(rows)
    assert (m["values"], m["grounded"], m["invented"], m["wrong_speaker"]) == (3, 1, 2, 1)
    assert m["grounded_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert m["invented_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert m["wrong_speaker_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert m["invented_examples"][0]["tokens"] == ["2021", "Rex"]
    assert m["wrong_speaker_examples"] == ["Plays violin in the Boston orchestra"]


def test_invented_catches_invented_number_and_name_but_not_copied_ones():
    user = "My sister Tomás ran ten km in Lisbon."
    assert invented_tokens("Sister tomas ran 10 km in Lisbon", [user]) == []  # folded, number word == digit
    assert invented_tokens("Sister Tomás ran 12 km in Porto", [user]) == ["12", "Porto"]
    # the old value is a source too; the other speaker's turns are not
    assert invented_tokens("Lives in Porto", [user, "Lives in Porto"]) == []
    m = value_metrics([row("Sister ran 12 km in Porto", user, other="I ran 12 km in Porto")])
    assert m["invented"] == 1 and m["wrong_speaker"] == 1


def test_update_grounded_through_old_value():
    m = value_metrics([row("Runs daily; Swims on Sundays", "I swim on Sundays.", old="Runs daily")])
    assert m["grounded"] == 1 and m["invented"] == 0 and m["wrong_speaker"] == 0


def test_value_metrics_zero_rows():
    m = value_metrics([])
    assert m["values"] == 0
    assert m["grounded_rate"] is None and m["invented_rate"] is None and m["wrong_speaker_rate"] is None


# observation_coverage -----------------------------------------------------------------------


TREE = {
    "behaviour/hobbies": "Paints landscapes; Plays chess on weekends",
    "identity/family/pets": "Has a cat named Luna",
    "mind/plans": "  ;  ",  # only separators: no clause
}


def test_tree_clauses_split_on_semicolons():
    assert tree_clauses(TREE) == ["Paints landscapes", "Plays chess on weekends", "Has a cat named Luna"]


def test_coverage_counts_and_thresholds():
    facts = [
        "Paints landscapes",  # identical to a clause: cosine 1
        "Plays chess",  # 2 of 4 clause words: cosine 2/sqrt(2*4) = 0.707
        "Has a dog named Luna",  # 4 of 5 words shared with a 5-word clause: 0.8
        "Works as a nurse in Ohio",  # nothing shared: 0
    ]
    cov = observation_coverage(TREE, facts, bow_embed, taus=(0.5, 0.75, 0.9))
    assert cov["facts"] == 4 and cov["clauses"] == 3
    assert cov["covered"] == {"0.5": 3, "0.75": 2, "0.9": 1}
    assert cov["coverage"] == {"0.5": 0.75, "0.75": 0.5, "0.9": 0.25}
    # every clause has a fact at >= 0.5 (chess 0.707, paints 1, cat/dog 0.8)
    assert cov["precise_clauses"] == 3 and cov["precision"] == 1.0


def test_precision_counts_clauses_without_a_matching_fact():
    cov = observation_coverage(TREE, ["Paints landscapes"], bow_embed)
    assert cov["precise_clauses"] == 1
    assert cov["precision"] == pytest.approx(1 / 3, abs=1e-4)
    assert cov["coverage"] == {"0.5": 1.0, "0.6": 1.0, "0.7": 1.0}


def test_tree_tokens_count_path_value_lines():
    tree = {"b/x": "two  words", "a/y": "one"}
    assert observation_coverage(tree, ["x"], bow_embed)["tree_tokens"] == count_tokens(
        "a/y: one\nb/x: two words"
    )


def test_empty_tree_and_no_facts():
    cov = observation_coverage({}, ["Paints landscapes"], bow_embed)
    assert cov["coverage"] == {"0.5": 0.0, "0.6": 0.0, "0.7": 0.0}
    assert cov["precision"] is None and cov["clauses"] == 0 and cov["tree_tokens"] == 0
    none = observation_coverage(TREE, [], bow_embed)
    assert none["coverage"] == {"0.5": None, "0.6": None, "0.7": None} and none["precision"] is None


def test_pool_coverage_pools_counts():
    a = observation_coverage(TREE, ["Paints landscapes", "Works as a nurse"], bow_embed)
    b = observation_coverage({}, ["Likes jazz"], bow_embed)
    both = pool_coverage([a, b])
    assert both["facts"] == 3 and both["clauses"] == 3
    assert both["covered"]["0.5"] == 1 and both["coverage"]["0.5"] == pytest.approx(1 / 3, abs=1e-4)
    assert both["precision"] == a["precision"]  # the empty tree has no clause to be precise
    assert both["tree_tokens"] == a["tree_tokens"] + b["tree_tokens"]


# context_answer_recall ----------------------------------------------------------------------


def test_context_answer_recall():
    context = "## identity\nfamily/pets: Has a cat named Luna; Caroline's sister lives in Boston"
    assert context_answer_recall(context, "Luna") == 1.0
    assert context_answer_recall(context, "a cat and a dog") == 0.5  # content tokens: cat, dog
    assert context_answer_recall(context, "Caroline") == 1.0  # possessive in the context
    assert context_answer_recall(context, "Paris, France") == 0.0
    assert context_answer_recall("", "Luna") == 0.0
    assert context_answer_recall(context, "") is None and context_answer_recall(context, None) is None


def test_answer_tokens_fall_back_to_all_words_when_only_stopwords():
    assert answer_tokens("The cat, the CAT") == ["cat"]
    assert answer_tokens("yes") == ["yes"]
    assert context_answer_recall("she said yes", "Yes") == 1.0


# the judge of issue 23 ------------------------------------------------------------------------


def test_neutralise_names_first_person_and_subjectless_values():
    names = ["Caroline Smith", "Caroline"]
    assert neutralise("Caroline attended a support group", names) == "the person attended a support group"
    assert (
        neutralise("Caroline Smith's sister lives in Boston", names) == "the person's sister lives in Boston"
    )
    assert neutralise("I'm a nurse and my dog is Max") == "the person is a nurse and the person's dog is Max"
    assert neutralise("I love to bake cookies.") == "the person loves to bake cookies."
    assert neutralise("i can swim") == "the person can swim"  # a modal is not inflected
    assert neutralise("That bike is mine") == "That bike is the person's"
    # a subject-less value gets the neutral subject, and its singular they with it
    assert neutralise("Is a nurse") == "the person is a nurse"
    assert neutralise("Went to their class") == "the person went to the person's class"
    # a value with its own subject keeps it, and its "they" (other people)
    assert neutralise("Her sister lives in Boston") == "Her sister lives in Boston"
    assert neutralise("Knitting is my passion") == "Knitting is the person's passion"
    assert neutralise("They live in Lisbon") == "They live in Lisbon"


def test_observation_coverage_with_names_neutralises_both_sides():
    tree = {"identity/work": "Is a nurse"}
    plain = observation_coverage(tree, ["Ana is a nurse"], bow_embed, taus=(0.9,))
    judged = observation_coverage(tree, ["Ana is a nurse"], bow_embed, taus=(0.9,), names=["Ana"])
    assert plain["covered"] == {"0.9": 0} and judged["covered"] == {"0.9": 1}
    assert judged["precision_at"] == {"0.9": 1.0} and plain["precision_at"] == {"0.9": 0.0}


def test_precision_at_each_tau_and_pooled():
    facts = ["Paints landscapes", "Plays chess"]  # chess: 0.707 against its clause
    cov = observation_coverage(TREE, facts, bow_embed, taus=(0.5, 0.75))
    assert cov["precise_at"] == {"0.5": 2, "0.75": 1}
    assert cov["precision_at"] == {
        "0.5": pytest.approx(2 / 3, abs=1e-4),
        "0.75": pytest.approx(1 / 3, abs=1e-4),
    }
    empty = observation_coverage({}, facts, bow_embed, taus=(0.5, 0.75))
    assert empty["precision_at"] is None
    both = pool_coverage([cov, empty, cov])
    assert both["precise_at"] == {"0.5": 4, "0.75": 2}
    assert both["precision_at"]["0.75"] == pytest.approx(2 / 6, abs=1e-4)


def test_first_person_rate_and_words_per_clause():
    clauses = ["Is a nurse", "I love my job", "Lives in the US", "Goes out with us on Fridays"]
    assert first_person_rate(clauses) == 0.5  # "I ... my" and "us"; the country "US" does not count
    assert first_person_rate([]) is None
    assert (
        first_person_rate(['Loves "Under My Thumb"', 'Said "I quit" to my boss']) == 0.5
    )  # a title is its own
    assert first_person_rate(["Is carving out some me-time", "I'm a nurse"]) == 0.5  # a compound is a word
    assert words_per_clause_p50(["Is a nurse", "Runs", "Has two cats named Luna"]) == 3.0
    assert words_per_clause_p50([]) is None
    assert word_count(["Is a nurse", "", "Bob's dog"]) == 5


def test_answer_present_and_answerable_ratio():
    tree = "Went to a support group (7 May 2023); Works as a well-known counselor"
    history = "1:56 pm on 8 May, 2023\nI went to a support group yesterday. I work as a counselor. Bye!"
    tokens = context_tokens(tree)
    assert answer_present(tokens, "7 May 2023") is True  # absolute date written by the tree
    assert answer_present(tokens, "known") is True  # a part of a hyphenated word
    assert answer_present(tokens, "8 May 2023") is False
    assert answer_present(tokens, 2023) is True and answer_present(tokens, "") is None
    res = answerable(["7 May 2023", "counselor", "Bye", "Paris", ""], tree, history)
    # 4 measured answers; tree holds 2 (date, counselor); history 2 (counselor, Bye): "7" is not in it
    assert (res["questions"], res["in_tree"], res["in_history"]) == (4, 2, 2)
    assert res["tree_share"] == 0.5 and res["history_share"] == 0.5 and res["ratio"] == 1.0
    assert answerable_ratio(0, 0, 0) == {"tree_share": None, "history_share": None, "ratio": None}


def test_a_weekday_answer_counts_written_out_in_tree_and_history_alike():
    gold = "The Friday before 15 July 2023"
    assert answer_forms(gold) == [gold, "14 July 2023"]
    assert answer_forms("The sunday before 25 May 2023")[1] == "21 May 2023"
    assert answer_forms("The Friday before 14 July 2023")[1] == "7 July 2023"  # strictly before
    assert answer_forms("7 May 2023") == ["7 May 2023"] and answer_forms("The Friday before 31 Foo 2023") == [
        "The Friday before 31 Foo 2023"
    ]
    tree = "Went to an adoption meeting (14 July 2023)"
    history = "1:51 pm on 15 July, 2023\nLast Friday I went to a council meeting for adoption."
    res = answerable([gold, "The Friday before 22 July 2023"], tree, history)
    assert (res["in_tree"], res["in_history"]) == (1, 1)  # the tree has 14 July, the history 15 July
    assert answer_present(context_tokens("Went (13 July 2023)"), gold) is False


def test_removal_counts_deletes_and_clause_only_removing_updates():
    assert removal("DELETE", "Runs daily; Swims", None) == ["Runs daily", "Swims"]
    assert removal("UPDATE", "Runs daily; Swims", "Runs daily") == ["Swims"]  # a retraction
    assert removal("UPDATE", "Lives in Porto", "Lives in Lisbon") is None  # a replacement
    assert removal("UPDATE", "Runs daily", "Runs daily; Swims") is None  # an append
    assert removal("UPDATE", "Runs daily; Swims", "runs daily") == ["Swims"]  # case-folded comparison
    assert removal("ADD", None, "Runs") is None and removal("UPDATE", None, "Runs") is None


def test_stated_facts_keeps_what_the_speaker_says():
    personas = ["I have two cats.", "I play the violin.", "I live in Lisbon."]
    sentences = ["Hi there!", "I have two cats at home.", "I live in Lisbon."]
    assert stated_facts(personas, sentences, bow_embed, 0.6) == ["I have two cats.", "I live in Lisbon."]
    assert stated_facts(personas, [], bow_embed) == [] and stated_facts([], sentences, bow_embed) == []


def test_sample_values_is_seeded_and_bounded():
    trees = {"a": {"x/1": "One", "x/2": "Two", "x/3": ""}, "b": {"y/1": "Three"}}
    first = sample_values(trees, 2, seed=3)
    assert first == sample_values(trees, 2, seed=3) and len(first) == 2
    assert all(set(r) == {"subject", "path", "value"} and r["value"] for r in first)
    assert len(sample_values(trees, 40)) == 3  # the empty leaf is not a value
