from __future__ import annotations

import pytest

from memory.engine import LENIENT, Op, OpType, Reason, Tree, apply, default_schema, gate, parse_ops
from memory.engine.gate import GatePolicy

OCCUPIED = Tree({"identity/name": "Ana", "behaviour/hobbies": "chess"})


def reasons(result):
    return [(r.op.path if r.op else None, r.reason) for r in result.rejected]


def test_clean_batch_is_accepted_in_order(tiny):
    ops = [
        Op.add("identity/family/pets", "a cat, Miso"),
        Op.update("identity/name", "Ana B"),
        Op.delete("behaviour/hobbies"),
    ]
    r = gate(tiny, OCCUPIED, ops)
    assert r.accepted == tuple(ops) and r.rejected == () and r.normalised == () and r.all_accepted


def test_paths_must_be_leaves(tiny):
    r = gate(
        tiny,
        Tree.empty(),
        [
            Op.add("identity", "x"),
            Op.add("identity/family", "x"),
            Op.add("identity/nam", "x"),
            Op.add("Identity/Name", "x"),
        ],
    )
    assert reasons(r) == [
        ("identity", Reason.NOT_A_LEAF),
        ("identity/family", Reason.NOT_A_LEAF),
        ("identity/nam", Reason.UNKNOWN_PATH),
        ("Identity/Name", Reason.UNKNOWN_PATH),
    ]
    assert r.accepted == ()


def test_state_rules_strict(tiny):
    r = gate(
        tiny,
        OCCUPIED,
        [
            Op.add("identity/name", "Bea"),
            Op.update("identity/family/pets", "dog"),
            Op.delete("body/health/conditions"),
        ],
    )
    assert reasons(r) == [
        ("identity/name", Reason.ADD_ON_OCCUPIED),
        ("identity/family/pets", Reason.UPDATE_ON_EMPTY),
        ("body/health/conditions", Reason.DELETE_ON_EMPTY),
    ]
    assert all(rej.detail for rej in r.rejected)


def test_lenient_normalises_and_records(tiny):
    add = Op.add("identity/name", "Bea", 0.7)
    upd = Op.update("identity/family/pets", "dog")
    r = gate(tiny, OCCUPIED, [add, upd], LENIENT)
    assert r.accepted == (Op.update("identity/name", "Bea", 0.7), Op.add("identity/family/pets", "dog"))
    assert [(n.original, n.result.type) for n in r.normalised] == [(add, OpType.UPDATE), (upd, OpType.ADD)]
    assert "lenient" in r.normalised[0].note
    # lenient does not relax anything else
    r = gate(tiny, Tree.empty(), [Op.delete("identity/name")], GatePolicy(lenient=True))
    assert reasons(r) == [("identity/name", Reason.DELETE_ON_EMPTY)]


def test_values(tiny):
    r = gate(
        tiny,
        OCCUPIED,
        [
            Op.add("identity/family/pets", "  a   cat,\n\tMiso  "),
            Op.update("identity/name", " \n "),
            Op.add("body/health/conditions", 42),  # type: ignore[arg-type]
            Op(OpType.DELETE, "behaviour/hobbies", "chess"),
        ],
    )
    assert r.accepted == (Op.add("identity/family/pets", "a cat, Miso"),)
    assert reasons(r) == [
        ("identity/name", Reason.EMPTY_VALUE),
        ("body/health/conditions", Reason.VALUE_NOT_STRING),
        ("behaviour/hobbies", Reason.DELETE_WITH_VALUE),
    ]
    r = gate(tiny, Tree.empty(), [Op(OpType.ADD, "identity/name", None)])
    assert (
        reasons(r) == [("identity/name", Reason.EMPTY_VALUE)] and "carries no value" in r.rejected[0].detail
    )


def test_budget_is_checked_after_normalisation_and_never_truncates(tiny):
    exact = "x" * 20
    padded = "   " + "y" * 10 + "      " + "z" * 9 + "   "  # 20 chars once collapsed
    over = "w" * 21
    r = gate(tiny, Tree.empty(), [Op.add("identity/name", padded)])
    assert r.accepted == (Op.add("identity/name", "y" * 10 + " " + "z" * 9),)
    assert gate(tiny, Tree.empty(), [Op.add("identity/name", exact)]).accepted[0].value == exact
    r = gate(tiny, Tree.empty(), [Op.add("identity/name", over)])
    assert r.accepted == () and r.rejected[0].reason is Reason.OVER_BUDGET
    assert r.rejected[0].op.value == over and "21 chars > budget 20" in r.rejected[0].detail


def test_first_op_on_a_path_wins_even_if_rejected(tiny):
    first = Op.add("identity/name", "n" * 50)
    second = Op.add("identity/name", "Ana")
    third = Op.delete("identity/name")
    r = gate(tiny, Tree.empty(), [first, second, third])
    assert reasons(r) == [
        ("identity/name", Reason.OVER_BUDGET),
        ("identity/name", Reason.DUPLICATE_PATH),
        ("identity/name", Reason.DUPLICATE_PATH),
    ]


def test_no_op_only_alone(tiny):
    assert gate(tiny, OCCUPIED, [Op.no_op()]).accepted == (Op.no_op(),)
    r = gate(tiny, OCCUPIED, [Op.no_op(), Op.no_op()])
    assert r.accepted == (Op.no_op(),) and reasons(r) == [(None, Reason.NO_OP_NOT_ALONE)]
    r = gate(tiny, OCCUPIED, [Op.no_op(), Op.update("identity/name", "Bea"), Op.add("nope", "x")])
    assert r.accepted == (Op.update("identity/name", "Bea"),)
    assert reasons(r) == [(None, Reason.NO_OP_NOT_ALONE), ("nope", Reason.UNKNOWN_PATH)]
    assert gate(tiny, OCCUPIED, []).accepted == ()


def test_rejections_serialise(tiny):
    r = gate(tiny, Tree.empty(), [Op.add("nope", "x")])
    assert r.to_dict()["rejected"] == [
        {
            "op": {"op": "ADD", "path": "nope", "value": "x"},
            "reason": "UNKNOWN_PATH",
            "detail": "'nope' is not a leaf of tiny",
        }
    ]


@pytest.mark.parametrize("lenient", [False, True])
def test_pipeline_on_default_schema(lenient):
    s = default_schema()
    tree = Tree({"identity/name/full_name": "Ana"})
    text = (
        'ADD(identity/location/current_city, "Lisbon")\nUPDATE(identity/name/full_name, "Ana Silva")\n'
        'UPDATE(identity/family/pets, "a cat")\nthanks!\nADD(made/up, "x")'
    )
    parsed = parse_ops(text)  # model text -> parse -> gate -> apply, as the listener and the store do
    gated = gate(s, tree, parsed.ops, GatePolicy(lenient=lenient))
    new_tree, changes = apply(tree, gated.accepted)
    assert len(parsed.ops) == 4 and parsed.ignored == (4,)
    expected = {"identity/location/current_city": "Lisbon", "identity/name/full_name": "Ana Silva"}
    if lenient:
        expected["identity/family/pets"] = "a cat"
    assert new_tree.to_dict() == expected
    assert [c.path for c in changes] == sorted(expected)
    assert Reason.UNKNOWN_PATH in {r.reason for r in gated.rejected}


LISTENER_POLICY = GatePolicy(small_talk=True)


def test_small_talk_is_refused_with_its_own_reason_when_the_policy_asks(tiny):
    ops = [
        Op.add("identity/family/pets", "ttyl, Bye!"),
        Op.add("behaviour/hobbies", "a photo of a dog sitting on a couch"),
        Op.add("body/health/conditions", "how about you?"),
    ]
    r = gate(tiny, Tree.empty(), ops, LISTENER_POLICY)
    assert reasons(r) == [
        ("identity/family/pets", Reason.SMALL_TALK),
        ("behaviour/hobbies", Reason.SMALL_TALK),
        ("body/health/conditions", Reason.SMALL_TALK),
    ]
    assert r.accepted == ()
    assert "greeting" in r.rejected[0].detail and "caption" in r.rejected[1].detail
    assert r.to_dict()["rejected"][2]["reason"] == "SMALL_TALK"


def test_small_talk_check_is_off_by_default_for_moderators_and_migrations(tiny):
    op = Op.add("identity/family/pets", "It was great")
    assert gate(tiny, Tree.empty(), [op]).accepted == (op,)
    assert gate(tiny, Tree.empty(), [op], LENIENT).accepted == (op,)


def test_small_talk_policy_keeps_real_facts_and_judges_only_new_clauses(tiny):
    tree = Tree({"identity/family/pets": "Has a dog", "behaviour/hobbies": "That's so true"})
    ok = [
        Op.update("identity/family/pets", "Has a dog; Has a cat named Luna"),
        Op.update("behaviour/hobbies", "That's so true; Loves hiking"),  # the held clause is not re-judged
        Op.add("body/health/conditions", "Is allergic to peanuts (May 2023)"),
    ]
    assert gate(tiny, tree, ok, LISTENER_POLICY).accepted == tuple(ok)
    bad = gate(tiny, tree, [Op.update("identity/family/pets", "Has a dog; Thanks so much!")], LISTENER_POLICY)
    assert (
        reasons(bad) == [("identity/family/pets", Reason.SMALL_TALK)]
        and "Thanks so much!" in bad.rejected[0].detail
    )


def test_small_talk_rejection_drops_the_lenient_normalisation(tiny):
    r = gate(
        tiny, OCCUPIED, [Op.add("identity/name", "Sounds good")], GatePolicy(lenient=True, small_talk=True)
    )
    assert reasons(r) == [("identity/name", Reason.SMALL_TALK)] and r.normalised == ()
