"""LLM-free quality metrics (evaluation/quality.py) with a fake bag-of-words embedder."""

import zlib

import numpy as np
import pytest

from evaluation.quality import (
    answer_tokens,
    context_answer_recall,
    invented_tokens,
    observation_coverage,
    pool_coverage,
    tree_clauses,
    value_metrics,
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
