"""Scoring a listener on held-out lines (evaluation.training.score): the teacher scores 1 on its own
lines, an inventing student scores less and its invented ops show as UNGROUNDED."""

from __future__ import annotations

import io
import json

from evaluation.training.distill import Subject, distill
from evaluation.training.score import score_lines
from serving.engines.extractive import ExtractiveEngine
from tests.evaluation.training.test_distill import SUBJECT, listener
from tests.serving.test_pointing import ScriptedEngine


def teacher_lines():
    out = io.StringIO()
    distill([SUBJECT, Subject("b", SUBJECT.turns[:4], "c")], listener(ExtractiveEngine()), out)
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_the_teacher_scores_one_on_its_own_lines():
    lines = teacher_lines()
    row = score_lines(listener(ExtractiveEngine()), lines)
    assert row["lines"] == len(lines) == 2
    assert row["score_mean"] == 1.0 and row["perfect_share"] == 1.0 and row["ungrounded_share"] == 0.0


def test_an_inventing_student_scores_lower_and_is_caught_ungrounded():
    lines = teacher_lines()
    invented = json.dumps({"ops": [{"op": "ADD", "sentence": 1, "leaf": 1, "value": "astronaut on Mars"}]})
    row = score_lines(listener(ScriptedEngine(invented, invented)), lines)
    assert row["score_mean"] < 0 and row["perfect_share"] == 0.0
    assert row["ungrounded_share"] == 1.0 and row["ops"] == 2
