from __future__ import annotations

import jsonschema
import pytest

from memory.engine.render import count_tokens
from serving.output_schema import MAX_OPS, MAX_VALUE_CHARS, op_list_schema
from serving.prompt import PROMPT_VERSION, RULES, build_prompt, static_prefix


def test_static_part_is_shared_and_per_call_part_comes_last(schema, chunks):
    a = build_prompt(schema, {}, chunks[0]["turns"])
    b = build_prompt(schema, {"identity/occupation/current_role": "nurse"}, chunks[2]["turns"])
    assert a.static == b.static == static_prefix(schema)
    assert a.text.startswith(a.static) and a.text.endswith(a.dynamic)
    assert a.dynamic != b.dynamic
    assert "identity/occupation/current_role: nurse" in b.dynamic
    assert "identity/occupation/current_role: nurse" not in b.static
    assert chunks[2]["turns"][0]["content"] in b.dynamic
    assert a.prompt_version == PROMPT_VERSION


def test_static_part_lists_every_leaf_with_its_description_but_no_budget_numbers(schema):
    text = static_prefix(schema)
    for leaf in schema.leaves:
        assert f"{leaf.path}: {leaf.description}" in text
        assert f" | {leaf.budget} | " not in text


@pytest.mark.parametrize(
    "phrase",
    [
        "keep what is still true in the old note",  # integrate on UPDATE
        "latest explicit statement wins",
        "At most one operation per slot",
        "most specific slot",
        "NO_OP",
        "asks you to forget it",
    ],
)
def test_rules_state_the_update_procedure(phrase):
    assert phrase.replace("\n", " ") in RULES.replace("\n", " ").replace("  ", " ")


def test_empty_tree_is_said_explicitly(schema, chunks):
    assert "Filled slots:\n(none)" in build_prompt(schema, {}, chunks[0]["turns"]).dynamic


def test_static_share_of_prompt_tokens_on_a_realistic_chunk(schema, chunks):
    tree = {leaf.path: "a short note of about eight words in it" for leaf in schema.leaves[:15]}
    prompt = build_prompt(schema, tree, chunks[0]["turns"])
    share = count_tokens(prompt.static) / count_tokens(prompt.text)
    assert share >= 0.6


def test_output_schema_path_enum_and_caps(schema):
    js = op_list_schema(schema)
    jsonschema.Draft202012Validator.check_schema(js)
    items = js["properties"]["ops"]["items"]["anyOf"]
    assert items[0]["properties"]["path"]["enum"] == list(schema.paths)
    largest = max(leaf.budget for leaf in schema.leaves)
    assert items[0]["properties"]["value"]["maxLength"] == min(largest, MAX_VALUE_CHARS)
    assert js["properties"]["ops"]["maxItems"] == MAX_OPS


def test_output_schema_accepts_valid_and_refuses_unknown_paths_and_long_lists(schema):
    validator = jsonschema.Draft202012Validator(op_list_schema(schema, max_ops=3))
    path = schema.paths[0]
    good = {"ops": [{"op": "ADD", "path": path, "value": "x"}, {"op": "DELETE", "path": path, "value": None}]}
    assert validator.is_valid(good)
    assert validator.is_valid({"ops": [{"op": "NO_OP", "path": None, "value": None}]})
    assert not validator.is_valid({"ops": [{"op": "ADD", "path": "made/up/path", "value": "x"}]})
    assert not validator.is_valid({"ops": [{"op": "ADD", "path": path, "value": "x"}] * 4})
    assert not validator.is_valid({"ops": [{"op": "DELETE", "path": path, "value": "x"}]})
    assert not validator.is_valid(
        {"ops": [{"op": "ADD", "path": path, "value": "x" * (MAX_VALUE_CHARS + 1)}]}
    )
    assert not validator.is_valid({"ops": []})
