"""bench_quality's Synthetic-Persona-Chat side: each speaker of the chosen dialogues through the
listener, judged against the persona facts they state (``bench/bench_quality.py`` documents it)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Sequence

from bench.quality_locomo import TAU, Driver, _progress
from evaluation import quality
from evaluation.spc import sides


def measure_spc(rows: Sequence[dict], indices: Iterable[int], driver: Driver, tau: float = TAU) -> dict:
    """Each speaker of the chosen SPC dialogues: coverage at ``tau`` of the persona facts they state,
    and the share of their tree's clauses with a persona fact at ``tau``."""
    stated = covered = clauses = precise = facts = 0
    seconds: list[float] = []
    tree_clauses_all: list[str] = []
    key = f"{tau:g}"
    subjects = 0
    t0 = time.perf_counter()
    for n, side in enumerate(sides(rows, indices), start=1):
        if n % 100 == 0:
            _progress(f"SPC: {n} speakers, {time.perf_counter() - t0:.0f} s")
        run = driver.run(list(side.turns), side.subject)
        tree = dict(run["tree"])
        seconds += run["seconds"]
        said = quality.stated_facts(side.personas, side.sentences(), driver.embed, tau)
        cov = quality.observation_coverage(tree, said, driver.embed, taus=(tau,), precision_tau=tau, names=())
        prec = quality.observation_coverage(
            tree, side.personas, driver.embed, taus=(tau,), precision_tau=tau, names=()
        )
        subjects += 1
        facts += len(side.personas)
        stated += len(said)
        covered += cov["covered"][key]
        clauses += prec["clauses"]
        precise += prec["precise_clauses"] or 0
        tree_clauses_all += quality.tree_clauses(tree)
    return {
        "subjects": subjects,
        "persona_facts": facts,
        "stated": stated,
        "covered": covered,
        "coverage": round(covered / stated, 4) if stated else None,
        "clauses": clauses,
        "precise_clauses": precise,
        "precision": round(precise / clauses, 4) if clauses else None,
        "chunks": len(seconds),
        "s_per_chunk_p50": statistics.median(seconds) if seconds else None,
        "first_person_rate": quality.first_person_rate(tree_clauses_all),
        "words_per_clause_p50": quality.words_per_clause_p50(tree_clauses_all),
    }
