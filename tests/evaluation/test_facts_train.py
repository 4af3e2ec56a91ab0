"""The fact classifier's training pipeline on a tiny synthetic LoCoMo / SPC pair with a fake embedder."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from evaluation import facts_train as ft
from memory.engine.facts import FEATURES, LABELS, FactClassifier

DIM = 32


def fake_embed(texts: Sequence[str]) -> np.ndarray:
    """Bag of words hashed into DIM buckets, unit length: shared words -> high cosine."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"[a-z']+", text.lower()):
            out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
        out[i] /= max(float(np.linalg.norm(out[i])), 1e-9)
    return out


def _turn(speaker: str, dia: str, text: str, caption: str = "") -> dict:
    turn = {"speaker": speaker, "dia_id": dia, "text": text}
    if caption:
        turn["blip_caption"] = caption
    return turn


def _conversation(sample_id: str, pets: str, job: str) -> dict:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("Ann", "D1:1", "Hey Bob! How have you been?"),
                _turn("Bob", "D1:2", f"Hi Ann! I adopted a {pets} named Rex last week."),
                _turn(
                    "Ann", "D1:3", "That is great! She is so kind to animals, my aunt.", "a photo of a dog"
                ),
                _turn("Bob", "D1:4", f"I work as a {job} at the city hospital; what about you?"),
            ],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [
                _turn("Ann", "D2:1", "I started painting sunsets in the park every Sunday."),
                _turn(
                    "Bob", "D2:2", "Sounds fun! Anyway we have been friends since you and I met at school."
                ),
                _turn("Ann", "D2:3", "He loves fishing in the lake."),
            ],
        },
        "observation": {
            "session_1_observation": {
                "Bob": [
                    [f"Bob adopted a {pets} named Rex.", "D1:2"],
                    [f"Bob works as a {job} at the city hospital.", "D1:4"],
                ],
                "Ann": [],
            },
            "session_2_observation": {
                "Ann": [["Ann paints sunsets in the park on Sundays.", "D2:1"]],
                "Bob": [],
            },
        },
        "qa": [],
    }


def _spc_row(n: int) -> dict:
    return {
        "user 1 personas": "I love to bake cookies.\nI have two dogs.",
        "user 2 personas": f"I am a nurse.\nI live in town {n}.",
        "Best Generated Conversation": (
            "User 1: Hi!\nUser 2: Hello, what do you do for work?\nUser 1: I love to bake cookies.\n"
            f"User 2: I am a nurse. I live in town {n}.\nUser 1: The weather is rainy today.\n"
            "User 2: What kind of cookies do you bake?\nUser 1: You too, bye!"
        ),
    }


@pytest.fixture
def data() -> tuple[list[dict], list[dict]]:
    return [_conversation("conv-x", "puppy", "nurse"), _conversation("conv-v", "kitten", "chef")], [
        _spc_row(n) for n in range(6)
    ]


def _by_text(examples: Sequence[ft.Example]) -> dict[str, str]:
    return {e.text: e.label for e in examples}


def test_neutralising_both_sides():
    assert (
        ft.neutral_clause("I adopted my puppy, Bob", "Bob Smith") == "someone adopted someone puppy, someone"
    )
    assert ft.neutral_observation("Bob adopted his puppy; Bob's dog is Rex", "Bob") == (
        "someone adopted someone puppy; someone dog is Rex"
    )


def test_locomo_labels(data):
    records, _ = data
    _, split = ft.clause_splitter()
    turns = ft.locomo_turns(records, ["conv-x"], split)
    assert {t.group for t in turns} == {"conv-x/s1", "conv-x/s2"}
    vectors = ft.embed_texts(ft.texts_to_embed(turns), fake_embed)
    labels = _by_text(ft.label_all(turns, vectors))
    adopted = next(t for t in labels if "adopted" in t)
    assert labels[adopted] == "self"
    assert labels[next(t for t in labels if "city hospital" in t)] == "self"
    assert labels[next(t for t in labels if "painting sunsets" in t)] == "self"
    assert labels["He loves fishing in the lake."] == "third_party"
    assert labels[next(t for t in labels if "shares an image" in t)] == "none"
    assert labels[next(t for t in labels if "friends since" in t)] == "relation"
    assert all(label in LABELS for label in labels.values())


def test_spc_labels(data):
    _, rows = data
    _, split = ft.clause_splitter()
    turns = ft.spc_turns(rows, range(2), split)
    assert {t.group for t in turns} == {"spc-0", "spc-1"}
    vectors = ft.embed_texts(ft.texts_to_embed(turns), fake_embed)
    labels = _by_text(ft.label_all(turns, vectors))
    assert labels["I love to bake cookies."] == "self"
    assert labels["I am a nurse."] == "self"
    assert labels.get("Hi!", "none") == "none"
    assert not any(label == "self" for text, label in labels.items() if "?" in text)


def test_embed_cache_embeds_each_text_once(tmp_path: Path):
    calls: list[list[str]] = []

    def counting(texts: Sequence[str]) -> np.ndarray:
        calls.append(list(texts))
        return fake_embed(texts)

    cache = tmp_path / "cache.npz"
    first = ft.embed_texts(["a b", "c d"], counting, cache)
    second = ft.embed_texts(["a b", "e f"], counting, cache)
    assert calls == [["a b", "c d"], ["e f"]]
    assert np.allclose(first["a b"], second["a b"])


def test_keep_scores_and_threshold():
    truth = np.array([True, True, False, False])
    scores = ft.keep_scores(truth, np.array([True, False, False, True]))
    assert scores == {"accuracy": 0.5, "precision": 0.5, "recall": 0.5, "f1": 0.5}
    t, f1 = ft.best_threshold(truth, np.array([0.9, 0.7, 0.2, 0.1]), np.ones(4))
    assert f1 == 1.0 and 0.2 < t <= 0.7


def test_train_end_to_end(data):
    records, rows = data
    artefact, summary = ft.train(
        records,
        rows,
        fake_embed,
        locomo_name="../shared/benchmarks/locomo/x.json",
        spc_name="../shared/benchmarks/spc/valid.csv",
        train_convs=["conv-x"],
        valid_convs=["conv-v"],
        spc_train=range(0, 4),
        spc_valid=range(4, 6),
        folds=2,
        grid=(1.0,),
        command="python -m evaluation.facts_train ...",
    )
    classifier = FactClassifier.from_dict(json.loads(json.dumps(artefact)))
    assert classifier.dim == DIM
    assert artefact["labels"] == list(LABELS) and artefact["features"] == list(FEATURES)
    assert len(artefact["weights"]) == 4 and all(len(r) == DIM + len(FEATURES) for r in artefact["weights"])
    prov = artefact["provenance"]
    assert prov["data"]["spc"]["dialogues"] == "0..3" and prov["data"]["spc"]["held_out"] == "4..5"
    assert prov["data"]["locomo"]["conversations"] == ["conv-x"]
    assert prov["counts"]["locomo"]["self"] >= 3 and prov["counts"]["spc"]["self"] >= 4
    assert set(prov["cv"]["oof_weighted"]) == {"accuracy", "precision", "recall", "f1"}
    assert prov["cv"]["threshold"] == artefact["threshold"]
    assert prov["cv"]["oof_weighted"]["f1"] > 0.5  # the fixture's facts share words with their observations
    assert set(summary["held_out"]) == {"locomo", "spc"}
    assert summary["held_out"]["spc"]["n"] > 0
    # weights are rounded to 5 significant digits
    assert all(len(f"{abs(w):.10g}".replace(".", "").lstrip("0")) <= 5 for w in artefact["weights"][0])


def test_train_is_reproducible(data):
    records, rows = data
    kwargs = dict(
        locomo_name="l", spc_name="s", train_convs=["conv-x"], valid_convs=["conv-v"],
        spc_train=range(4), spc_valid=range(4, 6), folds=2, grid=(0.3, 1.0),
    )  # fmt: skip
    a, _ = ft.train(records, rows, fake_embed, **kwargs)
    b, _ = ft.train(records, rows, fake_embed, **kwargs)
    assert a == b


def test_main_writes_the_artefact(tmp_path: Path, data, capsys, monkeypatch):
    records, rows = data
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    locomo = bench / "locomo.json"
    locomo.write_text(json.dumps(records), encoding="utf-8")
    spc = bench / "valid.csv"
    with spc.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "models" / "facts.json"
    # the real splits name conv-26.. and SPC 0..799: shrink them to this fixture's
    for name, value in [("TRAIN_CONVS", ("conv-x",)), ("VALID_CONVS", ("conv-v",)), ("SPC_TRAIN", range(4)),
                        ("SPC_VALID", range(4, 6)), ("FOLDS", 2), ("C_GRID", (1.0,))]:  # fmt: skip
        monkeypatch.setattr(ft, name, value)
    assert ft.main(["--locomo", str(locomo), "--spc", str(spc), "--out", str(out)], embed=fake_embed) == 0
    text = out.read_text(encoding="utf-8")
    assert str(tmp_path) not in text
    written = json.loads(text)
    assert written["provenance"]["data"]["locomo"]["file"] == "../shared/benchmarks/locomo.json"
    assert FactClassifier.load(out).dim == DIM
    assert "wrote" in capsys.readouterr().out
