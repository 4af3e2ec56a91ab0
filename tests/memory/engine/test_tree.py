from __future__ import annotations

import pytest

from memory.engine import Change, Op, OpType, Tree, TreeError, apply, changes_to_ops, diff, replay


def test_tree_is_an_immutable_hashable_mapping():
    t = Tree({"b/x": "2", "a/y": "1"})
    assert (
        list(t.to_dict()) == ["a/y", "b/x"]
        and set(t) == {"a/y", "b/x"}
        and len(t) == 2
        and "a/y" in t
        and t.get("zz") is None
    )
    assert t == Tree.from_dict({"a/y": "1", "b/x": "2", "c/z": None, "d/w": ""})
    assert hash(t) == hash(Tree({"a/y": "1", "b/x": "2"})) and {t: 1}[Tree(t)] == 1
    d = t.to_dict()
    d["a/y"] = "changed"
    assert t["a/y"] == "1"
    with pytest.raises(TypeError):
        t["a/y"] = "x"  # type: ignore[index]
    assert t.set("c", "3")["c"] == "3" and "c" not in t and "a/y" not in t.without("a/y")
    assert Tree.empty() == Tree() and not Tree.empty()
    assert t != {"a/y": "1", "b/x": "2"}  # a Tree is not equal to a plain dict


@pytest.mark.parametrize("bad", [{"a": ""}, {"a": "  "}, {"a": None}, {"": "v"}, {"a": 3}])
def test_tree_invariant(bad):
    with pytest.raises(TreeError):
        Tree(bad)


def test_from_dict_refuses_non_mappings():
    with pytest.raises(TreeError, match="JSON object"):
        Tree.from_dict(["a"])  # type: ignore[arg-type]
    assert Tree.from_dict(None) == Tree.empty()


def test_apply_is_pure_and_reports_net_changes():
    t0 = Tree({"a": "1", "b": "2"})
    ops = [Op.update("a", "1b"), Op.delete("b"), Op.add("c", "3"), Op.no_op(), Op.delete("zz")]
    t1, changes = apply(t0, ops)
    assert t0 == Tree({"a": "1", "b": "2"})
    assert t1 == Tree({"a": "1b", "c": "3"})
    assert changes == (
        Change("a", "1", "1b", OpType.UPDATE),
        Change("b", "2", None, OpType.DELETE),
        Change("c", None, "3", OpType.ADD),
    )
    assert diff(t0, t1) == changes


def test_apply_nets_out_ungated_repeats_and_no_change_updates():
    t0 = Tree({"a": "1"})
    t1, changes = apply(t0, [Op.add("b", "x"), Op.update("b", "y"), Op.update("a", "1")])
    assert t1 == Tree({"a": "1", "b": "y"}) and changes == (Change("b", None, "y", OpType.ADD),)
    t2, changes = apply(t0, [Op.add("b", "x"), Op.delete("b")])
    assert t2 is t0 and changes == ()


def test_apply_refuses_values_that_break_the_tree():
    with pytest.raises(TreeError, match="needs a non-empty string"):
        apply(Tree.empty(), [Op.add("a", "  ")])
    with pytest.raises(TreeError):
        apply(Tree.empty(), [Op.add("a", None)])  # type: ignore[arg-type]


def test_replay_and_changes_to_ops():
    t0 = Tree({"a": "1"})
    log = [[Op.add("b", "2")], [Op.update("a", "1+")], [Op.delete("b"), Op.add("c", "3")], [Op.no_op()]]
    final = replay(t0, log)
    assert final == Tree({"a": "1+", "c": "3"})
    assert replay(t0, []) == t0
    assert replay(t0, [changes_to_ops(diff(t0, final))]) == final
    assert (
        changes[0].to_dict() == {"path": "a", "old": "1", "new": "1+", "op": "UPDATE"}
        if (changes := diff(t0, final))
        else False
    )
