"""Training-side micro-benchmarks: the op scorer (``memory.engine.scorer.score``), the reward.

Timings are medians of this process's CPU time per call (wall time and the 1-minute load average
are in the note), like ``bench_engine.py``.

- ``training.scorer_us``: score one 6-op prediction (2 exact, 2 partial, 1 on a path gold does not
  name, 1 ungrounded) against 6 gold ops on a 20-leaf tree of the default schema, with the
  grounded strict gate. *Cold*: the scorer's caches (per-op gate verdicts, normalised values) are
  cleared before every call, so every op pays the gate's grounding check.
- ``training.scorer_warm_us``: the same call with the caches warm: the case of a GRPO group whose
  samples of one prompt repeat ops (informational).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import print_rows  # noqa: E402
from memory.engine import Op, Tree, default_schema  # noqa: E402
from memory.engine import grounding as grounding_module  # noqa: E402
from memory.engine import scorer as scorer_module  # noqa: E402
from memory.engine.scorer import score  # noqa: E402

TURNS = [
    {
        "role": "user",
        "content": "I moved to Porto last year and I now work as a data engineer at a small bank.",
    },
    {"role": "assistant", "content": "Porto is lovely! How are the pets settling in?"},
    {"role": "user", "content": "Miso the cat hates the stairs, but we got a puppy called Bolt."},
    {"role": "assistant", "content": "A puppy! Are you still running?"},
    {"role": "user", "content": "No, my knee gave up, so I swim twice a week and do yoga on Sundays."},
    {"role": "assistant", "content": "Sounds like a good balance."},
]

FILLED = {
    "identity/family/pets": "a grey cat called Miso",
    "behaviour/habits/exercise": "runs 10k three times a week",
    "identity/location/current_city": "Lisbon",
}
GOLD = [
    Op.update("identity/location/current_city", "Porto, moved last year"),
    Op.add("identity/occupation/current_role", "data engineer at a small bank"),
    Op.update("identity/family/pets", "a grey cat called Miso and a puppy called Bolt"),
    Op.update("behaviour/habits/exercise", "swims twice a week, yoga on Sundays; knee gave up running"),
    Op.add("behaviour/habits/self_care", "yoga on Sundays"),
    Op.add("identity/location/home", "home with stairs in Porto"),
]
PRED = [
    Op.update("identity/location/current_city", "Porto, moved last year"),  # exact
    Op.add("identity/occupation/current_role", "Data engineer at a small bank."),  # exact (normalised)
    Op.update("identity/family/pets", "cat Miso and puppy Bolt"),  # partial
    Op.update("behaviour/habits/exercise", "swims twice a week"),  # partial
    Op.add("mind/emotion/baseline_mood", "happy in Porto"),  # redundant
    Op.add("behaviour/media/music", "plays jazz piano"),  # redundant + ungrounded
]


def _tree(schema) -> Tree:
    data = dict(FILLED)
    for leaf in schema.leaves:
        if len(data) == 20:
            break
        if (
            leaf.tier != "special"
            and leaf.path not in data
            and leaf.path not in {op.path for op in GOLD + PRED}
        ):
            data[leaf.path] = f"noted earlier: {leaf.description.lower()}"[: leaf.budget]
    return Tree(data)


def _median_us(fn, rounds: int, inner: int, before=None) -> tuple[float, float]:
    cpu, wall = [], []
    for _ in range(rounds):
        c = w = 0
        for _ in range(inner):
            if before is not None:
                before()
            c0, w0 = time.process_time_ns(), time.perf_counter_ns()
            fn()
            c += time.process_time_ns() - c0
            w += time.perf_counter_ns() - w0
        cpu.append(c / inner / 1000)
        wall.append(w / inner / 1000)
    return statistics.median(cpu), statistics.median(wall)


def _clear_caches() -> None:
    scorer_module._judge_one.cache_clear()
    scorer_module._normalise.cache_clear()
    grounding_module._profile.cache_clear()  # the chunk's turns, prepared once per chunk


def run() -> dict[str, dict]:
    schema = default_schema()
    tree = _tree(schema)
    for op in GOLD + PRED:
        if schema.leaf(op.path) is None:
            raise RuntimeError(f"benchmark path {op.path} is not in {schema.id}")

    def call():
        return score(PRED, GOLD, tree, TURNS, schema=schema)

    report = call()
    if not (report.exact == 2 and report.partial == 2 and report.gate_rejections >= 1):
        raise RuntimeError(f"benchmark prediction no longer has its intended mix: {report.to_dict()}")
    cold_us, cold_wall = _median_us(call, rounds=21, inner=20, before=_clear_caches)
    call()
    warm_us, warm_wall = _median_us(call, rounds=21, inner=100)
    load = os.getloadavg()[0]
    mix = (
        f"{report.exact} exact, {report.partial} partial, {report.redundant} redundant, "
        f"{report.missing} missing, gate {','.join(report.gate_reasons)}; total {report.total:.3f}"
    )
    return {
        "training.scorer_us": {
            "value": round(cold_us, 1),
            "unit": "us",
            "target": "<= 200",
            "note": f"6 pred vs 6 gold, {len(tree)}-leaf tree, grounded gate, caches cold; {mix}; "
            f"median CPU time (wall {cold_wall:.0f} us, load {load:.2f})",
        },
        "training.scorer_warm_us": {
            "value": round(warm_us, 1),
            "unit": "us",
            "target": None,
            "note": f"same call, per-op gate verdicts cached (repeated ops of a GRPO group); "
            f"median CPU time (wall {warm_wall:.0f} us, load {load:.2f})",
        },
    }


if __name__ == "__main__":
    print_rows(run())
