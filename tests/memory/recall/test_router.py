import logging

import pytest

from memory.recall.router import content_words, cue_signal, relevant_paths, route

TREE = {
    "identity/occupation/current_role": "software engineer at a bike shop",
    "behavioral/sport/current": "swimming three times a week",
    "identity/location/city": "",
}


def test_fast_when_tree_covers_query_and_no_cue():
    d = route("What sport does the user do, swimming?", TREE, threshold=0.5)
    assert d.mode == "fast"
    assert d.signals["cue"] == 0.0
    assert d.signals["overlap"] >= 0.5


@pytest.mark.parametrize(
    "query",
    ["Why did I stop running?", "When did I start swimming?", "What did I say last time about my knee?"],
)
def test_deep_on_episodic_temporal_causal_cues(query):
    d = route(query, TREE, threshold=0.5)
    assert d.mode == "deep"
    assert d.signals["cue"] == 1.0
    assert "cue" in d.reason


def test_deep_when_query_not_covered_by_tree():
    d = route("favourite pizza topping", TREE, threshold=0.5)
    assert d.mode == "deep"
    assert d.signals["overlap"] == 0.0
    assert "covers 0/" in d.reason


def test_empty_tree_routes_deep():
    d = route("what sport do I do", {}, threshold=0.5)
    assert d.mode == "deep" and d.reason == "tree is empty"


def test_threshold_is_respected():
    # weak cue (0.5) and full coverage: deep at 0.5, fast at 0.6
    q = "do you remember my swimming"
    assert cue_signal(q)[0] == 0.5
    assert route(q, TREE, threshold=0.5).mode == "deep"
    assert route(q, TREE, threshold=0.6).mode == "fast"


def test_empty_leaves_do_not_count_as_coverage():
    d = route("which city", {"identity/location/city": ""}, threshold=0.5)
    assert d.signals["leaves"] == 0 and d.mode == "deep"


def test_each_decision_is_logged(caplog):
    with caplog.at_level(logging.INFO, logger="memory.recall.router"):
        route("why", TREE)
    assert any("router decision mode=deep" in r.getMessage() for r in caplog.records)


def test_relevant_paths_ranked_by_overlap():
    assert relevant_paths("swimming week", TREE)[0] == "behavioral/sport/current"
    assert relevant_paths("nothing matches", TREE) == []


def test_content_words_drop_stop_words_and_plurals():
    assert content_words("What are my bikes?") == {"bike"}
