"""The fact classifier: lexical features, inference on a hand-made artefact, the shipped artefact."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memory.engine.facts import (
    DEFAULT_PATH,
    FEATURES,
    KEEP_LABELS,
    LABELS,
    SPECIFIC_FLOOR,
    FactClassifier,
    FactVerdict,
    lexical_features,
    specific_statement,
)

DIM = 3


def feats(clause: str) -> dict[str, float]:
    values = lexical_features(clause)
    assert len(values) == len(FEATURES)
    assert all(0.0 <= v <= 1.0 for v in values)
    return dict(zip(FEATURES, values, strict=True))


def test_first_person_and_family():
    f = feats("I just moved to Lisbon with my husband and my dog.")
    assert f["first_subject"] == 1.0
    assert f["first_count"] == pytest.approx(3 / 4)
    assert f["my_family"] == 1.0 and f["my_pet"] == 1.0
    assert f["proper_mid"] == 1.0
    assert f["question"] == 0.0 and f["third_subject"] == 0.0


def test_small_talk_cues():
    f = feats("Wow, that's so cool, how about you?")
    assert f["question"] == 1.0 and f["second_person"] > 0 and f["evaluative"] == 1.0
    assert f["first_subject"] == 0.0
    assert feats("Thanks, bye!")["greeting"] == 1.0
    assert feats("Thanks, bye!")["exclaim"] == 1.0
    assert feats("That sounds amazing")["deictic_subject"] == 1.0
    assert feats("Don't forget to call your mom")["imperative"] == 1.0
    assert feats("Life is short")["generic"] == 1.0
    assert feats("[shares an image: a photo of a dog on a couch]")["caption"] == 1.0


def test_third_person_subject():
    assert feats("She is so kind to everyone")["third_subject"] == 1.0
    assert feats("Maria was my best friend in school")["third_subject"] == 1.0
    assert feats("Painting keeps me sane")["third_subject"] == 0.0
    assert feats("I think she is kind")["third_subject"] == 0.0


def test_tense_number_and_plans():
    assert feats("I went hiking two years ago")["past"] == 1.0
    assert feats("I went hiking two years ago")["has_number"] == 1.0
    assert feats("I started painting in 2019")["past"] == 1.0
    assert feats("I'm planning to run a marathon")["future"] == 1.0
    assert feats("I am going to learn Spanish")["future"] == 1.0
    assert feats("I love hiking")["future"] == 0.0
    assert feats("I love hiking")["preference"] == 1.0
    assert feats("We have been friends for years")["we_subject"] == 1.0


def test_words_scale():
    assert feats("")["words"] == 0.0 and feats("")["short"] == 1.0
    assert feats(" ".join(["word"] * 60))["words"] == 1.0


def artefact(threshold: float = 0.5) -> dict:
    """Vector dim 3: axis 0 votes self, axis 1 relation, axis 2 none; "question" votes none hard."""
    width = DIM + len(FEATURES)
    rows = [[0.0] * width for _ in LABELS]
    rows[0][0] = 4.0
    rows[1][1] = 4.0
    rows[3][2] = 4.0
    rows[2][DIM + FEATURES.index("third_subject")] = 6.0
    rows[3][DIM + FEATURES.index("question")] = 8.0
    return {
        "labels": list(LABELS),
        "features": list(FEATURES),
        "dim": DIM,
        "threshold": threshold,
        "weights": rows,
        "bias": [0.0, 0.0, 0.0, 0.0],
        "provenance": {"note": "hand-made for a test"},
    }


@pytest.fixture
def classifier(tmp_path: Path) -> FactClassifier:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(artefact()), encoding="utf-8")
    return FactClassifier.load(path)


def test_probabilities_are_a_softmax(classifier: FactClassifier):
    p = classifier.probabilities("I love hiking", [1.0, 0.0, 0.0])
    assert sum(p) == pytest.approx(1.0)
    e4 = math.exp(4.0)
    assert p[0] == pytest.approx(e4 / (e4 + 3))


def test_classify_labels_follow_the_threshold(classifier: FactClassifier):
    verdicts = classifier.classify(
        ["I love hiking", "we met at school", "do you hike?", "She is a nurse", "ok then"],
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
    )
    assert [v.label for v in verdicts] == ["self", "relation", "none", "third_party", "none"]
    assert all(isinstance(v, FactVerdict) for v in verdicts)
    assert verdicts[0].p_keep > 0.9 and verdicts[2].p_keep < 0.1
    assert 0.0 <= min(v.p_keep for v in verdicts) and max(v.p_keep for v in verdicts) <= 1.0


def test_threshold_moves_the_decision(tmp_path: Path):
    path = tmp_path / "strict.json"
    path.write_text(json.dumps(artefact(threshold=0.99)), encoding="utf-8")
    strict = FactClassifier.load(path)
    (verdict,) = strict.classify(["I love hiking"], [[1.0, 0.0, 0.0]])
    assert verdict.p_keep < 0.99 and verdict.label == "none"


def test_specific_statement():
    assert specific_statement('I loved "Becoming Nicole" by Amy Ellis Nutt.')
    assert specific_statement("We don't go often, usually only once or twice a year.")
    assert specific_statement("we got another cat named Bailey too.")
    assert not specific_statement("I love that, Mel.")  # a vocative is not what the fact names
    assert not specific_statement("I hope you like Paris")  # speaks to the other person
    assert not specific_statement("Have I told you about Paris?")
    assert not specific_statement("She went to Paris")  # not in the speaker's own voice
    assert not specific_statement("I am so happy")
    assert not specific_statement("[shares an image: a photo of Paris]")


def test_a_specific_statement_is_kept_under_the_threshold(tmp_path: Path):
    path = tmp_path / "strict.json"
    path.write_text(json.dumps(artefact(threshold=0.99)), encoding="utf-8")
    strict = FactClassifier.load(path)
    named, plain, faint = strict.classify(
        ["I went to Paris", "I love hiking", "I went to Paris"],
        [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
    )
    assert named.label == "self" and named.p_keep < 0.99
    assert plain.label == "none"  # nothing specific: the threshold decides
    assert faint.label == "none" and faint.p_keep < SPECIFIC_FLOOR  # under the floor: the model decides
    # a parser's reading of a clause as specific counts the same ("Pizza is my favourite food")
    read, unread = strict.classify(
        ["Pizza is my favourite food", "Pizza is my favourite food"], [[1.0, 0.0, 0.0]] * 2, [True, False]
    )
    assert read.label == "self" and unread.label not in KEEP_LABELS


def test_classify_accepts_any_float_sequences(classifier: FactClassifier):
    assert classifier.classify([], []) == []
    (a,) = classifier.classify(["I hike"], [(1, 0, 0)])
    assert a.label == "self"


def test_bad_inputs_are_refused(classifier: FactClassifier):
    with pytest.raises(ValueError, match="vectors"):
        classifier.classify(["a", "b"], [[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="3 floats"):
        classifier.classify(["a"], [[1.0, 0.0]])


def test_artefact_must_match_the_code():
    data = artefact()
    with pytest.raises(ValueError, match="features"):
        FactClassifier.from_dict({**data, "features": list(FEATURES[:-1])})
    with pytest.raises(ValueError, match="labels"):
        FactClassifier.from_dict({**data, "labels": ["keep", "drop"]})
    with pytest.raises(ValueError, match="weights"):
        FactClassifier.from_dict({**data, "dim": 4})
    with pytest.raises(ValueError, match="threshold"):
        FactClassifier.from_dict({**data, "threshold": 1.5})


def test_lexical_method_is_the_module_function(classifier: FactClassifier):
    assert classifier.lexical("I love my mom") == lexical_features("I love my mom")


def test_shipped_artefact_loads_once():
    assert DEFAULT_PATH.stat().st_size <= 1_000_000
    shipped = FactClassifier.load()
    assert FactClassifier.load() is shipped
    assert shipped.dim == 384
    assert 0.0 < shipped.threshold < 1.0
    data = json.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    assert data["labels"] == list(LABELS) and data["features"] == list(FEATURES)
    assert len(data["weights"]) == len(LABELS) and all(len(r) == 384 + len(FEATURES) for r in data["weights"])
    prov = data["provenance"]
    assert prov["data"]["locomo"]["file"].startswith("../shared/benchmarks/")
    assert "conv-43" not in prov["data"]["locomo"]["conversations"]
    assert (
        prov["counts"]
        and prov["command"]
        and prov["sklearn"]
        and prov["cv"]["threshold"] == data["threshold"]
    )
    assert "/work/" not in DEFAULT_PATH.read_text(encoding="utf-8")


def test_shipped_artefact_separates_obvious_cases():
    """Lexical features alone (a zero vector) should already lean the right way on clear cases."""
    shipped = FactClassifier.load()
    zero = [0.0] * shipped.dim
    fact, chat = shipped.classify(["I work as a nurse at the city hospital", "how about you?"], [zero, zero])
    assert fact.p_keep > chat.p_keep
