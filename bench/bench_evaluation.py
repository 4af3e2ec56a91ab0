"""Evaluation harness costs that do not depend on a model: scoring and writing the results.

The model calls dominate a real run (see docs/results/README.md); these numbers show the harness
itself adds nothing noticeable per question.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import print_rows  # noqa: E402
from evaluation.datasets.locomo import LocomoQA  # noqa: E402
from evaluation.metrics import Outcome, accuracy_table, distribution  # noqa: E402
from evaluation.results import write_results  # noqa: E402
from evaluation.scoring import extract_choice, score_locomo  # noqa: E402

OPTIONS = (
    "It's great to see such innovative approaches in music, since you like producing music with software.",
    "I imagine it must have been quite an experience for anyone who loves eclectic sounds.",
    "Since you dislike anything involving music production, this must have been interesting.",
    "It's great to see such innovative approaches in art exhibitions.",
)
REPLIES = ['{"answer": "c"}', "The answer is (b) because you said so.", "I think (d) fits.", "not sure", None]
QAS = [
    (LocomoQA("q", "running, swimming", 1, ()), "she went running and later swimming"),
    (LocomoQA("q", "7 May 2023", 2, ()), "On 7 May 2023"),
    (LocomoQA("q", None, 5, (), adversarial_answer="violin"), "That is not mentioned."),
]


def _median_us(fn, n: int) -> float:
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(samples)


def run() -> dict[str, dict]:
    choice_us = _median_us(lambda: [extract_choice(r, OPTIONS) for r in REPLIES], 2000) / len(REPLIES)
    qa_us = _median_us(lambda: [score_locomo(p, q) for q, p in QAS], 2000) / len(QAS)
    outcomes = [Outcome(f"type{i % 7}", i % 3 == 0, failed=i % 11 == 0) for i in range(589)]
    results = {
        "title": "bench",
        "modes": {
            m: {"accuracy": accuracy_table(outcomes), "context_tokens": distribution(list(range(589)))}
            for m in ("no_memory", "full_history", "tree_only", "tree_router", "tree_agentic")
        },
        "retrieval": {"overall": {"n": 10, "recall@1": 0.5, "recall@5": 0.8}, "per_group": {}},
    }
    write_ms = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(3):
            t0 = time.perf_counter()
            write_results(results, Path(tmp) / str(i))
            write_ms.append((time.perf_counter() - t0) * 1000)
    return {
        "extract_choice_us": {
            "value": round(choice_us, 2),
            "unit": "us/reply",
            "target": None,
            "note": "median of 5 x 2000 rounds over 5 reply shapes",
        },
        "score_locomo_us": {
            "value": round(qa_us, 2),
            "unit": "us/answer",
            "target": None,
            "note": "token-F1 / abstention scorer, categories 1, 2, 5",
        },
        "results_write_ms": {
            "value": round(statistics.median(write_ms), 1),
            "unit": "ms",
            "target": None,
            "note": "results.json + results.md + 3 PNG plots, 5 modes x 589 questions",
        },
    }


if __name__ == "__main__":
    print_rows(run())
