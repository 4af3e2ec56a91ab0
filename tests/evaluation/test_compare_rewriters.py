"""bench/compare_rewriters.py's pure helpers: the rewrite prompt, the reply cleaner (on replies the
pinned 0.5B GGUF model gave in a run, recorded below), the gate check both values pass through and
the three trees built from the rules tree. No model, no ../shared."""

import datetime as dt
import importlib.util
import sys
from pathlib import Path

import pytest

from memory.engine.schema import default_schema

ROOT = Path(__file__).resolve().parents[2]
TS = dt.datetime(2023, 5, 8, 13, 56)


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "compare_rewriters", ROOT / "bench" / "compare_rewriters.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_prompt_names_speaker_date_and_words(bench):
    dynamic = bench.rewrite_prompt("Caroline Smith", "I went to a LGBTQ  support group yesterday.", TS)
    assert dynamic.splitlines() == [
        "Speaker: Caroline. Said on 8 May 2023.",
        "Sentence: I went to a LGBTQ support group yesterday.",
    ]
    assert bench.rewrite_prompt("Melanie", "I painted a sunset.", None).splitlines()[0] == "Speaker: Melanie."


def test_few_shot_prompt_puts_the_shots_before_the_clause_as_chat_turns(bench):
    prompt = bench.few_shot_prompt("Speaker: Jon.\nSentence: I started my own dance studio.")
    messages = prompt.messages()
    assert messages[0] == {"role": "system", "content": bench.SYSTEM}
    assert [m["role"] for m in messages[1:-1]] == ["user", "assistant"] * len(bench.SHOTS)
    assert messages[-1] == {
        "role": "user",
        "content": "Speaker: Jon.\nSentence: I started my own dance studio.",
    }
    # the part before the clause is the same for every call: llama.cpp keeps its KV
    other = bench.few_shot_prompt("Speaker: Ann.\nSentence: I run.").messages()
    assert other[:-1] == messages[:-1]
    assert all(len(fact.split()) <= bench.MAX_WORDS for _words, fact in bench.SHOTS)


# Replies of qwen2.5-coder-0.5b-instruct-q4 (var/models/memlistener.gguf) to few_shot_prompt in the
# run of bench/results/rewriter/2026-12-05-*.json (LoCoMo conv-26 and conv-30), and what clean_reply
# makes of them: the cleaner strips form, it never repairs the first person a reply kept.
RECORDINGS = [
    ("Went to a LGBTQ support group yesterday and it was so powerful", "Caroline",
     "Went to a LGBTQ support group yesterday and it was so powerful"),
    ("None", "Caroline", ""),
    ("I'm passionate about helping people and making a positive impact", "Caroline",
     "I'm passionate about helping people and making a positive impact"),
    ("My dance studio has been my stress-buster since childhood!", "Jon",
     "My dance studio has been my stress-buster since childhood"),
    ("Hike experience", "Caroline", "Hike experience"),
    ("Last weekend I joined a mentorship program for LGBTQ youth", "Caroline",
     "Last weekend I joined a mentorship program for LGBTQ youth"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "speaker", "value"), RECORDINGS)
def test_clean_reply_on_recorded_replies(bench, reply, speaker, value):
    assert bench.clean_reply(reply, speaker) == value


def test_clean_reply_drops_labels_subjects_and_none(bench):
    assert bench.clean_reply('Fact: "Caroline went to a support group."\nSpeaker: x', "Caroline") == (
        "Went to a support group"
    )
    assert bench.clean_reply("Caroline's dog is named Luna", "Caroline") == "Their dog is named Luna"
    assert bench.clean_reply("She paints sunsets.", "Melanie") == "Paints sunsets"
    assert bench.clean_reply("Carolines paint", "Caroline") == "Carolines paint"  # not the name
    assert bench.clean_reply("NONE", "Jon") == "" and bench.clean_reply("\n\n", "Jon") == ""


def test_refusal_is_the_listeners_gate(bench):
    schema = default_schema()
    path = schema.leaves[0].path
    sentence = "I adopted a puppy named Oscar last month."
    evidence = [sentence]
    assert bench.refusal(schema, path, "Adopted a puppy named Oscar", sentence, evidence) is None
    assert bench.refusal(schema, path, "Adopted a kitten named Bella", sentence, evidence) == "UNGROUNDED"
    assert bench.refusal(schema, path, "  ", sentence, evidence) == "EMPTY_VALUE"
    assert bench.refusal(schema, path, "How about you?", "How about you?", ["How about you?"]) == "SMALL_TALK"


def _kept(bench, rules, model, refused):
    k = bench.Kept("conv-x", "Ann", 0, "c", "s", None, "a/b", rules)
    k.values = {"rules": rules, "model": model}
    k.refused = {"rules": None, "model": refused, "model_3rd": refused or bench.first_person(model)}
    return k


def test_variant_trees_replace_drop_or_keep_each_filed_clause(bench):
    trees = {
        "Ann": {"a/b": "Runs a lot; Has a dog named Rex", "c/d": "Likes tea (trimmed", "e/f": "Likes tea"}
    }
    kept = [
        _kept(bench, "Runs a lot", "Runs every day", None),
        _kept(bench, "Has a dog named Rex", "Owns Max", "UNGROUNDED"),
        _kept(bench, "Likes tea", "I like tea", None),
    ]
    variants, unmatched = bench.variant_trees(trees, kept)
    assert variants["rules"]["Ann"] == trees["Ann"]
    assert variants["model"]["Ann"] == {
        "a/b": "Runs every day",
        "c/d": "Likes tea (trimmed",
        "e/f": "I like tea",
    }
    assert variants["model_gated"]["Ann"] == {
        "a/b": "Runs every day; Has a dog named Rex",
        "c/d": "Likes tea (trimmed",
        "e/f": "I like tea",
    }
    assert variants["model_3rd"]["Ann"] == {
        "a/b": "Runs every day; Has a dog named Rex",
        "c/d": "Likes tea (trimmed",
        "e/f": "Likes tea",
    }
    assert unmatched == 1
