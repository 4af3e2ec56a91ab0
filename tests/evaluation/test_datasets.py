import json

import pytest

from evaluation.datasets import DatasetError
from evaluation.datasets.locomo import load_locomo, normalise_dia_ids
from evaluation.datasets.personamem import check_end_indices, load_contexts, load_questions


def test_locomo_view(locomo_path):
    (conv,) = load_locomo(locomo_path)
    assert conv.speakers == ("Ana", "Ben")
    assert [s.number for s in conv.sessions] == [1, 2]
    assert len(conv.turns()) == 10 and len(conv.turns(max_sessions=1)) == 6
    assert conv.turns()[3].image_caption == "a photo of a beagle puppy on a sofa"
    by_q = {q.question: q for q in conv.qa}
    adv = by_q["What instrument does Ana play?"]
    assert adv.answer is None and adv.adversarial_answer == "violin" and adv.category_name == "adversarial"
    assert adv.evidence == ("D2:1", "D2:3")
    assert by_q["Where does Ana live?"].evidence == ("D1:3",)
    assert by_q["What did Ben say about the weather?"].evidence == ()
    assert len(conv.observations_for("Ana")) == 5
    assert [o.fact for o in conv.observations_for("Ben", max_sessions=1)][-1] == "Ben runs every morning."
    assert conv.observations_for("Ana")[-1].dia_ids == ("D2:3",)


def test_normalise_dia_ids_counts_unreadable():
    assert normalise_dia_ids(["D8:6; D9:17", "D", "D:11:26"]) == (("D8:6", "D9:17", "D11:26"), 1)


def test_locomo_errors(tmp_path, locomo_path):
    with pytest.raises(DatasetError, match="no such file"):
        load_locomo(tmp_path / "nope.json")
    with pytest.raises(DatasetError, match="not in"):
        load_locomo(locomo_path, sample_ids={"conv-99"})
    bad = json.loads(locomo_path.read_text())
    del bad[0]["qa"][0]["answer"]
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(DatasetError, match=r"qa\[0\].*no 'answer'"):
        load_locomo(p)


def test_personamem_questions(pm_questions_path):
    qs = load_questions(pm_questions_path)
    assert [q.question_id for q in qs] == ["q1", "q2", "q3", "q4", "q5"]
    assert qs[0].gold == "b" and qs[0].options[1] == "You design book covers for a small publisher."
    assert qs[2].options[2].startswith("A session at the indoor climbing gym")  # Python-literal list row
    assert qs[3].end_index == 11
    assert "(d) Your hiking group moved away." in qs[3].options_block()
    assert len(load_questions(pm_questions_path, limit=2)) == 2


def test_personamem_contexts(pm_questions_path, pm_contexts_path):
    qs = load_questions(pm_questions_path)
    ctx = load_contexts(pm_contexts_path, ids={q.shared_context_id for q in qs})
    assert set(ctx) == {"ctx-mara", "ctx-tom"} and len(ctx["ctx-mara"]) == 11
    check_end_indices(qs, ctx)
    with pytest.raises(DatasetError, match="missing"):
        load_contexts(pm_contexts_path, ids={"ctx-other"})


def test_personamem_bad_rows(tmp_path, pm_questions_path):
    text = pm_questions_path.read_text().replace(",(b),", ",(e),", 1)
    p = tmp_path / "q.csv"
    p.write_text(text)
    with pytest.raises(DatasetError, match=r"line 2 correct_answer '\(e\)'"):
        load_questions(p)
    p.write_text("question_id,question_type\nx,y\n")
    with pytest.raises(DatasetError, match="lacks columns"):
        load_questions(p)


def test_end_index_beyond_context(pm_questions_path, pm_contexts_path):
    qs = load_questions(pm_questions_path)
    ctx = load_contexts(pm_contexts_path)
    ctx["ctx-tom"] = ctx["ctx-tom"][:2]
    with pytest.raises(DatasetError, match="q5 end index 4 beyond"):
        check_end_indices(qs, ctx)
