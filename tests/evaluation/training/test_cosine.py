"""The cosine context step's candidate choice (evaluation.training.cosine): thresholds, ``k``,
filled leaves and the lexical bonus; invented lines and scores."""

from __future__ import annotations

from evaluation.training.cosine import (
    LEXICAL_BONUS,
    CandidateSettings,
    lexical_bonus,
    select_candidates,
    user_sentences,
)


def _chunk(*user_texts):
    turns = []
    for text in user_texts:
        turns += [{"role": "user", "content": text}, {"role": "assistant", "content": "Tell me more!"}]
    return turns


def test_user_sentences_are_numbered_in_order_with_their_turn():
    sentences = user_sentences(_chunk("I run daily. I'm a chef.", "I have a cat."))
    assert [(s.id, s.text, s.turn) for s in sentences] == [
        (1, "I run daily.", 0),
        (2, "I'm a chef.", 0),
        (3, "I have a cat.", 2),
    ]


def test_select_candidates_threshold_k_and_filled_leaves():
    sentences = user_sentences(_chunk("I run daily. I'm a chef."))
    paths = ["a/b/run", "a/b/job", "a/b/pets", "a/b/old"]
    scores = [[0.8, 0.1, 0.2, 0.0], [0.1, 0.7, 0.05, 0.35]]
    picked = select_candidates(
        sentences, paths, scores, {"a/b/old": "x"}, CandidateSettings(k=1, threshold=0.3)
    )
    assert [c.path for c in picked.leaves] == ["a/b/run", "a/b/old"]  # k=1 best + a filled leaf that matches
    assert picked.best_leaf == {1: ("a/b/run", 0.8), 2: ("a/b/job", 0.7)}
    none = select_candidates(sentences, paths, [[0.1] * 4, [0.2] * 4], {}, CandidateSettings(threshold=0.3))
    assert none.empty


def test_lexical_bonus_names_and_introductions():
    paths = [
        "identity/relationships/partner",
        "identity/relationships/partner_history",
        "identity/name/full_name",
    ]
    assert lexical_bonus("I'll go with my partner Tomás.", paths) == [LEXICAL_BONUS, 0.0, 0.0]
    assert lexical_bonus("Hi! I'm Maya.", paths)[2] > LEXICAL_BONUS
    assert lexical_bonus("I'm tired.", paths) == [0.0, 0.0, 0.0]
