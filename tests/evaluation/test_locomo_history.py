"""The LoCoMo full-history baseline: the conversation itself, newest turns kept under a token budget."""

from evaluation.datasets.locomo import load_locomo
from evaluation.locomo_run import full_history
from memory.engine.render import count_tokens
from memory.services.query import answer_prompt


def conversation(locomo_path):
    (conv,) = load_locomo(str(locomo_path))
    return conv


def test_whole_conversation_fits_a_large_budget(locomo_path):
    conv = conversation(locomo_path)
    history = full_history(conv, max_sessions=None, budget_tokens=100_000)
    turns = conv.turns()
    assert history["kept"] == history["turns"] == len(turns)
    assert history["evidence"][0]["text"].startswith(f"{turns[0].speaker}: ")
    assert history["evidence"][0]["source"]["ts"] == conv.sessions[0].date_time
    assert history["evidence"][-1]["text"].endswith(" ".join(turns[-1].text.split()))


def test_small_budget_keeps_the_newest_turns_in_order(locomo_path):
    conv = conversation(locomo_path)
    whole = full_history(conv, max_sessions=None, budget_tokens=100_000)
    cut = full_history(conv, max_sessions=None, budget_tokens=whole["tokens"] // 3)
    assert 0 < cut["kept"] < cut["turns"]
    assert cut["evidence"] == whole["evidence"][-cut["kept"] :]
    assert cut["tokens"] <= whole["tokens"] // 3


def test_session_slice_and_prompt(locomo_path):
    conv = conversation(locomo_path)
    history = full_history(conv, max_sessions=1, budget_tokens=100_000)
    assert history["turns"] == len(conv.sessions[0].turns)
    prompt = answer_prompt("Where does Ana live?", history)
    # the history precedes the question, so a local engine reuses its KV prefix across questions
    assert prompt.dynamic.index(history["evidence"][-1]["text"]) < prompt.dynamic.index("Question:")
    assert count_tokens(prompt.dynamic) >= history["tokens"] // 2
