"""The grammatical test of the fact pipeline (``memory.engine.aboutness``) on parser readings
written by hand: which subjects make a clause the speaker's fact, and how a pronoun is written out."""

from __future__ import annotations

import pytest

from memory.engine.aboutness import SUBJECTS, ClauseSyntax, judge, resolve


@pytest.mark.parametrize("subject", ["speaker", "owned", "elided"])
def test_the_speakers_own_finite_statements_are_kept(subject):
    assert judge(ClauseSyntax(subject, finite=True)).keep


@pytest.mark.parametrize(
    ("syntax", "reason"),
    [
        (ClauseSyntax("generic", True), "generic"),  # "Kids are so resilient"
        (ClauseSyntax("clausal", True, "can"), "clausal"),  # "Joining a church can be encouraging"
        (ClauseSyntax("addressee", True), "addressee"),  # "Your advocacy is an inspiration"
        (ClauseSyntax("other", True), "other"),  # "Her rights advocacy inspires me"
        (ClauseSyntax("deictic", True), "deictic"),  # "That's peaceful and calming"
        (ClauseSyntax("imperative", True), "imperative"),  # "Keep working hard"
        (ClauseSyntax("reaction", True), "reaction"),  # "Sounds great"
        (ClauseSyntax("pronoun", True, pronoun="It"), "unresolved_pronoun"),  # "It made them realize"
        (ClauseSyntax("expletive", True), "expletive"),  # "There's nothing like it"
        (ClauseSyntax("speaker", False), "no_finite_verb"),  # "Seeing the smiles on their faces"
        (ClauseSyntax("none", True), "no_finite_verb"),  # "Expression of themself"
        (ClauseSyntax("elided", True, "must"), "modal_guess"),  # "Must be satisfying"
        (ClauseSyntax("elided", True, "should"), "modal_guess"),  # "Should start a cork board"
    ],
)
def test_everything_else_is_dropped_with_its_reason(syntax, reason):
    verdict = judge(syntax)
    assert not verdict.keep and verdict.reason == reason


def test_a_modal_is_a_fact_only_in_the_speakers_mouth():
    assert judge(ClauseSyntax("speaker", True, "must")).keep  # "I must have read it ten times"
    assert judge(ClauseSyntax("speaker", True, "will")).keep  # "I will start college in May"
    assert judge(ClauseSyntax("elided", True, "can")).keep  # "Can't wait for my studio to open"
    owned_guess = ClauseSyntax("pronoun", True, "must", pronoun="she", antecedent="my cat Luna")
    assert judge(owned_guess).reason == "modal_guess"  # "She must be hungry"


@pytest.mark.parametrize("modal", ["might", "may", "could"])
def test_a_maybe_is_not_a_fact_even_of_oneself_unless_negated(modal):
    assert judge(ClauseSyntax("speaker", True, modal)).reason == "modal_guess"  # "I might go camping"
    assert judge(ClauseSyntax("speaker", True, f"{modal} not")).keep  # "I couldn't live without it"


@pytest.mark.parametrize("modal", ["should", "ought", "gotta"])
def test_advice_is_not_a_fact_even_to_oneself(modal):
    verdict = judge(
        ClauseSyntax("speaker", True, modal)
    )  # "We should all join forces", "I gotta push myself"
    assert not verdict.keep and verdict.reason == "modal_guess"


def test_a_resolved_pronoun_and_a_first_person_expletive_are_kept():
    assert judge(ClauseSyntax("pronoun", True, pronoun="She", antecedent="my cat Luna")).keep
    assert judge(ClauseSyntax("expletive", True, first_person=True)).keep  # "There's a park by my house"


def test_a_generic_subject_is_kept_when_the_clause_speaks_of_the_speaker():
    assert judge(ClauseSyntax("generic", True, first_person=True)).keep  # "This necklace is special to me"
    assert judge(ClauseSyntax("generic", True, "must", first_person=True)).reason == "modal_guess"
    assert judge(ClauseSyntax("other", True, first_person=True)).reason == "other"  # "His drive motivates me"


@pytest.mark.parametrize(
    ("text", "pronoun", "antecedent", "out"),
    [
        ("She sleeps on my keyboard", "She", "my cat Luna", "My cat Luna sleeps on my keyboard"),
        ("She's so fluffy", "She", "my cat Luna", "My cat Luna is so fluffy"),
        ("They're in second grade now", "They", "my kids", "My kids are in second grade now"),
        ("he\u2019s been a nurse for years", "he", "my brother", "My brother has been a nurse for years"),
        ("Now it runs on solar", "it", "my old van", "Now my old van runs on solar"),
    ],
)
def test_resolve_writes_the_antecedent_in_place_of_the_pronoun(text, pronoun, antecedent, out):
    assert resolve(text, ClauseSyntax("pronoun", True, pronoun=pronoun, antecedent=antecedent)) == out


def test_resolve_names_the_speakers_object_pronoun_it_was_given():
    # "Have you tried pottery?" - "Yes, I love it!"; the last "it" is the object
    syntax = ClauseSyntax("speaker", True, pronoun="it", antecedent="pottery", first_person=True)
    assert resolve("Yes, I love it!", syntax) == "Yes, I love pottery!"
    assert resolve("It's true, I love it", syntax) == "It's true, I love pottery"
    assert resolve("I love it's glaze", syntax) == "I love it's glaze"  # no standalone object "it"


def test_resolve_leaves_other_clauses_alone():
    assert resolve("I love it", ClauseSyntax("speaker", True)) == "I love it"
    assert resolve("It rained", ClauseSyntax("pronoun", True, pronoun="It")) == "It rained"


def test_an_unknown_subject_kind_is_refused():
    with pytest.raises(ValueError, match="unknown subject kind"):
        ClauseSyntax("martian", True)
    assert "speaker" in SUBJECTS
