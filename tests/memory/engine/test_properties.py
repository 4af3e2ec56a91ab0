"""Hypothesis properties of the engine: round trips, parser totality, gate soundness."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.engine import (
    LENIENT,
    STRICT,
    Op,
    OpType,
    Reason,
    Tree,
    apply,
    changes_to_ops,
    default_schema,
    diff,
    format_ops,
    gate,
    parse_ops,
    replay,
)

from .conftest import TINY

SCHEMA = default_schema()
PATHS = SCHEMA.paths[:25] + ("identity", "not/a/leaf", "identity/name")
TINY_PATHS = tuple(
    f"{k}" for k in ("identity/name", "identity/family/pets", "body/health/conditions", "behaviour/hobbies")
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

values = st.text(min_size=1, max_size=40).filter(lambda s: s.strip())
small_paths = st.sampled_from(("a", "b", "c/d", "e/f/g"))
trees = st.dictionaries(small_paths, values, max_size=4).map(Tree)
set_ops = st.builds(
    lambda t, p, v: Op(t, p, v), st.sampled_from([OpType.ADD, OpType.UPDATE]), small_paths, values
)
del_ops = st.builds(Op.delete, small_paths)
tree_ops = st.lists(st.one_of(set_ops, del_ops, st.just(Op.no_op())), max_size=8)


@FAST
@given(trees, tree_ops)
def test_diff_of_apply_matches_changes(tree, ops):
    new, changes = apply(tree, ops)
    assert diff(tree, new) == changes
    assert all(c.old != c.new for c in changes)
    assert replay(tree, [changes_to_ops(changes)]) == new


@FAST
@given(trees, trees)
def test_replay_of_diff_reproduces_b(a, b):
    assert replay(a, [changes_to_ops(diff(a, b))]) == b
    assert diff(a, a) == ()


@FAST
@given(trees, st.lists(tree_ops, max_size=4))
def test_replay_equals_step_by_step(t0, batches):
    tree = t0
    for batch in batches:
        tree, _ = apply(tree, batch)
    assert replay(t0, batches) == tree
    assert Tree.from_dict(tree.to_dict()) == tree


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parser_never_raises_on_arbitrary_text(text):
    r = parse_ops(text)
    assert isinstance(r.ops, tuple) and isinstance(r.errors, tuple)
    assert all(isinstance(op, Op) for op in r.ops)


op_words = st.sampled_from(
    [
        "ADD(",
        "UPDATE(",
        "DELETE(",
        "NO_OP()",
        '"',
        "\\",
        ",",
        ")",
        "None",
        "```",
        "\n",
        "1. ",
        "confidence=",
        "{",
        "}",
        "[",
        "]",
        '"op"',
        ":",
        "identity/name",
        "'",
        " ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(op_words, st.text(max_size=5)), max_size=40).map("".join))
def test_parser_never_raises_on_op_like_noise(text):
    r = parse_ops(text)
    assert isinstance(r.ops, tuple) and isinstance(r.errors, tuple)


any_path = st.one_of(st.sampled_from(PATHS), st.text(min_size=1, max_size=20).filter(lambda s: s.strip()))
any_value = st.one_of(st.none(), st.text(max_size=60))
confidence = st.one_of(st.none(), st.floats(min_value=0, max_value=1, allow_nan=False))
ops = st.one_of(
    st.builds(
        Op, st.sampled_from([OpType.ADD, OpType.UPDATE, OpType.DELETE]), any_path, any_value, confidence
    ),
    st.just(Op.no_op()),
)


@FAST
@given(st.lists(ops, max_size=8))
def test_format_parse_round_trip(op_list):
    r = parse_ops(format_ops(op_list))
    assert r.errors == ()
    assert r.ops == tuple(op_list)


schema_trees = st.dictionaries(st.sampled_from(SCHEMA.paths[:25]), values, max_size=10).map(Tree)
gate_ops = st.lists(
    st.one_of(
        st.builds(
            Op,
            st.sampled_from([OpType.ADD, OpType.UPDATE, OpType.DELETE]),
            any_path,
            st.one_of(st.none(), st.text(max_size=400)),
            confidence,
        ),
        st.just(Op.no_op()),
    ),
    max_size=10,
)


@FAST
@given(schema_trees, gate_ops, st.sampled_from([STRICT, LENIENT]))
def test_gate_never_accepts_unknown_paths_or_over_budget_values(tree, op_list, policy):
    r = gate(SCHEMA, tree, op_list, policy)
    assert len(r.accepted) + len(r.rejected) == len(op_list)
    seen = set()
    for op in r.accepted:
        if op.type is OpType.NO_OP:
            assert all(o.type is OpType.NO_OP for o in op_list)
            continue
        leaf = SCHEMA.leaf(op.path)
        assert leaf is not None
        assert op.path not in seen
        seen.add(op.path)
        if op.type is OpType.DELETE:
            assert op.value is None and op.path in tree
        else:
            assert isinstance(op.value, str) and op.value.strip() and len(op.value) <= leaf.budget
            assert op.value == " ".join(op.value.split())
            assert (op.path in tree) == (op.type is OpType.UPDATE)
    for rej in r.rejected:
        assert isinstance(rej.reason, Reason) and rej.op in op_list and rej.detail
    new, _ = apply(tree, r.accepted)  # gated ops always apply cleanly
    assert all(SCHEMA.is_leaf(p) for p in set(new) - set(tree))


@FAST
@given(
    st.lists(
        st.builds(
            Op,
            st.sampled_from([OpType.ADD, OpType.UPDATE]),
            st.sampled_from(TINY_PATHS),
            st.text(min_size=1, max_size=200),
        ),
        max_size=6,
    )
)
def test_gate_budget_on_a_custom_schema(op_list):
    from memory.engine import load_schema

    tiny = load_schema(TINY)
    r = gate(tiny, Tree.empty(), op_list, LENIENT)
    for op in r.accepted:
        assert len(op.value) <= tiny.leaf(op.path).budget
    for rej in r.rejected:
        if rej.reason is Reason.OVER_BUDGET:
            assert len(" ".join(rej.op.value.split())) > tiny.leaf(rej.op.path).budget


prose = st.text(max_size=60).filter(
    lambda s: (
        "\n" not in s
        and "\r" not in s
        and not s.lstrip().startswith(("{", "[", "```"))
        and not any(w in s for w in ("ADD", "UPDATE", "DELETE", "NO_OP", "NOOP", "NO-OP"))
    )
)
broken = st.sampled_from(
    ['ADD(identity/name, "unterminated', "UPDATE(x)", 'ADD(, "v")', 'DELETE(a, "x" junk)']
)


@FAST
@given(
    st.lists(
        st.one_of(
            ops.map(lambda op: ("op", op)),
            prose.map(lambda s: ("prose", s)),
            broken.map(lambda s: ("broken", s)),
        ),
        max_size=12,
    )
)
def test_bad_lines_never_lose_good_ones(items):
    text = "\n".join(x.to_line() if kind == "op" else x for kind, x in items)
    r = parse_ops(text)
    assert r.ops == tuple(x for kind, x in items if kind == "op")
    n_broken = sum(kind == "broken" for kind, _ in items)
    if r.ops or n_broken:
        assert len(r.errors) == n_broken
