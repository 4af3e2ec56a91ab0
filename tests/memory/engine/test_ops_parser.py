from __future__ import annotations

import pytest

from memory.engine import Op, OpError, OpType, format_ops, parse_ops


def test_op_shape_is_checked_at_construction():
    with pytest.raises(OpError, match="NO_OP carries no path"):
        Op(OpType.NO_OP, "a/b")
    with pytest.raises(OpError, match="needs a non-empty path"):
        Op(OpType.ADD, "  ", "v")
    with pytest.raises(OpError, match="unknown op type"):
        Op("MERGE", "a", "v")
    with pytest.raises(OpError, match="confidence"):
        Op.add("a", "v", confidence=1.5)
    assert Op("add", "a", "v").type is OpType.ADD
    assert Op("NOOP").type is OpType.NO_OP


def test_op_lines_and_dicts():
    op = Op.update("behaviour/habits/exercise", 'used to "run"\nnow swims', 0.8)
    assert (
        op.to_line() == 'UPDATE(behaviour/habits/exercise, "used to \\"run\\"\\nnow swims", confidence=0.8)'
    )
    assert Op.delete("a/b").to_line() == "DELETE(a/b, None)"
    assert Op.no_op().to_line() == "NO_OP()"
    assert Op.from_dict(op.to_dict()) == op
    assert Op.from_dict({"type": "NO_OP", "path": "", "value": None}) == Op.no_op()
    with pytest.raises(OpError, match="unknown fields"):
        Op.from_dict({"op": "ADD", "path": "a", "value": "v", "why": "x"})
    with pytest.raises(OpError, match="no 'op' field"):
        Op.from_dict({"path": "a"})


PAPER_OUTPUT = """Sure! Based on the dialogue, here are the operations:
```
1. ADD(identity/name/full_name, "Ana \\"Bee\\" Silva")
2) UPDATE(behaviour/habits/exercise, "used to run; knee trouble, now swims", confidence=0.8)
- DELETE(identity/relationships/partner, None)
* ADD(body/basics/age, 31)
ADD(mind/emotion/joys, "Her dad said "well done" to her") -- she was moved
**ADD(behaviour/food/drinks, 'I'm into oolong')**, UPDATE(identity/family/pets, "a cat, Miso")
ADD(broken/path, "unterminated
UPDATE(identity/location/current_city)
ADD(, "v")
```
That is all."""


def test_paper_format_with_noise():
    r = parse_ops(PAPER_OUTPUT)
    assert [op.to_line() for op in r.ops] == [
        'ADD(identity/name/full_name, "Ana \\"Bee\\" Silva")',
        'UPDATE(behaviour/habits/exercise, "used to run; knee trouble, now swims", confidence=0.8)',
        "DELETE(identity/relationships/partner, None)",
        'ADD(body/basics/age, "31")',
        'ADD(mind/emotion/joys, "Her dad said \\"well done\\" to her")',
        'ADD(behaviour/food/drinks, "I\'m into oolong")',
        'UPDATE(identity/family/pets, "a cat, Miso")',
    ]
    assert [(e.line_no, e.message) for e in r.errors] == [
        (9, "unterminated string (output truncated?)"),
        (10, "UPDATE needs a value"),
        (11, "ADD has no path"),
    ]
    assert r.ignored == (1, 13)
    assert not r.ok


def test_no_op_forms():
    assert parse_ops("NO_OP()").ops == (Op.no_op(),)
    assert parse_ops("1. NO_OP").ops == (Op.no_op(),)
    assert parse_ops("`NOOP()`").ops == (Op.no_op(),)
    r = parse_ops("I considered NO_OP but ADD is better")
    assert r.ops == () and r.errors[0].message == "no op found in model output"


def test_delete_keeps_a_stray_value_for_the_gate():
    assert parse_ops('DELETE(a/b, "old")').ops == (Op(OpType.DELETE, "a/b", "old"),)
    assert parse_ops("DELETE(a/b)").ops == (Op.delete("a/b"),)
    assert parse_ops("DELETE(a/b, null)").ops == (Op.delete("a/b"),)
    # an explicit None on ADD is kept for the gate (EMPTY_VALUE); a missing value is a parse error
    assert parse_ops("ADD(a/b, None)").ops == (Op(OpType.ADD, "a/b", None),)
    assert parse_ops("ADD(a/b)").errors[0].message == "ADD needs a value"


def test_json_forms():
    list_form = '[{"op": "ADD", "path": "a/b", "value": "x"}, {"op": "BAD"}, 5, {"op": "NO_OP"}]'
    r = parse_ops(f"```json\n{list_form}\n```")
    assert r.ops == (Op.add("a/b", "x"), Op.no_op())
    assert [e.message.split(":")[0] for e in r.errors] == ["ops[1]", "ops[2]"]
    assert parse_ops('{"ops": [{"op": "DELETE", "path": "a/b", "value": null}]}').ops == (Op.delete("a/b"),)
    jsonl = '{"op": "ADD", "path": "a/b", "value": "x"}\n{"op": "UPDATE", "path": "c", "value": "y"}'
    assert parse_ops(jsonl).ops == (Op.add("a/b", "x"), Op.update("c", "y"))
    assert parse_ops("{broken json").errors


def test_garbage_gives_errors_not_exceptions():
    for text in [
        "",
        "   \n ",
        "asdf qwer",
        "ADD(((",
        'UPDATE("',
        "\x00\x01",
        "[1, 2",
        '{"ops": 5}',
        None,
        42,
    ]:
        r = parse_ops(text)  # type: ignore[arg-type]
        assert isinstance(r.ops, tuple) and isinstance(r.errors, tuple)
    assert parse_ops("").errors == ()
    assert parse_ops(None).errors[0].message.startswith("model output must be text")  # type: ignore[arg-type]


def test_format_round_trip_with_awkward_values():
    ops = (
        Op.add("a/b", 'x "y" \\ z\n w', 0.25),
        Op.add("p q,)", "v", 1e-05),
        Op.delete("d/e"),
        Op.no_op(),
        Op.update("a/b", '")'),
        Op.update("x", "\u2028 line sep and \x85 and emoji \U0001f600"),
    )
    assert parse_ops(format_ops(ops)).ops == ops
