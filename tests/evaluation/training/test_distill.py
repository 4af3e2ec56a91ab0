"""Teacher runs (evaluation.training.distill): lines a student can learn from and be scored on.

The context step is the cosine one on the deterministic bag-of-words embedder of
tests/serving/test_pointing.py, so candidate choice is exact; the teacher is the real extractive
engine, or a scripted reply that mixes a grounded pointer with an invented one.
"""

from __future__ import annotations

import io
import json

from evaluation.training.cosine import CandidateSettings, LeafIndex, PointingStep
from evaluation.training.data import read_lines, to_row
from evaluation.training.distill import RecordingEngine, Subject, distill
from memory.engine.ops import Op
from memory.engine.schema import default_schema
from memory.engine.tree import Tree, apply
from serving.engines.base import sha256_text
from serving.engines.extractive import ExtractiveEngine
from serving.engines.recorded import RecordedEngine
from serving.listener import MemListener
from serving.protocol import ListenerJob
from tests.serving.test_pointing import ScriptedEngine, bag_embed

SETTINGS = CandidateSettings(k=6, threshold=0.2, filled_threshold=0.2)


def listener(engine) -> MemListener:
    return MemListener(RecordingEngine(engine), pointing=PointingStep(LeafIndex(bag_embed), SETTINGS))


def talk(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    turns = []
    for user, assistant in pairs:
        turns += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return turns


SUBJECT = Subject(
    key="conv-x:Ana",
    conversation="conv-x",
    turns=talk(
        ("I moved to Porto last spring for a job.", "Nice!"),
        ("My current city is Porto and I love the river.", "Sounds lovely."),
        ("What do you think about the weather today?", "Sunny."),
        ("Hello there.", "Hi."),
        ("Nice to talk.", "Likewise."),
        ("See you.", "Bye."),
    ),
)


def run(engine, subjects=(SUBJECT,), **kw):
    out = io.StringIO()
    stats = distill(list(subjects), listener(engine), out, **kw)
    return [json.loads(x) for x in out.getvalue().splitlines()], stats


def test_extractive_teacher_lines_replay_to_the_teachers_ops(tmp_path):
    lines, stats = run(ExtractiveEngine())
    # chunk 1 states facts; chunk 2 has no self-disclosure, so no model call and no line
    assert stats.chunks == 2 and stats.lines == 1 and stats.skipped["no_model_call"] == 1
    line = lines[0]
    assert line["prompt_version"] == "memlistener-pointing/4" and line["split"] == "train"
    gold = [Op.from_dict({k: v for k, v in g.items() if k != "origin"}) for g in line["gold"]]
    assert any(op.path == "identity/location/current_city" for op in gold)
    # a student that writes exactly the target gets exactly the teacher's accepted ops
    replay = MemListener(
        RecordedEngine(entries=[{"key": sha256_text(line["prompt"]["dynamic"]), "text": line["target"]}]),
        pointing=PointingStep(LeafIndex(bag_embed), SETTINGS),
    )
    job = ListenerJob(job_id="j", subject_id="s", base_version=0, schema_id=line["schema_id"],
                      schema_version=line["schema_version"], tree=line["tree"], turns=line["turns"])  # fmt: skip
    res = replay.run([job])[0]
    assert [o.to_op() for o in res.accepted] == gold
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rows, skipped = read_lines(path, split="train")
    assert len(rows) == 1 and not skipped
    row = to_row(rows[0])
    assert row["prompt"][1]["content"] == line["prompt"]["dynamic"]
    assert row["completion"][0]["content"] == line["target"]


def test_target_keeps_only_the_pointers_that_became_accepted_ops():
    reply = json.dumps(
        {
            "ops": [
                {"op": "ADD", "sentence": 1, "leaf": 1, "value": "Porto"},
                {"op": "ADD", "sentence": 1, "leaf": 2, "value": "astronaut on Mars"},
            ]
        }
    )
    lines, stats = run(ScriptedEngine(reply), subjects=[Subject("s", SUBJECT.turns[:2], "c")])
    # one candidate leaf here: the second item points at a slot id the prompt never listed
    assert stats.lines == 1 and stats.items_dropped == 1 and lines[0]["parse_errors"] == 1
    assert json.loads(lines[0]["target"])["ops"] == [
        {"op": "ADD", "sentence": 1, "leaf": 1, "value": "Porto"}
    ]


def test_nothing_accepted_teaches_no_op_and_val_conversations_are_held_out():
    reply = json.dumps({"ops": [{"op": "ADD", "sentence": 1, "leaf": 1, "value": "astronaut on Mars"}]})
    lines, _ = run(
        ScriptedEngine(reply), subjects=[Subject("s", SUBJECT.turns[:2], "held")], val_conversations=["held"]
    )
    assert json.loads(lines[0]["target"]) == {"ops": []}
    assert [r["reason"] for r in lines[0]["rejected"]] == ["UNGROUNDED"]
    assert lines[0]["gold"] == [{"op": "NO_OP", "path": None, "value": None, "origin": "teacher"}]
    assert lines[0]["split"] == "val"


def test_each_chunk_sees_the_tree_the_teacher_built_so_far():
    more = talk(("I work as a nurse at the city hospital.", "Cool."), ("Hi.", "Hi."), ("Bye.", "Bye."))
    lines, _ = run(ExtractiveEngine(), subjects=[Subject("s", SUBJECT.turns[:6] + more, "c")])
    assert len(lines) == 2 and lines[0]["tree"] == {}
    first = [Op.from_dict({k: v for k, v in g.items() if k != "origin"}) for g in lines[0]["gold"]]
    assert first and lines[1]["tree"] == apply(Tree.empty(), first)[0].to_dict()
    assert lines[1]["schema_id"] == default_schema().id


def test_the_reward_maps_pointing_replies_like_the_listener():
    from evaluation.training.data import to_row
    from evaluation.training.reward import ScorerReward

    line = run(ExtractiveEngine())[0][0]
    row = to_row(line)
    columns = {
        k: [row[k]] * 4
        for k in ("gold", "negatives", "tree", "turns", "pointing", "schema_id", "schema_version")
    }
    first = json.loads(line["target"])["ops"][0]
    replies = [
        line["target"],  # what the teacher wrote, reduced to its accepted items
        "I think the user lives in Porto.",  # not the JSON the prompt asks for
        json.dumps({"ops": [{**first, "value": "astronaut on Mars"}]}),  # invented value
        json.dumps(
            {
                "ops": json.loads(line["target"])["ops"]
                + [{"op": "ADD", "sentence": 99, "leaf": 1, "value": "x"}]
            }
        ),
    ]
    rewards = ScorerReward()([None] * 4, replies, **columns)
    assert rewards[0] == 1.0 and rewards[1] == -1.0
    assert rewards[2] < 0 and 0 < rewards[3] < 1.0  # an unreadable item costs a parse error
