"""The op scorer (memory.engine.scorer): rules one by one, then properties with hypothesis."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.engine import Op, OpType, Tree, default_schema, gate
from memory.engine.gate import GatePolicy
from memory.engine.scorer import (
    DECLINED,
    GATE,
    MISSING,
    REDUNDANT,
    normalise_text,
    score,
    token_f1,
)

SCHEMA = default_schema()
CITY = "identity/location/current_city"
PETS = "identity/family/pets"
JOB = "identity/occupation/current_role"
EXERCISE = "behaviour/habits/exercise"
PATHS = [leaf.path for leaf in SCHEMA.leaves if leaf.tier != "special"][:8] + [CITY, PETS, JOB, EXERCISE]
TREE = Tree({PETS: "a grey cat called Miso", EXERCISE: "runs 10k"})
TURNS = [
    {"role": "user", "content": "I moved to Porto last year and I work as a data engineer at a bank."},
    {"role": "assistant", "content": "Porto is lovely. How is Miso?"},
    {
        "role": "user",
        "content": "My cat Miso is fine. I got a puppy named Bolt and I swim now instead of running.",
    },
]


def run(pred, gold, **kw):
    return score(pred, gold, TREE, TURNS, schema=SCHEMA, **kw)


GOLD = [
    Op.add(CITY, "moved to Porto last year"),
    Op.add(JOB, "data engineer at a bank"),
    Op.update(PETS, "a grey cat called Miso and a puppy named Bolt"),
    Op.update(EXERCISE, "swims now instead of running"),
]


# --- rules ---------------------------------------------------------------------------------------


def test_perfect_prediction_scores_one():
    r = run(list(GOLD), GOLD)
    assert r.total == 1.0 and r.exact == 4 and r.gate_rejections == 0 and r.format_ok


def test_no_op_against_no_op_and_empty_gold():
    assert run([Op.no_op()], [Op.no_op()]).total == 1.0
    assert run([Op.no_op()], []).total == 1.0
    assert run("NO_OP()", []).total == 1.0


@pytest.mark.parametrize("text", ["", "I think nothing here matters", "{not json", "```\n```"])
def test_unreadable_output_scores_minus_one(text):
    r = run(text, GOLD)
    assert r.total == -1.0 and not r.format_ok and r.parts == {"format": -1.0}


def test_empty_op_list_is_a_format_failure():
    assert run([], GOLD).total == -1.0


def test_raw_text_is_parsed_json_or_lines():
    text = json.dumps({"ops": [op.to_dict() for op in GOLD]})
    assert run(None, GOLD, raw_text=text).total == 1.0
    assert run("\n".join(op.to_line() for op in GOLD), GOLD).total == 1.0


def test_predicted_and_raw_text_together_are_refused():
    with pytest.raises(ValueError):
        run(list(GOLD), GOLD, raw_text="NO_OP()")


def test_parse_errors_next_to_ops_cost_half_each():
    text = GOLD[0].to_line() + '\nADD(identity/name/full_name, "unterminated'
    r = run(text, GOLD[:1])
    assert r.parse_errors == 1 and r.exact == 1
    assert r.total == pytest.approx((1 - 0.5) / 2)


def test_exact_ignores_case_punctuation_and_spacing():
    r = run([Op.add(CITY, "Moved to  PORTO, last year.")], [GOLD[0]])
    assert r.exact == 1 and r.total == 1.0


def test_partial_credit_is_token_set_f1():
    pred = Op.add(CITY, "moved to Porto")
    r = run([pred], [GOLD[0]])
    expected = token_f1("moved to Porto", "moved to Porto last year")
    assert r.partial == 1 and r.partial_credit == pytest.approx(expected)
    assert r.total == pytest.approx(expected)
    assert expected == pytest.approx(2 * 3 / (3 + 5))


def test_wrong_type_on_the_right_path_earns_nothing_and_no_double_penalty():
    r = run([Op.update(CITY, "moved to Porto last year")], [GOLD[0]])
    assert r.type_mismatch == 1 and r.missing == 0 and r.redundant == 0
    # UPDATE on an empty leaf is also refused by the strict gate.
    assert r.gate_reasons == ("UPDATE_ON_EMPTY",)
    assert r.total == pytest.approx(GATE)


def test_missing_and_redundant():
    r = run([GOLD[0], Op.add("identity/name/full_name", "Porto")], GOLD[:2])
    assert (r.exact, r.missing, r.redundant) == (1, 1, 1)
    assert r.total == pytest.approx((1 + MISSING + REDUNDANT) / 2)


def test_duplicate_prediction_on_a_matched_path_is_redundant_not_gated_twice():
    r = run([GOLD[0], Op.add(CITY, "Porto")], [GOLD[0]])
    assert r.exact == 1 and r.redundant == 1 and r.gate_rejections == 0
    assert r.total == pytest.approx((1 + REDUNDANT) / 2)


def test_lone_no_op_costs_only_the_missing_facts():
    assert run([Op.no_op()], GOLD[:1]).total == pytest.approx(MISSING)
    assert run([Op.no_op()], GOLD).total == pytest.approx(4 * MISSING / 4)


def test_a_fact_against_no_op_costs_its_redundancy_and_gate():
    assert run([GOLD[0]], [Op.no_op()]).total == pytest.approx(REDUNDANT)
    invented = run([Op.add(CITY, "lives in Lisbon")], [Op.no_op()])
    assert invented.gate_reasons == ("UNGROUNDED",)
    assert invented.total == pytest.approx(REDUNDANT + GATE)


def test_no_op_mixed_with_facts_is_redundant():
    r = run([GOLD[0], Op.no_op()], [GOLD[0]])
    assert r.redundant == 1 and r.gate_rejections == 0


def test_gate_rejections_are_counted_with_their_reasons():
    pred = [
        Op.add(CITY, "lives in Lisbon"),  # UNGROUNDED
        Op.add("identity/nope", "x"),  # UNKNOWN_PATH
        Op.delete("identity/name/full_name"),  # DELETE_ON_EMPTY
    ]
    r = run(pred, [GOLD[0]])
    assert r.gate_reasons == ("DELETE_ON_EMPTY", "UNGROUNDED", "UNKNOWN_PATH")
    assert r.gate_rejections == 3


def test_exact_gold_match_is_never_gate_penalised():
    edited = Op.add(CITY, "relocated to the Douro region")  # a moderator's words, not the user's
    r = run([edited], [edited])
    assert r.total == 1.0 and r.gate_rejections == 0


def test_declined_op_costs_one_and_is_not_matched():
    declined = Op.add(CITY, "moved to Porto last year")
    r = run([GOLD[0]], [GOLD[0]], declined_ops=[declined])
    assert r.declined_hits == 1 and r.exact == 0 and r.missing == 1
    assert r.raw == pytest.approx(DECLINED + MISSING) and r.total == -1.0  # clipped
    near = run([Op.add(CITY, "Moved to Porto, last year!")], [Op.no_op()], declined_ops=[declined])
    assert near.declined_hits == 1
    far = run([Op.add(CITY, "Porto")], [Op.no_op()], declined_ops=[declined])
    assert far.declined_hits == 0


def test_similarity_judge_is_plugged_in_and_clipped():
    pred = Op.add(CITY, "relocated to Porto")
    assert run([pred], [GOLD[0]], similarity=lambda a, b: 0.9).partial_credit == pytest.approx(0.9)
    assert run([pred], [GOLD[0]], similarity=lambda a, b: 7.0).total == 1.0
    assert run([pred], [GOLD[0]], similarity=lambda a, b: float("nan")).partial_credit == 0.0


def test_non_string_values_do_not_crash():
    pred = [Op(OpType.ADD, CITY, ["Porto"]), Op(OpType.ADD, JOB, 3)]  # type: ignore[arg-type]
    r = run(pred, GOLD[:2])
    assert r.gate_reasons == ("VALUE_NOT_STRING", "VALUE_NOT_STRING") and -1 <= r.total <= 1


def test_turn_objects_and_tree_mappings_are_accepted():
    class T:
        def __init__(self, role, content):
            self.role, self.content = role, content

    turns = [T(t["role"], t["content"]) for t in TURNS]
    r = score(list(GOLD[:2]), GOLD[:2], dict(TREE), turns, schema=SCHEMA)
    assert r.total == 1.0


def test_report_parts_add_up():
    r = run([Op.add(CITY, "moved to Porto"), Op.add("identity/name/full_name", "Ana")], GOLD)
    assert sum(r.parts.values()) == pytest.approx(r.raw)
    assert r.to_dict()["parts"] == r.parts
    assert r.total == pytest.approx(max(-1.0, r.raw / r.denominator))


def test_normalise_text():
    assert normalise_text("  Moved to PORTO,\nlast-year. ") == "moved to porto last year"
    assert normalise_text(None) == ""


# --- properties ----------------------------------------------------------------------------------

WORDS = [
    "porto",
    "moved",
    "bank",
    "data",
    "engineer",
    "cat",
    "miso",
    "puppy",
    "bolt",
    "swim",
    "jazz",
    "Lisbon",
]
values = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
path_ops = st.builds(
    lambda t, p, v: Op(t, p, None if t == "DELETE" else v),
    st.sampled_from(["ADD", "UPDATE", "DELETE"]),
    st.sampled_from(PATHS + ["identity/unknown_leaf"]),
    values,
)
any_op = st.one_of(path_ops, st.just(Op.no_op()))
pred_lists = st.lists(any_op, min_size=1, max_size=7)
gold_lists = st.one_of(
    st.just([Op.no_op()]),
    st.lists(path_ops, min_size=1, max_size=6, unique_by=lambda op: op.path),
)
trees = st.dictionaries(st.sampled_from(PATHS), values, max_size=6).map(Tree)
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _score(pred, gold, tree, declined=()):
    return score(pred, gold, tree, TURNS, schema=SCHEMA, declined_ops=declined)


@PROPS
@given(pred_lists, gold_lists, trees, st.lists(path_ops, max_size=3))
def test_total_is_bounded(pred, gold, tree, declined):
    r = _score(pred, gold, tree, declined)
    assert -1.0 <= r.total <= 1.0


@PROPS
@given(pred_lists, gold_lists, trees, st.lists(path_ops, max_size=3), st.randoms(use_true_random=False))
def test_permutation_invariance(pred, gold, tree, declined, rnd):
    before = _score(pred, gold, tree, declined)
    shuffled_pred, shuffled_gold = list(pred), list(gold)
    rnd.shuffle(shuffled_pred)
    rnd.shuffle(shuffled_gold)
    after = _score(shuffled_pred, shuffled_gold, tree, declined)
    assert after == before  # every part, not only the total


@PROPS
@given(gold_lists, trees)
def test_perfect_prediction_is_one(gold, tree):
    assert _score(list(gold), gold, tree).total == 1.0


@PROPS
@given(st.text(alphabet="abcdefghij klmnop\n.,!?", max_size=200), gold_lists)
def test_garbage_text_is_minus_one(text, gold):
    assert _score(text, gold, TREE).total == -1.0


@PROPS
@given(pred_lists, gold_lists, trees, st.data())
def test_a_declined_op_lowers_the_score(pred, gold, tree, data):
    path_preds = [op for op in pred if op.type is not OpType.NO_OP]
    if not path_preds:
        return
    declined = data.draw(st.sampled_from(path_preds))
    without = _score(pred, gold, tree).total
    with_declined = _score(pred, gold, tree, [declined]).total
    assert with_declined < without or with_declined == -1.0


@PROPS
@given(pred_lists, trees)
def test_gate_part_equals_one_gate_call(pred, tree):
    """The cached per-op gate gives the reasons of one gate call over the batch (canonical order)."""
    r = _score(pred, [Op.no_op()], tree)
    canonical = sorted(pred, key=lambda op: (str(op.type), op.path or "", repr(op.value)))
    evidence = [t["content"] for t in TURNS if t["role"] == "user"]
    full = gate(SCHEMA, tree, canonical, GatePolicy(grounding=True), evidence)
    expected = sorted(
        str(x.reason) for x in full.rejected if x.reason not in ("DUPLICATE_PATH", "NO_OP_NOT_ALONE")
    )
    assert list(r.gate_reasons) == expected


def test_scoring_is_deterministic_across_calls():
    rnd = random.Random(0)
    pred = [Op.add(CITY, "moved to Porto"), Op.delete(PETS), Op.add(JOB, "engineer")]
    first = run(pred, GOLD)
    for _ in range(5):
        rnd.shuffle(pred)
        assert run(pred, GOLD) == first


# --- pinned results (the cold path was optimised; these values come from the code before) ---------

PIN_TURNS = TURNS + [
    {"role": "user", "content": "Tomás runs 1,000 m; e.g. ten laps at the NHS gym, (Dr. Lee's) advice."}
]
PINNED = [
    (
        [
            Op.add(CITY, "Porto, moved last year"),
            Op.add(JOB, "Data engineer at a bank."),
            Op.update(PETS, "cat Miso, puppy Bolt"),
            Op.update(EXERCISE, "swims twice a week in Lisbon"),
            Op.add("behaviour/media/music", "plays jazz piano"),
        ],
        {"total": 0.23721833721833718, "exact": 1, "partial": 3, "partial_credit": 1.6860916860916861},
        {"missing": 0, "redundant": 1, "gate_rejections": 2, "gate_reasons": ["UNGROUNDED", "UNGROUNDED"]},
        [
            (EXERCISE, "UNGROUNDED", "names not in the source: Lisbon"),
            (
                "behaviour/media/music",
                "UNGROUNDED",
                "only 0% of its content words are in the source (missing: jaz, piano, play)",
            ),
        ],
    ),
    (
        [
            Op.add(CITY, "tomas RUNS 1000 m"),
            Op.add(JOB, "runs 10 laps at the NHS gym"),
            Op.update(PETS, "Tomás's cat; Dr. Lee advises"),
            Op.update(EXERCISE, "runs 2,000 m with Ana"),
        ],
        {"total": -0.05, "exact": 0, "partial": 4, "partial_credit": 0.3},
        {"missing": 0, "redundant": 0, "gate_rejections": 1, "gate_reasons": ["UNGROUNDED"]},
        [(EXERCISE, "UNGROUNDED", "numbers not in the source: 2000; names not in the source: Ana")],
    ),
]


@pytest.mark.parametrize(("pred", "match", "rest", "rejections"), PINNED)
def test_pinned_scores_and_gate_details(pred, match, rest, rejections):
    report = score(pred, GOLD, TREE, PIN_TURNS, schema=SCHEMA).to_dict()
    assert {k: report[k] for k in match} == pytest.approx(match, abs=1e-12)
    assert {k: report[k] for k in rest} == rest
    evidence = [t["content"] for t in PIN_TURNS if t["role"] == "user"]
    rejected = gate(SCHEMA, TREE, pred, GatePolicy(grounding=True), evidence).rejected
    assert [(r.op.path, str(r.reason), r.detail) for r in rejected] == rejections
