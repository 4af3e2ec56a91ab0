"""Leaf placement: prior, aliases, a hand-made head and the shipped head (memory/engine/placement.py)."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from memory.engine import default_schema, load_schema
from memory.engine.placement import (
    DESCRIPTIONS_ONLY,
    HEAD_FORMAT,
    HEAD_PATH,
    PRIOR_ONLY,
    Blend,
    LeafHead,
    LeafPlacer,
    alias_hits,
    lexical_features,
    paths_digest,
)

SCHEMA = load_schema(
    {
        "id": "tiny-place",
        "version": 1,
        "leaves": [
            {
                "path": "identity/family/pets",
                "description": "Pets and their names",
                "budget": 80,
                "aliases": ["dog", "cat", "guinea pig"],
                "examples": ["Has a dog named Max"],
            },
            {"path": "identity/location/home", "description": "Home and housemates", "budget": 80},
            {
                "path": "behaviour/media/news",
                "description": "News sources",
                "budget": 80,
                "aliases": ["news"],
            },
        ],
    }
)
PETS, HOME, NEWS = SCHEMA.paths
# texts(): one per leaf (path + description), then the examples: pets, home, news, "Has a dog..."
LEAF_VECTORS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.6, 0.0, 0.8]]


def test_texts_list_each_leaf_then_its_examples():
    texts = LeafPlacer(SCHEMA).texts()
    assert [p for p, _ in texts] == [PETS, HOME, NEWS, PETS]
    assert texts[0][1] == "identity family pets: Pets and their names"
    assert texts[3][1] == "Has a dog named Max"


def test_alias_hits_whole_words_by_lemma():
    assert alias_hits("I have two dogs and a cat", ["dog", "cat", "news"]) == ["dog", "cat"]
    assert alias_hits("My guinea pigs are cute", ["guinea pig"]) == ["guinea pig"]
    assert alias_hits("I read a new book at home", ["news", "hometown"]) == []
    assert alias_hits("'cause I love it", ["causes"]) == []  # the old stem bonus fired here
    assert alias_hits("I went hiking", ["hike"]) == ["hike"]
    assert alias_hits("catalogue of dogma", ["cat", "dog"]) == []  # whole words only


def test_rank_prior_is_the_best_text_of_a_leaf():
    placer = LeafPlacer(SCHEMA, blend=Blend(prior=1.0, head=0.0, alias=0.0, threshold=0.5))
    # nearest to the example "Has a dog named Max", not to the pets description
    ranked = placer.rank("something", [0.6, 0.0, 0.8], LEAF_VECTORS, top=3)
    assert ranked[0] == (PETS, pytest.approx(1.0))
    assert ranked[1] == (NEWS, pytest.approx(0.8))
    assert len(ranked) == 2  # home scores 0, below the threshold
    assert placer.rank("something", [0.6, 0.0, 0.8], LEAF_VECTORS, top=1) == [ranked[0]]


def test_alias_tips_the_balance_and_threshold_refuses():
    blend = Blend(prior=1.0, head=0.0, alias=0.2, threshold=0.6)
    placer = LeafPlacer(SCHEMA, blend=blend)
    vector = [0.0, 0.7, 0.55]  # a bit nearer home than news
    assert placer.rank("I watch the news at home", vector, LEAF_VECTORS)[0][0] == NEWS
    assert placer.rank("I sit at home", vector, LEAF_VECTORS)[0][0] == HOME
    # nothing near: not filed, no "next free leaf"
    assert placer.rank("hmm", [-1.0, 0.3, 0.3], LEAF_VECTORS) == []


def _pets_flagged(flag: str) -> LeafPlacer:
    """A placer on prior alone for the tiny schema with ``flag`` set on its pets leaf."""
    leaves = SCHEMA.to_dict()["leaves"]
    flagged = load_schema(
        {"id": "tiny-flagged", "version": 1, "leaves": [{**leaves[0], flag: True}, *leaves[1:]]}
    )
    return LeafPlacer(flagged, blend=Blend(prior=1.0, head=0.0, alias=0.0, threshold=0.5))


def test_a_leaf_that_requires_an_alias_takes_only_a_clause_saying_one():
    placer = _pets_flagged("alias_required")
    near_pets = [0.6, 0.0, 0.8]
    assert placer.rank("my dog's bowl", near_pets, LEAF_VECTORS)[0][0] == PETS  # "dog's" says "dog"
    assert [p for p, _ in placer.rank("I am a vet nurse", near_pets, LEAF_VECTORS)] == [NEWS]
    # the alias must name someone of the speaker's: a generic or a past "dog" is no pet of theirs
    for generic in ("I love working with dogs", "I was afraid of dogs as a kid", "as a dog walker"):
        assert placer.rank(generic, near_pets, LEAF_VECTORS)[0][0] == NEWS, generic
    for owned in ("Dog walks are our routine", "the dog sleeps a lot", "I have two dogs", "We got a dog"):
        assert placer.rank(owned, near_pets, LEAF_VECTORS)[0][0] == PETS, owned


def test_a_leaf_of_owned_aliases_refuses_a_clause_naming_one_not_the_speakers():
    placer = _pets_flagged("alias_owned")
    near_pets = [0.6, 0.0, 0.8]
    for theirs in ("Their other dog is called Shadow", "Adopted a cute dog", "Took Max for a walk",
                   "Has a black lab named Trooper and a golden dog named Goldie"):  # fmt: skip
        assert placer.rank(theirs, near_pets, LEAF_VECTORS)[0][0] == PETS, theirs
    for nobodys in ("Loves dogs", "Is a dog groomer", "Wants to be a cat", "Loves cats and a good book"):
        assert placer.rank(nobodys, near_pets, LEAF_VECTORS)[0][0] == NEWS, nobodys
    assert placer.alias_signals("Loves dogs")[PETS] == (False, True)
    assert placer.alias_signals("Took Max for a walk")[PETS] == (False, False)  # names no alias
    # without the flag a named alias never bars the leaf
    assert LeafPlacer(SCHEMA).alias_signals("Loves dogs")[PETS] == (True, False)


def test_owned_alias_hits_need_the_speakers_kin():
    kids = ["kids", "son", "child"]
    assert alias_hits("I love working with kids", kids) == ["kids"]
    assert alias_hits("I love working with kids", kids, owned=True) == []
    assert alias_hits("I loved that book as a kid", ["kid"], owned=True) == []
    assert alias_hits("We organised a toy drive for kids in need", kids, owned=True) == []
    assert alias_hits("I am married with two kids", kids, owned=True) == ["kids"]
    assert alias_hits("We had a son in May", kids, owned=True) == ["son"]
    assert alias_hits("Took the kids to the park", kids, owned=True) == ["kids"]
    assert alias_hits("My youngest son starts school", kids, owned=True) == ["son"]
    assert alias_hits("Kids love the beach", kids, owned=True) == ["kids"]
    assert alias_hits("I have a lot of kids", kids, owned=True) == ["kids"]  # the amount is theirs
    assert alias_hits("I teach lots of kids", kids, owned=True) == []
    assert alias_hits("I own a cat and a dog", ["dog"], owned=True) == ["dog"]  # a list the speaker has
    assert alias_hits("My other son is ten", kids, owned=True) == ["son"]


def test_vectors_are_normalised_and_checked():
    placer = LeafPlacer(SCHEMA, blend=Blend(1.0, 0.0, 0.0, 0.5))
    scaled = [[5 * x for x in v] for v in LEAF_VECTORS]
    index = placer.vectors(scaled)
    assert placer.rank("x", [0.0, 3.0, 0.0], index) == [(HOME, pytest.approx(1.0))]
    with pytest.raises(ValueError, match="3 vectors for 4 leaf texts"):
        placer.vectors(LEAF_VECTORS[:3])


def _head_file(tmp_path, schema, rows, bias, blend, lexicon=None):
    flat = [x for row in rows for x in row]
    doc = {
        "format": HEAD_FORMAT,
        "paths_digest": paths_digest(schema),
        "dim": len(rows[0]),
        "scale": 2.0,
        "blend": blend,
        "paths": list(schema.paths),
        "bias": bias,
        "weights_f16": base64.b64encode(struct.pack(f"<{len(flat)}e", *flat)).decode(),
    }
    if lexicon is not None:
        doc["lexicon"] = lexicon
    path = tmp_path / "head.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_head_moves_the_choice(tmp_path):
    # the head says "home" for anything pointing along the first axis (weights are scaled by 2)
    rows = [[0.0, 0.0, 0.0], [5.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    blend = {"prior": 1.0, "head": 2.0, "alias": 0.0, "threshold": 0.5}
    path = _head_file(tmp_path, SCHEMA, rows, [0.0, 0.0, 0.0], blend)
    placer = LeafPlacer.for_schema(SCHEMA, head_path=path)
    assert placer.head is not None and placer.blend == Blend(**blend)
    probs = placer.head.probabilities([1.0, 0.0, 0.0])
    assert sum(probs.values()) == pytest.approx(1.0) and max(probs, key=probs.get) == HOME
    assert placer.rank("x", [1.0, 0.0, 0.0], LEAF_VECTORS)[0][0] == HOME
    assert (
        LeafPlacer(SCHEMA, blend=Blend(1.0, 0.0, 0.0, 0.5)).rank("x", [1.0, 0.0, 0.0], LEAF_VECTORS)[0][0]
        == PETS
    )


def test_lexical_features_are_lemmas_and_word_pairs():
    assert lexical_features("Moved to Lisbon") >= {"moved", "move", "to", "lisbon", "moved to", "to lisbon"}
    assert "dog" in lexical_features("my dogs") and "my dogs" in lexical_features("my dogs")
    assert lexical_features("") == frozenset()


def test_word_weights_of_the_head_move_the_choice(tmp_path):
    # the vector part is silent; "moved to" pushes home (index 1), "dog" pushes pets (index 0)
    blend = {"prior": 0.0, "head": 1.0, "alias": 0.0, "threshold": 0.0}
    lexicon = {"moved to": "1:3.0", "dog": "0:2.5 2:-1"}
    path = _head_file(tmp_path, SCHEMA, [[0.0, 0.0, 0.0]] * 3, [0.0, 0.0, 0.0], blend, lexicon)
    placer = LeafPlacer.for_schema(SCHEMA, head_path=path)
    assert placer.head is not None and placer.head.lexicon["dog"] == ((0, 2.5), (2, -1.0))
    assert placer.rank("We moved to Porto", [1.0, 0.0, 0.0], LEAF_VECTORS)[0][0] == HOME
    assert placer.rank("I walk my dogs", [1.0, 0.0, 0.0], LEAF_VECTORS)[0][0] == PETS
    probs = placer.head.probabilities([1.0, 0.0, 0.0])  # no clause: the words add nothing
    assert probs[PETS] == pytest.approx(1 / 3)
    (tmp_path / "bad").mkdir()  # another file name: loaded heads are cached by path
    bad = _head_file(tmp_path / "bad", SCHEMA, [[0.0, 0.0, 0.0]] * 3, [0.0] * 3, blend, {"dog": "7:1.0"})
    with pytest.raises(ValueError, match="out of range"):
        LeafHead.load(bad)
    assert LeafPlacer.for_schema(SCHEMA, head_path=bad).head is None


def test_a_head_for_other_leaves_is_not_used(tmp_path):
    other = load_schema(
        {"id": "x", "version": 1, "leaves": [{"path": "a/b", "description": "d", "budget": 9}]}
    )
    path = _head_file(
        tmp_path, other, [[1.0, 0.0, 0.0]], [0.0], {"prior": 1, "head": 1, "alias": 0, "threshold": 0}
    )
    assert LeafPlacer.for_schema(SCHEMA, head_path=path).head is None
    with pytest.raises(ValueError, match="another schema"):
        LeafPlacer(SCHEMA, LeafHead.load(path))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "nope"}))
    assert LeafPlacer.for_schema(SCHEMA, head_path=bad).head is None


def test_shipped_head_loads_is_small_and_only_for_the_default_schema():
    assert HEAD_PATH.stat().st_size <= 1_000_000
    schema = default_schema()
    placer = LeafPlacer.for_schema(schema)
    assert placer.head is not None and placer.head.paths == schema.paths
    assert len(placer.head.weights[0]) == 384
    assert placer.blend.head > 0 and 0 < placer.blend.threshold < 2
    meta = json.loads(HEAD_PATH.read_text())
    assert "../shared/benchmarks/" in json.dumps(meta["training"]) and "/work/" not in json.dumps(meta)
    # a schema without a head uses the prior-and-alias blend the trainer picked with this head
    assert Blend(**meta["training"]["prior_only_blend"]) == PRIOR_ONLY
    assert LeafPlacer.for_schema(SCHEMA).head is None  # any other schema: prior and aliases only
    # one text per leaf plus each example
    assert len(placer.texts()) == len(schema) + sum(len(leaf.examples) for leaf in schema.leaves)


def test_a_tenant_schema_without_examples_places_by_descriptions():
    bare = load_schema(
        {
            "id": "tenant-bare",
            "version": 3,
            "leaves": [
                {"path": "pets", "description": "Pets", "budget": 80},
                {"path": "work", "description": "Job", "budget": 80, "aliases": ["job"]},
            ],
        }
    )
    placer = LeafPlacer.for_schema(bare)
    assert placer.head is None and placer.blend == DESCRIPTIONS_ONLY
    assert [p for p, _ in placer.texts()] == ["pets", "work"]  # one text per leaf, nothing else
    vectors = [[1.0, 0.0], [0.0, 1.0]]
    assert placer.rank("I have a cat", [0.9, 0.1], vectors)[0][0] == "pets"
    assert placer.rank("my new job", [0.5, 0.45], vectors)[0][0] == "work"  # the alias tips it
    assert placer.rank("hmm", [-1.0, 0.0], vectors) == []
    # with examples but no head: prior and aliases with their own threshold
    assert LeafPlacer.for_schema(SCHEMA).blend == PRIOR_ONLY
