"""Small talk (values with no lasting content) versus real facts: both sides, many examples."""

from __future__ import annotations

import pytest

from memory.engine.chatter import is_small_talk, small_talk_reason, substance

SMALL_TALK = {
    "greeting": ["ttyl, Bye!", "Hey there", "Hi Mel!", "Good morning!", "See you soon!", "Take care!",
                 "Talk soon", "Bye for now", "Have a great weekend!", "Nice chatting with you", "Hey Nate",
                 "What's up", "How are you doing"],
    "thanks": ["Thanks!", "Thank you so much", "Thanks for the tip!", "Congrats on the new job!",
               "Appreciate it", "Good luck with the exam", "Thanks, Gina!", "Appreciate your support"],
    "question": ["how about you?", "What about you", "And you?", "What kind of music do you like?",
                 "How was your weekend?", "Did you find the right spot", "How long have you had him",
                 "Anything new since last time", "Is it fun?"],
    "backchannel": ["I hear ya", "Hears ya", "Sounds good", "Sounds like fun!", "Same here", "Me too",
                    "Them too", "I agree", "Agrees", "Totally!", "For sure", "Makes sense", "That makes sense",
                    "Good point", "Exactly!", "No worries", "Awesome!", "lol", "Haha, lol", "Oh wow",
                    "Keep it up!", "Check it out!"],
    "addressed": ["You're so sweet", "Your kids are adorable", "You got this!", "Hope you have a great time",
                  "Good for you!", "So proud of you", "Glad to hear that", "Can't wait to see it",
                  "Let me know how it goes", "Your support means a lot to them", "Got your back",
                  "Is sorry about Max", "So sorry for your loss"],
    "compliment": ["Great pic", "What a beautiful photo!", "Such a cute pic", "Nice shot!", "Great idea!",
                   "That's a great pic of your family!", "Nice work, Maria!"],
    "caption": ["a photo of a dog sitting on a couch", "a picture of a sunset over the ocean",
                "a close up of a plate of food", "a man standing in front of a painting",
                "two dogs laying on a bed", "there is a dog that is sitting on the floor",
                "a photography of a group of people standing in a room", "Here's a pic of Oliver"],
    "platitude": ["Life is short", "Family is everything", "Life's too short", "Everything happens for a reason",
                  "Time flies!", "Nature is so beautiful", "Hard work pays off eventually"],
    "no content": ["It was great", "That's so true", "They loved it", "Loved it", "It was so much fun",
                   "That sounds amazing", "Wow, that's incredible!", "It's been great", "So cute!",
                   "That's really cool, I love that", "It can be tough", "Wow Maria, that's awesome!"],
    "vague": ["Heard some big news (12 March 2022)", "Tried something different", "Had a hectic week",
              "Is going to keep chasing their dreams", "Is staying positive and pushing forward", "Stays positive",
              "Felt really motivated and supported", "Is planning something special", "Learned a lot",
              "Had an unforgettable experience (June 2021)", "Shared a few memories", "Felt grateful",
              "Took a big step", "Talked about various things", "Faced some challenges lately",
              "Had a great day (3 Feb 2020)", "Is looking forward to it", "Took a pic (summer 2023)",
              "Went on a tour", "Had a setback (week before 21 November 2023)", "Went there a few years ago",
              "Their bookshelf is an amazing journey", "Their pottery project was a great experience",
              "Their family is awesome"],
    "feeling": ["Felt at peace surrounded by rocks", "Felt inspired and like they got a new lease of life",
                "Was so thrilled to see their team win", "Were over the moon about the news",
                "Was nervous (week before 22 August 2022)"],  # a date says when, not what
    "leaving": ["Is off to go swimming with the kids", "Is off to bake some cakes", "Off to bed",
                "Is heading out to grab dinner with some friends from the gym"],
}  # fmt: skip

FACTS = [
    "Is off to college in the fall", "Is off to Japan for a year (May 2023)",  # a plan, not the moment
    "Is chasing their dream of becoming a pilot", "Stayed at a hotel by the sea", "Believes in God",
    "Took a photo of the lake", "Went on a tour of the castle", "Loves taking pictures", "Went hiking",
    "Has a dog", "Works as a nurse", "Moved to Lisbon (May 2023)", "Loves hiking", "Is 32", "Is a nurse",
    "Has two kids", "Is vegan", "Is married", "Is single", "Lives in Boston", "Has been vegetarian for ten years",
    "Runs every morning", "Plays the guitar", "Loves painting sunsets", "Used to play soccer", "Gave up sugar",
    "Went to an LGBTQ support group (7 May 2023)", "Is training for a marathon", "Quit their job at the bank",
    "Has a cat named Luna", "Volunteers at the animal shelter", "Is allergic to peanuts", "Drives a Honda",
    "Likes Italian food", "Is studying psychology", "Is from Sweden", "Has a sister", "Their dog is named Max",
    "Grew up in Ohio", "Is retired", "Wants to become a counselor", "Prefers tea over coffee", "Is pregnant",
    "Took up pottery last year", "Speaks French", "Has a PhD in biology", "Works at Google",
    "Their favorite color is blue", "Enjoys reading mystery novels", "Adopted a puppy (3 Jun 2023)",
    "Is afraid of heights", "Goes to church on Sundays", "Loves camping with the kids",
    "Family is very important to them", "Music is their passion", "Is learning to play piano",
    "Painted a lake sunrise last year", "Has been married for 5 years", "Caroline is transgender",
    "Melanie has three children", "Is a big fan of the Lakers", "Hates spiders", "Bought a new house",
    "Had a great time at the concert in Paris", "Their son plays baseball", "Sings in a choir", "I have a dog.",
    "i love to bake cookies.", "my favorite band is the beatles.", "A nurse", "Nurse", "Lisbon", "Maria",
    "Boston, MA", "Vegetarian", "32", "Moved to Lisbon, Portugal", "Feels old", "Might live forever",
    "Is a 46 year old single dad", "Great-grandmother lives with them", "Has a great job at a startup",
    "Was born in 1990", "Is happy with their new job in Denver", "Loves great books",
    # near the vague class: a specific word, a name or a number keeps a value a fact
    "Got a new job at Google", "Is learning German", "Started surfing (2018)", "Tried sushi for the first time",
    "Has been feeling low on confidence lately", "Felt inspired by Frida Kahlo", "Had a long day at the hospital",
    "Came out (2019)", "Moved out (March 2021)", "Ran 5 miles", "Had a big week: ran 3 races",
    "Learned a lot about gardening", "Felt supported by their church", "Is planning a trip to Japan",
    "Has a bad back", "Is lonely", "Is in a good place", "Loves life", "Works long days", "Took up knitting",
    "Shared their poems online", "Faced their fear of water", "Is getting a divorce", "Talked to a therapist",
    "Is always busy", "Is an optimistic person", "Is new to the city", "Has a lot of experience in sales",
    "Had a big week (3 races)",
    # a feeling with its date, a name or its agent stays
    "Felt sick (5 May 2023)", "Felt proud when Ana graduated", "Feels at home in the city",
    "Was feeling burnt out at work",
    # a thing judged with something named stays
    "Their favorite food is pizza", "Their job is stressful", "Their trip to Rome was amazing (May 2023)",
]  # fmt: skip


@pytest.mark.parametrize(("reason", "value"), [(r, v) for r, vs in SMALL_TALK.items() for v in vs])
def test_small_talk_is_flagged(reason: str, value: str) -> None:
    assert is_small_talk(value)
    assert small_talk_reason(value) is not None


@pytest.mark.parametrize(("reason", "value"), [
    ("greeting", "ttyl, Bye!"), ("question", "how about you?"), ("backchannel", "I hear ya"),
    ("caption", "a photo of a dog sitting on a couch"), ("no content", "It was great"),
    ("platitude", "Life is short"), ("addressed", "You're so sweet"), ("thanks", "Thanks!"),
    ("compliment", "Great pic"), ("vague", "Tried something new (2 May 2022)"), ("vague", "Felt encouraged"),
    ("feeling", "Felt at peace surrounded by rocks"), ("leaving", "Is off to have dinner with friends"),
])  # fmt: skip
def test_the_reason_names_the_kind_of_small_talk(reason: str, value: str) -> None:
    assert small_talk_reason(value) == reason


@pytest.mark.parametrize("value", FACTS)
def test_real_facts_are_not_flagged(value: str) -> None:
    assert small_talk_reason(value) is None


def test_empty_value_is_left_to_the_gate_and_examples_are_many() -> None:
    assert not is_small_talk("") and not is_small_talk("   ")
    assert sum(map(len, SMALL_TALK.values())) >= 60 and len(FACTS) >= 60


@pytest.mark.parametrize("value", SMALL_TALK["vague"])
def test_a_value_saying_only_that_something_happened_is_vague(value: str) -> None:
    assert small_talk_reason(value) == "vague"


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("Is excited to be involved and help out their community", 2),  # involved, community
        ("Organized a toy drive for kids in need", 4),
        ("Is feeling hopeful", 0),
        ("Went to a great concert (12 May 2023)", 1),  # the date note names nothing here
    ],
)
def test_substance_counts_the_words_that_name_something(value: str, count: int) -> None:
    assert substance(value) == count
