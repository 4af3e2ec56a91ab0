"""Explicit self-retractions (DELETE) versus sentences that only sound like one (issue 23, step 6)."""

from __future__ import annotations

import pytest

from memory.engine.candidates import is_retraction

RETRACTIONS = [
    "I no longer eat meat.",
    "I'm no longer vegetarian.",
    "We no longer live in Boston.",
    "I really no longer play the violin.",
    "No longer working at the bakery.",
    "I don't smoke anymore.",
    "I don't live in Lisbon any more.",
    "I don't have a car anymore, sold it last week.",
    "We don't go to that church anymore.",
    "I do not run marathons anymore.",
    "I'm not vegan anymore.",
    "I am not seeing Tom any more.",
    "I'm not into crossfit anymore.",
    "Forget that I mentioned the half marathon.",
    "Please forget that I said I have a cat.",
    "Please forget the half marathon, that plan is off.",
    "Please forget my old address.",
    "Can you forget what I told you about my job?.",
    "Could you please forget about my ex.",
    "Ok, forget about the move to Berlin.",
    "I quit my job.",
    "I quit my job at the bank last month.",
    "I just quit my job to travel.",
    "I left my job at Google.",
    "I finally left my teaching position.",
    "I resigned from my role as team lead.",
    "We broke up.",
    "We broke up last week.",
    "I broke up with Sam.",
    "We split up in March.",
    "I got divorced last year.",
    "I stopped drinking coffee.",
    "I stopped going to the gym.",
    "I've stopped eating sugar.",
    "We stopped renting the flat.",
    "That plan is off.",
    "Our plans are off, sadly.",
    "I don\u2019t play tennis anymore.",
]

NOT_RETRACTIONS = [
    "I used to play soccer.",
    "I used to live in Paris, it was lovely.",
    "I won't give up!",
    "I will never give up on my dreams.",
    "I gave up sugar last year.",
    "Don't forget to call your mom.",
    "Please don't forget to bring the cake.",
    "I'll never forget that day.",
    "I can't forget how beautiful it was.",
    "How could I forget!",
    "Never stop learning.",
    "I can't stop listening to this album.",
    "I won't stop fighting for what I believe in.",
    "I never stopped loving art.",
    "I stopped by the bakery on the way home.",
    "Forget it, never mind.",
    "Please forget about it, it's fine.",
    "I don't think I can wait any longer!",
    "I don't know anymore.",
    "I just don't have the time anymore.",
    "I don't have as much time for it anymore.",
    "I'm not sure anymore.",
    "I'm not very good at it anymore.",
    "Do you still play the guitar?",
    "Did you quit your job?",
    "Are you no longer in Boston?",
    "My sister quit her job.",
    "He left his job at the bank.",
    "They broke up last year.",
    "I run every morning.",
    "I quit smoking five years ago.",
    "I left the party early.",
    "I left my keys at home.",
    "I'm not a morning person.",
    "I don't eat meat.",
    "I forgot my umbrella.",
    "I sometimes forget my keys.",
    "The concert was called off because of rain.",
    "She cancelled the trip.",
    "I'm still a nurse.",
    "I stopped at the gas station.",
    "It's no longer a secret that I love cats.",
]


@pytest.mark.parametrize("sentence", RETRACTIONS)
def test_explicit_self_retractions_delete(sentence: str) -> None:
    assert is_retraction(sentence)


@pytest.mark.parametrize("sentence", NOT_RETRACTIONS)
def test_sentences_that_only_sound_like_a_retraction_do_not(sentence: str) -> None:
    assert not is_retraction(sentence)


def test_lists_are_large_and_disjoint() -> None:
    assert len(RETRACTIONS) >= 30 and len(NOT_RETRACTIONS) >= 30
    assert not set(RETRACTIONS) & set(NOT_RETRACTIONS)
