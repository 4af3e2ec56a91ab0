"""evaluation/spc.py on a tiny hand-written Synthetic-Persona-Chat file (never ../shared)."""

from pathlib import Path

from evaluation.spc import TUNE, VALIDATION, dialogue_lines, read_rows, sides

SPC = Path(__file__).resolve().parents[1] / "fixtures" / "eval" / "spc_tiny.csv"


def test_read_rows_and_dialogue_lines():
    rows = read_rows(SPC)
    assert len(rows) == 2
    lines = dialogue_lines(rows[0])
    assert lines[0] == ("User 1", "Hi! How are you?") and len(lines) == 6
    assert dialogue_lines({"Best Generated Conversation": "Narrator: hi\nUser 2:  \nUser 2: ok"}) == [
        ("User 2", "ok")
    ]


def test_sides_give_each_speaker_their_turns_and_personas():
    got = sides(read_rows(SPC), range(0, 10))  # indices past the end are ignored
    assert [s.subject for s in got] == ["spc-0:User1", "spc-0:User2", "spc-1:User1", "spc-1:User2"]
    one, two = got[0], got[1]
    assert one.personas == ("I am a nurse.", "I have two cats.", "I love hiking in the mountains.")
    assert [t["role"] for t in one.turns][:2] == ["user", "assistant"]
    assert [t["role"] for t in two.turns][:2] == ["assistant", "user"]
    assert [t["seq"] for t in one.turns] == [1, 2, 3, 4, 5, 6]
    assert "I am a nurse, so I work nights." in one.sentences()
    assert all("violin" not in s for s in one.sentences())  # the other speaker's line is not theirs
    assert two.personas == ("I play the violin.", "I live in Lisbon.")


def test_split_is_issue_23s():
    assert (TUNE.start, TUNE.stop, VALIDATION.start, VALIDATION.stop) == (0, 800, 800, 1000)
