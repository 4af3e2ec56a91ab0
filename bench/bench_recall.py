"""LoCoMo evidence recall@5/@10 for dense, BM25 and hybrid search.

Each LoCoMo sample becomes one subject in a fresh Milvus Lite collection (temp
dir); every pair unit (user turn + assistant reply, `memory.recall.units`) is
embedded with the configured embedder (MiniLM by default) and indexed. Gold =
the units containing each question's `evidence` turns. The recall computation
is `evaluation.recall_metrics.evaluate_recall`.

Data: env PERSONATREE_LOCOMO_PATH, default ../shared/benchmarks/locomo/locomo_dev5.json
(relative to the repository root); skipped with a note when absent.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import load_note, print_rows  # noqa: E402
from evaluation.recall_locomo import locomo_questions, locomo_turns  # noqa: E402
from evaluation.recall_metrics import evaluate_recall, unit_index  # noqa: E402
from memory.recall.index import EvidenceIndex, EvidenceRow, Scope  # noqa: E402
from memory.recall.search import search_many  # noqa: E402
from memory.recall.units import pair_units  # noqa: E402
from serving.embedder import get_embedder  # noqa: E402

KS = (5, 10)
TENANT = 1


def _locomo_path() -> Path:
    p = Path(os.environ.get("PERSONATREE_LOCOMO_PATH", "../shared/benchmarks/locomo/locomo_dev5.json"))
    return p if p.is_absolute() else (ROOT / p).resolve()


def run() -> dict[str, dict]:
    path = _locomo_path()
    names = [f"recall.locomo_{m}_at{k}" for m in ("dense", "bm25", "hybrid") for k in KS]
    if not path.exists():
        note = f"skipped: LoCoMo file not found at {path} (set PERSONATREE_LOCOMO_PATH)"
        return {n: {"value": float("nan"), "unit": "fraction", "target": None, "note": note} for n in names}
    samples = json.loads(path.read_text())
    embedder = get_embedder(
        os.environ.get("PERSONATREE_EMBEDDER", "minilm"), os.environ.get("PERSONATREE_EMBEDDER_PATH", "")
    )
    tmp = tempfile.mkdtemp(prefix="bench_recall_")
    index = EvidenceIndex(str(Path(tmp) / "ev.db"), dim=embedder.dim, collection="locomo")
    try:
        questions, turn_to_unit, subject_of = [], {}, {}
        t0 = time.perf_counter()
        n_units = 0
        for sid, sample in enumerate(samples, start=1):
            units = pair_units(locomo_turns(sample))
            n_units += len(units)
            vecs = embedder.embed([u.text for u in units])
            index.upsert(
                EvidenceRow(
                    TENANT, sid, u.start_seq, u.end_seq, u.text, vecs[i], ts_ms=u.ts_ms, session=u.session
                )
                for i, u in enumerate(units)
            )
            for tid, start in unit_index(units).items():
                turn_to_unit[f"{sid}/{tid}"] = (sid, start)
            for q in locomo_questions(sample, prefix=f"{sid}/"):
                questions.append(q.__class__(q.qid, q.category, tuple(f"{sid}/{g}" for g in q.gold_turns)))
                subject_of[q.qid] = sid
        index.flush()
        index_s = time.perf_counter() - t0
        texts = {
            f"{sid}/{i}": qa["question"] for sid, s in enumerate(samples, 1) for i, qa in enumerate(s["qa"])
        }
        qvecs = dict(
            zip([q.qid for q in questions], embedder.embed([texts[q.qid] for q in questions]), strict=True)
        )
        reports, timings = {}, {}
        by_subject: dict[int, list] = {}
        for q in questions:
            by_subject.setdefault(subject_of[q.qid], []).append(q)
        for method in ("dense", "bm25", "hybrid"):
            retrieved = {}
            t1 = time.perf_counter()
            for sid, qs in by_subject.items():
                for i in range(0, len(qs), 50):  # one multi-query request per 50 questions
                    part = qs[i : i + 50]
                    hits = search_many(
                        index,
                        embedder,
                        Scope(TENANT, sid),
                        [texts[q.qid] for q in part],
                        limit=max(KS),
                        method=method,
                        vectors=[qvecs[q.qid] for q in part],
                    )
                    for q, h in zip(part, hits, strict=True):
                        retrieved[q.qid] = [(x.subject_id, x.start_seq) for x in h]
            timings[method] = (time.perf_counter() - t1) / max(len(questions), 1) * 1000
            reports[method] = evaluate_recall(questions, retrieved, turn_to_unit, ks=KS)
    finally:
        index.close()
        shutil.rmtree(tmp, ignore_errors=True)

    out: dict[str, dict] = {}
    for method, rep in reports.items():
        cats = ", ".join(
            f"cat{c}: @5 {v[5]:.3f} @10 {v[10]:.3f} (n={rep.per_category_n[c]})"
            for c, v in rep.per_category.items()
        )
        note = (
            f"{len(samples)} LoCoMo samples, {n_units} pair units, {rep.n_scored} questions scored "
            f"({rep.n_skipped} without usable evidence skipped); embedder {embedder.name}; "
            f"indexing {index_s:.1f} s ({load_note()}); mean {timings[method]:.1f} ms/question search only (questions embedded in one batch, searched 50 per request); per category: {cats}"
        )
        for k in KS:
            out[f"recall.locomo_{method}_at{k}"] = {
                "value": round(rep.overall[k], 4),
                "unit": "fraction",
                "target": None,
                "note": note,
            }
    return out


if __name__ == "__main__":
    print_rows(run())
