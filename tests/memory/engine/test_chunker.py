from __future__ import annotations

import pytest

from memory.engine import Turn, chunk_turns


def convo(n_pairs, system=True):
    turns = [{"role": "system", "content": "You are Ana's assistant."}] if system else []
    for i in range(n_pairs):
        turns += [{"role": "user", "content": f"u{i}"}, {"role": "assistant", "content": f"a{i}"}]
    return turns


def contents(chunk):
    return [t.content for t in chunk.turns]


def pair_count(chunk):
    """User turns answered by an assistant turn (the pairs the window was cut by)."""
    count, open_user = 0, False
    for t in chunk.turns:
        if t.role == "user":
            open_user = True
        elif t.role == "assistant" and open_user:
            count, open_user = count + 1, False
    return count


def test_windows_of_three_pairs_with_system_reattached():
    chunks = chunk_turns(convo(7))
    assert [contents(c) for c in chunks] == [
        ["u0", "a0", "u1", "a1", "u2", "a2"],
        ["u3", "a3", "u4", "a4", "u5", "a5"],
    ]
    assert all(c.system and c.system.content == "You are Ana's assistant." for c in chunks)
    assert [(c.start_seq, c.end_seq) for c in chunks] == [(1, 6), (7, 12)]
    assert [pair_count(c) for c in chunks] == [3, 3] and not any(c.partial for c in chunks)


def test_partial_tail_and_no_system():
    chunks = chunk_turns(convo(7, system=False), include_partial=True)
    assert len(chunks) == 3 and chunks[-1].partial and contents(chunks[-1]) == ["u6", "a6"]
    assert all(c.system is None for c in chunks)
    assert chunk_turns([]) == [] and chunk_turns([], include_partial=True) == []
    assert chunk_turns(convo(2)) == []


def test_odd_sequences():
    turns = [
        {"role": "assistant", "content": "hello!"},  # leading assistant: no pair
        {"role": "user", "content": "u0"},
        {"role": "user", "content": "u0b"},  # two users: one pair
        {"role": "assistant", "content": "a0"},
        {"role": "assistant", "content": "a0b"},  # extra assistant stays
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"},  # unanswered
    ]
    (only,) = chunk_turns(turns, pairs=2)
    assert contents(only) == ["hello!", "u0", "u0b", "a0", "a0b", "u1", "a1"] and pair_count(only) == 2
    chunks = chunk_turns(turns, pairs=2, include_partial=True)
    assert contents(chunks[-1]) == ["u2"] and chunks[-1].partial and pair_count(chunks[-1]) == 0
    assert [contents(c) for c in chunk_turns(turns, pairs=1)] == [
        ["hello!", "u0", "u0b", "a0", "a0b"],
        ["u1", "a1"],
    ]


def test_latest_system_turn_is_attached():
    turns = convo(3) + [{"role": "system", "content": "persona v2"}] + convo(3, system=False)
    first, second = chunk_turns(turns)
    assert first.system.content == "You are Ana's assistant." and second.system.content == "persona v2"
    assert chunk_turns(turns, attach_system=False)[0].system is None


def test_chunk_keys_are_deterministic_and_content_sensitive():
    a = chunk_turns(convo(6), namespace="t1:s1")
    assert [c.chunk_key for c in a] == [c.chunk_key for c in chunk_turns(convo(6), namespace="t1:s1")]
    assert len({c.chunk_key for c in a}) == 2 and all(len(c.chunk_key) == 64 for c in a)
    assert a[0].chunk_key != chunk_turns(convo(6), namespace="t1:s2")[0].chunk_key
    changed = convo(6)
    changed[2]["content"] = "a0 (edited)"
    b = chunk_turns(changed, namespace="t1:s1")
    assert b[0].chunk_key != a[0].chunk_key and b[1].chunk_key == a[1].chunk_key
    no_sys = chunk_turns(convo(6, system=False), namespace="t1:s1")
    assert no_sys[0].chunk_key != a[0].chunk_key


def test_turn_objects_and_bad_input():
    turns = [Turn("user", "hi", 10, ts="2026-01-01T00:00:00Z"), Turn("assistant", "hey", 12)]
    (c,) = chunk_turns(turns, pairs=1)
    assert (c.start_seq, c.end_seq) == (10, 12) and c.turns[0].ts == "2026-01-01T00:00:00Z"
    with pytest.raises(ValueError, match="turn 1: role must be one of"):
        chunk_turns([{"role": "user", "content": "x"}, {"role": "bot", "content": "y"}])
    with pytest.raises(ValueError, match="turn 1: seq 3 does not increase"):
        chunk_turns([Turn("user", "x", 5), Turn("assistant", "y", 3)])
    with pytest.raises(ValueError, match="turn 0: content must be a string"):
        chunk_turns([{"role": "user", "content": None}])
    with pytest.raises(ValueError, match="pairs must be a positive integer"):
        chunk_turns([], pairs=0)
    with pytest.raises(ValueError, match="expected a Turn or a mapping"):
        chunk_turns(["hello"])  # type: ignore[list-item]
