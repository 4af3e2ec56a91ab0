from __future__ import annotations

import copy
import json

import pytest

from memory.engine import SchemaError, default_schema, get_schema, load_schema, shipped_schemas
from memory.engine.schema import SCHEMA_DIR

from .conftest import TINY


def test_tiny_schema_shape(tiny):
    assert tiny.paths == (
        "identity/name",
        "identity/family/pets",
        "body/health/conditions",
        "behaviour/hobbies",
    )
    assert tiny.leaf("identity/name").budget == 20
    assert tiny.leaf("identity/family/pets").tier == "normal"
    assert tiny.is_leaf("body/health/conditions") and not tiny.is_inner("body/health/conditions")
    assert tiny.is_inner("identity/family") and tiny.is_inner("body") and not tiny.is_leaf("body")
    assert tiny.prefixes() == ("behaviour", "body", "body/health", "identity", "identity/family")
    assert tiny.leaf("nope") is None
    assert tiny.trunks == ("identity", "body", "behaviour")


def test_flat_form_round_trips(tiny):
    again = load_schema(tiny.to_dict())
    assert again == tiny and again.paths == tiny.paths


def test_load_from_path(tmp_path, tiny):
    f = tmp_path / "tiny.v1.json"
    f.write_text(json.dumps(TINY), encoding="utf-8")
    assert load_schema(f) == tiny
    assert load_schema(str(f)) == tiny


def _broken(mutate):
    data = copy.deepcopy(TINY)
    mutate(data)
    return data


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (
            lambda d: d["tree"]["identity"]["family"].update(description="x"),
            "identity/family: inner node carries",
        ),
        (
            lambda d: d["tree"]["behaviour"]["hobbies"].update(budget=0),
            "behaviour/hobbies: budget must be a positive",
        ),
        (lambda d: d["tree"]["behaviour"]["hobbies"].update(budget=-5), "behaviour/hobbies"),
        (lambda d: d["tree"]["behaviour"]["hobbies"].update(budget="huge"), "unknown budget name 'huge'"),
        (
            lambda d: d["tree"]["behaviour"]["hobbies"].update(tier="secret"),
            "behaviour/hobbies: unknown tier 'secret'",
        ),
        (
            lambda d: d["tree"]["behaviour"]["hobbies"].update(description=" "),
            "behaviour/hobbies: description",
        ),
        (lambda d: d["tree"]["behaviour"]["hobbies"].pop("budget"), "behaviour/hobbies: leaf has no budget"),
        (lambda d: d["tree"]["behaviour"]["hobbies"].update(colour="red"), "behaviour/hobbies"),
        (
            lambda d: d["tree"].update(Body={"x": {"description": "d", "budget": 5}}),
            "'Body' is not lower_snake",
        ),
        (
            lambda d: d["tree"]["behaviour"].update(history={"description": "d", "budget": 5}),
            "behaviour/history: a leaf may not be named 'history'",
        ),
        (lambda d: d["tree"].update(empty={}), "empty: empty inner node"),
        (lambda d: d["tree"].update(leafy="text"), "leafy: inner nodes must hold objects"),
        (lambda d: d.update(version=0), "version must be a positive integer"),
        (lambda d: d.update(id="Bad Id"), "schema id must be a lowercase slug"),
        (lambda d: d.pop("tree"), "no 'tree' or 'leaves'"),
    ],
)
def test_invalid_schemas_name_the_offender(mutate, needle):
    with pytest.raises(SchemaError) as err:
        load_schema(_broken(mutate))
    assert needle in str(err.value)


def test_flat_form_duplicate_and_prefix_conflict():
    leaf = {"description": "d", "budget": 10}
    with pytest.raises(SchemaError, match="a/b: duplicate path"):
        load_schema({"id": "x", "version": 1, "leaves": [{"path": "a/b", **leaf}, {"path": "a/b", **leaf}]})
    with pytest.raises(SchemaError, match="a/b: inner node carries a value"):
        load_schema({"id": "x", "version": 1, "leaves": [{"path": "a/b", **leaf}, {"path": "a/b/c", **leaf}]})


def test_duplicate_json_keys_in_file_are_refused(tmp_path):
    f = tmp_path / "dup.json"
    f.write_text(
        '{"id": "x", "version": 1, "tree": {"a": {"description": "d", "budget": 5}, '
        '"a": {"description": "e", "budget": 5}}}',
        encoding="utf-8",
    )
    with pytest.raises(SchemaError, match="duplicate key 'a'"):
        load_schema(f)


def test_unreadable_sources(tmp_path):
    with pytest.raises(SchemaError, match="cannot read"):
        load_schema(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(SchemaError, match="not valid JSON"):
        load_schema(bad)


def test_default_schema_is_rich_and_well_formed():
    s = default_schema()
    assert s.key == ("personatree-default", 1)
    assert s is default_schema()  # cached
    assert 150 <= len(s) <= 220
    assert s.trunks == ("body", "mind", "personality", "identity", "behaviour")
    for path in (
        "body/appearance/height",
        "mind/emotion/baseline_mood",
        "personality/traits/openness",
        "identity/occupation/current_role",
        "behaviour/habits/exercise",
        "identity/name/full_name",
        "identity/family/pets",
        "behaviour/food/favourite_foods",
        "body/health/conditions",
    ):
        assert s.is_leaf(path), path
    for leaf in s.leaves:
        words = len(leaf.description.split())
        assert 6 <= words <= 14, (leaf.path, leaf.description)
        assert leaf.budget in (160, 400, 600)
    tiers = {leaf.path: leaf.tier for leaf in s.leaves}
    for special in (
        "body/health/conditions",
        "identity/beliefs/religion",
        "identity/beliefs/politics",
        "identity/sexuality/orientation",
        "identity/background/ethnicity",
    ):
        assert tiers[special] == "special", special
    assert tiers["behaviour/media/music"] == "normal"


def test_registry_of_shipped_schemas():
    assert ("personatree-default", 1) in shipped_schemas()
    assert get_schema("personatree-default", 1) is default_schema()
    with pytest.raises(SchemaError, match="unknown schema 'personatree-default' v99"):
        get_schema("personatree-default", 99)
    with pytest.raises(SchemaError, match="unknown schema"):
        get_schema("../etc/passwd", 1)
    for path in SCHEMA_DIR.glob("*.json"):
        load_schema(path)  # every shipped file validates


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("aliases", "dog", "aliases must be a list"),
        ("aliases", ["dog", ""], "aliases must hold non-empty strings"),
        ("aliases", ["dog", 3], "aliases must hold non-empty strings"),
        ("aliases", ["x" * 41], "longer than 40"),
        ("aliases", [f"a{i}" for i in range(25)], "at most 24"),
        ("aliases", ["dog", "Dog"], "duplicate aliases item 'Dog'"),
        ("examples", ["Has a dog"] * 2, "duplicate examples"),
        ("examples", ["Has a dog named " + "x" * 120], "longer than 120"),
        ("examples", [f"Has pet {i}" for i in range(7)], "at most 6"),
        ("single", "yes", "single must be true or false"),
        ("single", 1, "single must be true or false"),
        ("alias_required", "yes", "alias_required must be true or false"),
        ("alias_owned", 1, "alias_owned must be true or false"),
    ],
)
def test_placement_fields_are_validated(field, value, needle):
    with pytest.raises(SchemaError) as err:
        load_schema(_broken(lambda d: d["tree"]["identity"]["family"]["pets"].update({field: value})))
    assert "identity/family/pets" in str(err.value) and needle in str(err.value)


@pytest.mark.parametrize("flag", ["alias_required", "alias_owned"])
def test_alias_flags_need_aliases(flag):
    with pytest.raises(SchemaError, match=f"{flag} needs aliases"):
        load_schema(
            _broken(lambda d: d["tree"]["identity"]["family"]["pets"].update({flag: True, "aliases": []}))
        )


def test_placement_fields_default_load_and_round_trip(tiny):
    pets = tiny.leaf("identity/family/pets")
    assert (pets.aliases, pets.examples, pets.single) == ((), (), False)
    assert "aliases" not in tiny.to_dict()["leaves"][1]  # unset fields stay out of the document
    data = _broken(
        lambda d: d["tree"]["identity"]["family"]["pets"].update(
            aliases=["dog", " guinea   pig "], examples=["Has a dog named Max"], single=True, alias_owned=True
        )
    )
    s = load_schema(data)
    pets = s.leaf("identity/family/pets")
    assert pets.aliases == ("dog", "guinea pig") and pets.examples == ("Has a dog named Max",) and pets.single
    assert pets.alias_owned and s.to_dict()["leaves"][1]["alias_owned"] is True
    assert load_schema(s.to_dict()) == s and s != tiny  # metadata is part of the leaf
    with pytest.raises(SchemaError, match="inner node carries a value"):
        load_schema(_broken(lambda d: d["tree"]["identity"]["family"].update(aliases=["kin"])))


def test_default_schema_carries_placement_metadata():
    s = default_schema()
    assert all(leaf.examples for leaf in s.leaves)
    assert sum(bool(leaf.aliases) for leaf in s.leaves) >= 200
    pets = s.leaf("identity/family/pets")
    assert {"dog", "cat", "puppy"} <= set(pets.aliases) and pets.alias_owned and not pets.alias_required
    single = {leaf.path for leaf in s.leaves if leaf.single}
    for path in (
        "identity/location/current_city",
        "identity/occupation/employer",
        "identity/occupation/current_role",
        "identity/relationships/status",
        "body/basics/age",
    ):
        assert path in single, path
    assert "identity/family/pets" not in single and "behaviour/hobbies/main" not in single
    # the stem-match traps of the old bonus are not aliases
    aliases = {a for leaf in s.leaves for a in leaf.aliases}
    assert not {"new", "'cause", "cause", "home", "like", "love"} & aliases
