import pytest

from evaluation.datasets.locomo import LocomoQA
from evaluation.scoring import Choice, extract_choice, score_locomo, token_f1

OPTIONS = ("You are a nurse.", "You design book covers.", "You teach math.", "You keep bees.")


@pytest.mark.parametrize(
    ("text", "letter", "rule"),
    [
        (None, None, "failed"),
        ("   ", None, "failed"),
        ("c", "c", "bare"),
        ("(B)", "b", "bare"),
        ("d.", "d", "bare"),
        ('{"answer": "(a)"}', "a", "bare"),
        ("The answer is (c) because you teach.", "c", "phrase"),
        ("Answer: b", "b", "phrase"),
        ("I think (d) fits best.", "d", "bracketed"),
        ("(a) or (b), hard to say", None, "ambiguous"),
        ("b) You design book covers.", "b", "leading"),
        ("Well, you design book covers.", "b", "option_text"),
        ("I am not sure.", None, "unparsed"),
    ],
)
def test_extract_choice(text, letter, rule):
    assert extract_choice(text, OPTIONS) == Choice(letter, rule)


def test_failed_call_is_never_a_default_letter():
    for text in (None, "", "error: timeout"):
        assert extract_choice(text, OPTIONS).letter is None


def qa(category, answer):
    return LocomoQA(question="q", answer=answer, category=category, evidence=())


def test_token_f1():
    assert token_f1("The nurse", "nurse") == 1.0
    assert token_f1("a city nurse", "nurse") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("teacher", "nurse") == 0.0


def test_locomo_categories():
    assert score_locomo("nurse", qa(4, "nurse")).correct
    assert score_locomo("running", qa(1, "running, swimming")).score == pytest.approx(0.5)
    assert score_locomo("swimming, running", qa(1, "running, swimming")).score == 1.0
    assert score_locomo("no", qa(3, "No; unlikely, she is allergic to cats")).score == 1.0
    assert score_locomo(
        "No, she is allergic", qa(3, "No; unlikely, she is allergic to cats")
    ).score == pytest.approx(0.6)
    assert score_locomo("7 May 2023", qa(2, "7 May 2023")).correct
    unanswerable = LocomoQA(question="q", answer=None, category=5, evidence=(), adversarial_answer="violin")
    assert score_locomo("That is not mentioned in the conversation.", unanswerable).correct
    assert not score_locomo("violin", unanswerable).correct
    failed = score_locomo(None, unanswerable)
    assert failed.failed and failed.score == 0.0
