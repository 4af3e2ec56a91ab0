"""The leaf head's training command on a tiny schema, labels and persona CSV with a fake embedder."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Sequence

import numpy as np

from evaluation import placement_train as pt
from memory.engine import load_schema
from memory.engine.placement import LeafHead, LeafPlacer, paths_digest

DIM = 32
SCHEMA = load_schema(
    {
        "id": "tiny-train",
        "version": 1,
        "leaves": [
            {"path": "family/pets", "description": "Pets", "budget": 80, "aliases": ["dog", "cat"],
             "examples": ["Has a dog named Max", "Has two cats"]},
            {"path": "hobbies/outdoor", "description": "Outdoor hobbies", "budget": 80, "aliases": ["hiking"],
             "examples": ["Loves hiking", "Goes camping"]},
            {"path": "media/music", "description": "Music", "budget": 80, "aliases": ["music", "band"],
             "examples": ["Loves rock music"]},
        ],
    }
)  # fmt: skip


def fake_embed(texts: Sequence[str]) -> np.ndarray:
    """Bag of words hashed into DIM buckets, unit length: shared words -> high cosine."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"[a-z']+", text.lower()):
            out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0  # noqa: S324
        out[i] /= max(float(np.linalg.norm(out[i])), 1e-9)
    return out


def _labels(tmp_path):
    rows = []
    facts = [
        ("I have a dog", "Has a dog", "family/pets"),
        ("my cat sleeps all day", "Their cat sleeps all day", "family/pets"),
        ("I love hiking", "Loves hiking", "hobbies/outdoor"),
        ("we go camping", "Goes camping", "hobbies/outdoor"),
        ("I play in a band", "Plays in a band", "media/music"),
        ("rock music is my thing", "Rock music is their thing", "media/music"),
    ]
    for n in range(12):
        clause, fact, leaf = facts[n % len(facts)]
        rows.append(
            {"clause": clause, "fact": fact, "leaf": leaf, "alt": [], "source": f"spc:{n}:user 1:persona"}
        )
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_groups_never_straddle_folds():
    rows = [{"source": f"locomo:conv-{n % 3}:D1:{n}"} for n in range(30)]
    rows += [{"source": f"spc:{n % 7}:turn 2"} for n in range(30)]
    folds = pt.grouped_folds(rows)
    owner = {}
    for k, fold in enumerate(folds):
        for i in fold:
            assert owner.setdefault(pt.group_of(rows[i]["source"]), k) == k
    assert sorted(i for f in folds for i in f) == list(range(60))
    assert (
        pt.group_of("locomo:conv-26:D1:3") == "locomo:conv-26"
        and pt.group_of("spc:17:user 1:persona") == "spc:17"
    )


def _persona_csv(tmp_path, *dialogues: tuple[str, str]):
    path = tmp_path / "valid.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["user 1 personas", "user 2 personas", "Best Generated Conversation"])
        w.writerows([user1, user2, "User 1: hi"] for user1, user2 in dialogues)
    return path


def test_rule_labels_need_exactly_one_leaf_and_skip_gold_and_validation(tmp_path):
    path = _persona_csv(
        tmp_path,
        ("I have a dogs.\nI like hiking and my dog.", "I love my band."),
        ("I have two cats.", "I am tall."),  # dialogue 1: cited by the gold
        ("I listen to music.", ""),  # dialogue 2: past the dev limit
    )
    texts, labels = pt.rule_labelled_personas(path, SCHEMA, exclude={1}, limit=2)
    assert dict(zip(texts, labels, strict=True)) == {
        "I have a dogs": "family/pets",
        "I love my band": "media/music",
    }


def test_rule_labels_read_aliases_as_the_placer_does(tmp_path):
    # a pet alias counts only as the speaker's: "I love dogs" names no pet of theirs, so it is no pet
    leaves = SCHEMA.to_dict()["leaves"]
    owned = load_schema(
        {"id": "tiny-owned", "version": 1, "leaves": [{**leaves[0], "alias_owned": True}, *leaves[1:]]}
    )
    path = _persona_csv(tmp_path, ("I love dogs.\nI have a dog.", ""))
    texts, labels = pt.rule_labelled_personas(path, owned, exclude=set())
    assert dict(zip(texts, labels, strict=True)) == {"I have a dog": "family/pets"}


def test_rule_labels_skip_a_persona_that_is_a_gold_clause(tmp_path):
    # personas recur across dialogues: one cited by the gold must not come back from another
    path = _persona_csv(tmp_path, ("I have a dogs.\nI love my band.", ""))
    texts, _ = pt.rule_labelled_personas(path, SCHEMA, exclude=set(), gold=["i  LOVE my band"])
    assert texts == ["I have a dogs"]


def test_run_cross_validates_and_writes_a_loadable_head(tmp_path):
    out = tmp_path / "head.json"
    report = pt.run(None, out, None, 4.0, _labels(tmp_path), embed=fake_embed, schema=SCHEMA)
    assert report["gold"] == 12 and set(report["clause"]) == {"prior", "prior_alias", "head", "blend"}
    assert all(0.0 <= v <= 1.0 for v in report["clause"].values())
    assert report["clause"]["head"] >= 0.5  # the same six facts recur across folds (hashed words collide)
    # every label is from SPC: the per-source blend is the overall cross-validated blend, row by row
    assert set(report["source_split"]) == {"spc"} and report["source_split"]["spc"]["clauses"] == 12
    assert report["source_split"]["spc"]["blend"] == report["clause"]["blend"]
    head = LeafHead.load(out)
    assert head.digest == paths_digest(SCHEMA) and len(head.weights[0]) == DIM
    placer = LeafPlacer.for_schema(SCHEMA, head_path=out)
    leaf_vectors = fake_embed([t for _, t in placer.texts()]).tolist()
    clause = "I have a dog"
    assert placer.rank(clause, fake_embed([clause])[0].tolist(), leaf_vectors, top=1)[0][0] == "family/pets"


def test_word_features_are_learnt_pruned_and_shipped(tmp_path):
    out = tmp_path / "head.json"
    report = pt.run(None, out, None, 4.0, _labels(tmp_path), embed=fake_embed, schema=SCHEMA, alpha=0.5)
    assert report["lex_alpha"] == 0.5
    head = LeafHead.load(out)
    assert head.lexicon, "a word-feature head ships its lexicon"
    assert all(abs(w) >= pt.LEX_PRUNE for pairs in head.lexicon.values() for _, w in pairs)
    pets = SCHEMA.paths.index("family/pets")
    assert any(i == pets and w > 0 for i, w in head.lexicon.get("dog", ()))
    # the curve starts with everything filed; a higher threshold never files more
    filed = [point["filed"] for point in report["abstain"]]
    assert filed[0] == 1.0 and filed == sorted(filed, reverse=True)
    assert all(0.0 <= p["accuracy"] <= p["accuracy_filed"] <= 1.0 for p in report["abstain"])


def test_the_held_out_slice_is_conv_42_and_spc_100_to_199(tmp_path):
    assert pt.is_held_out("locomo:conv-42:D3:1") and not pt.is_held_out("locomo:conv-41:D3:1")
    assert pt.is_held_out("spc:100:user 1:persona") and pt.is_held_out("spc:199:turn 4")
    assert not pt.is_held_out("spc:99:turn 4") and not pt.is_held_out("spc:200:user 2:persona")
    rows = [
        {"clause": c, "fact": c, "leaf": leaf, "alt": [], "source": src}
        for n, (c, leaf) in enumerate(
            [
                ("I have a dog", "family/pets"),
                ("I love hiking", "hobbies/outdoor"),
                ("I play in a band", "media/music"),
            ]
            * 4
        )
        for src in [f"spc:{100 + n if n < 3 else n}:user 1:persona"]
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    errors = tmp_path / "errors.jsonl"
    report = pt.run(None, None, None, 4.0, path, embed=fake_embed, schema=SCHEMA, errors=errors)
    assert report["held_out"]["clauses"] == 3
    assert set(report["held_out"]) == {"clauses", "prior", "prior_alias", "head", "blend"}
    assert errors.is_file()
    assert all(not pt.is_held_out(json.loads(line)["source"]) for line in errors.read_text().splitlines())


def test_the_shipped_head_was_trained_on_todays_schema_texts_and_labels():
    """An alias, example or label edited without running the trainer again leaves a head that no
    command reproduces (its recorded accuracy is of other inputs): refit it with
    ``python -m evaluation.placement_train --out memory/engine/models/leaf_head.json``."""
    from memory.engine.placement import HEAD_PATH
    from memory.engine.schema import default_schema

    meta = json.loads(HEAD_PATH.read_text(encoding="utf-8"))
    assert meta["training"]["inputs_sha256"] == pt.inputs_digest(default_schema(), pt.LABELS)


def test_the_inputs_digest_follows_aliases_and_labels(tmp_path):
    labels = _labels(tmp_path)
    before = pt.inputs_digest(SCHEMA, labels)
    more = load_schema({**SCHEMA.to_dict(), "leaves": [
        {**SCHEMA.to_dict()["leaves"][0], "aliases": ["dog", "cat", "puppy"]}, *SCHEMA.to_dict()["leaves"][1:]]})  # fmt: skip
    assert pt.inputs_digest(more, labels) != before
    labels.write_text(
        labels.read_text() + json.dumps({"clause": "x", "fact": "x", "leaf": "media/music"}) + "\n"
    )
    assert pt.inputs_digest(SCHEMA, labels) != before
