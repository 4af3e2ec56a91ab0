"""Results writer: `results.json`, `results.md` (Markdown tables), PNG plots and the provenance record.

The results dict (built by the runners) has these optional sections, each rendered if present:
`provenance`, `run`, `ingestion` (op statistics), `modes` (mode -> accuracy table + context
tokens), `retrieval` (recall@k per category), `coverage` (observation facts held by the tree, judged),
`quality` (LLM-free value and coverage metrics per subject) and `context_recall` (per mode).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> dict:
    def run(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = run("rev-parse", "HEAD")
    dirty = bool(run("status", "--porcelain", "--untracked-files=no", "--", "memory", "serving", "workers"))
    return {"commit": commit or None, "dirty": dirty}


def provenance(**fields) -> dict:
    """The record of what produced a result: model ids, prompt/schema versions, commit, date, + fields."""
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **git_commit(),
        **fields,
    }


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def _table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def render_markdown(results: dict) -> str:
    out = [f"# {results.get('title', 'Evaluation results')}", ""]
    prov = results.get("provenance", {})
    if prov:
        out += [
            "## Provenance",
            "",
            _table(
                ["field", "value"],
                [[k, json.dumps(v) if isinstance(v, dict | list) else v] for k, v in prov.items()],
            ),
            "",
        ]
    run = results.get("run", {})
    if run:
        out += ["## What was run", ""]
        out += [f"- **{k}**: {json.dumps(v) if isinstance(v, dict | list) else v}" for k, v in run.items()]
        out.append("")
    modes = results.get("modes", {})
    if modes:
        out += ["## Answer accuracy per mode", ""]
        groups = sorted({g for m in modes.values() for g in m["accuracy"]["per_group"]})
        headers = ["mode", "n", "accuracy", "mean score", "failed", *groups]
        rows = []
        for name, m in modes.items():
            o = m["accuracy"]["overall"]
            cells = [name, o["n"], o["accuracy"], o.get("mean_score"), o["failed"]]
            for g in groups:
                r = m["accuracy"]["per_group"].get(g)
                cells.append(f"{_fmt(r['accuracy'])} ({r['correct']}/{r['n']})" if r else "–")
            rows.append(cells)
        out += [_table(headers, rows), ""]
        out += ["## Memory-context tokens per mode", ""]
        rows = [
            [
                name,
                m["context_tokens"]["n"],
                m["context_tokens"]["median"],
                m["context_tokens"]["p90"],
                m["context_tokens"]["max"],
                m.get("note", ""),
            ]
            for name, m in modes.items()
        ]
        out += [_table(["mode", "n", "median", "p90", "max", "note"], rows), ""]
    retrieval = results.get("retrieval")
    if retrieval:
        out += ["## Evidence recall@k (LLM-free)", ""]
        ks = [k for k in retrieval["overall"] if k.startswith("recall@")]
        rows = [["overall", retrieval["overall"]["n"], *[retrieval["overall"][k] for k in ks]]]
        rows += [[g, r["n"], *[r[k] for k in ks]] for g, r in retrieval["per_group"].items()]
        out += [
            _table(["category", "n", *ks], rows),
            "",
            f"Questions without usable evidence ids: {retrieval.get('skipped_without_evidence', 0)}",
            "",
        ]
    coverage = results.get("coverage")
    if coverage:
        out += ["## Observation coverage by the final tree (responder as judge)", ""]
        rows = [[s, c["facts"], c["covered"], c["judge_failed"], c["coverage"]] for s, c in coverage.items()]
        out += [_table(["subject", "facts", "covered", "judge failed", "coverage"], rows), ""]
    out += _quality_markdown(results)
    ingestion = results.get("ingestion")
    if ingestion:
        out += ["## Ingestion: op statistics", ""]
        rows = []
        for s, st in ingestion.items():
            ops = st["ops"]
            rows.append(
                [
                    s,
                    ops["chunks"],
                    ops["failed_calls"],
                    ops["schema_valid_rate"],
                    ops["no_op_rate"],
                    ops["ops_proposed"],
                    ops["op_accept_rate"],
                    json.dumps(ops["gate_rejections_by_reason"]),
                    ops["model_calls_per_chunk"],
                    ops["prompt_tokens_per_chunk"]["mean"],
                    ops["completion_tokens_per_chunk"]["mean"],
                    st.get("seconds_per_chunk"),
                ]
            )
        out += [
            _table(
                [
                    "subject",
                    "chunks",
                    "failed calls",
                    "schema-valid",
                    "NO_OP rate",
                    "ops",
                    "accepted",
                    "rejections by reason",
                    "calls/chunk",
                    "prompt tok/chunk",
                    "completion tok/chunk",
                    "s/chunk",
                ],
                rows,
            ),
            "",
        ]
    return "\n".join(out)


def _quality_markdown(results: dict) -> list[str]:
    out = []
    quality = results.get("quality")
    if quality and quality.get("rows"):
        taus = quality.get("taus") or []
        out += ["## Memory quality (LLM-free)", ""]
        rows = []
        for name, q in quality["rows"].items():
            v, c = q["values"], q["coverage"]
            rows.append(
                [
                    name,
                    v["values"],
                    v["grounded_rate"],
                    v["invented_rate"],
                    v["wrong_speaker_rate"],
                    c["facts"],
                    *[c["coverage"].get(f"{t:g}") for t in taus],
                    c["precision"],
                    c["clauses"],
                    c["tree_tokens"],
                ]
            )
        headers = ["subject", "values", "grounded", "invented", "wrong speaker", "facts"]
        headers += [f"coverage@{t:g}" for t in taus] + ["precision", "clauses", "tree tokens"]
        out += [
            _table(headers, rows),
            "",
            "Rates over the applied model ADD/UPDATE values (grounded: the gate's check against the "
            "subject's turns of the op's chunk + old value; invented: a number or proper noun in neither; "
            "wrong speaker: grounded only in the other speaker's turns). Coverage: observation facts whose "
            f"best cosine against a tree clause is >= τ ({quality.get('embedder')}); precision: clauses "
            "with an observation at >= 0.5; tree tokens: " + str(quality.get("tree_tokens")) + ".",
            "",
        ]
    recall = results.get("context_recall")
    if recall:
        out += ["## Context answer recall (LLM-free)", ""]
        groups = sorted({g for m in recall.values() for g in m["per_group"]})
        rows = [
            [mode, m["n"], m["mean"], m["full"], m["unmeasured"], *[m["per_group"].get(g) for g in groups]]
            for mode, m in recall.items()
        ]
        out += [
            _table(["mode", "n", "mean", "all tokens", "unmeasured", *groups], rows),
            "",
            "Share of the gold answer's tokens (stopwords removed) present in the context handed to the "
            "responder; questions without a gold answer (adversarial) are left out; unmeasured: the "
            "context was not obtained (failed answer call).",
            "",
        ]
    return out


def _plot_accuracy(modes: dict, path: Path) -> None:
    groups = sorted({g for m in modes.values() for g in m["accuracy"]["per_group"]}) + ["overall"]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(groups) * max(1, len(modes)) / 2), 4))
    width = 0.8 / max(1, len(modes))
    for i, (name, m) in enumerate(modes.items()):
        vals = [
            (m["accuracy"]["overall"] if g == "overall" else m["accuracy"]["per_group"].get(g, {})).get(
                "accuracy"
            )
            or 0
            for g in groups
        ]
        ax.bar([x + i * width for x in range(len(groups))], vals, width, label=name)
    ax.set_xticks(
        [x + width * (len(modes) - 1) / 2 for x in range(len(groups))],
        groups,
        rotation=30,
        ha="right",
        fontsize=7,
    )
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_tokens(modes: dict, path: Path) -> None:
    names = list(modes)
    med = [modes[n]["context_tokens"]["median"] or 0 for n in names]
    p90 = [modes[n]["context_tokens"]["p90"] or 0 for n in names]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], med, 0.4, label="median")
    ax.bar([x + 0.2 for x in xs], p90, 0.4, label="p90")
    ax.set_xticks(list(xs), names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("memory-context tokens")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_recall(retrieval: dict, path: Path) -> None:
    rows = {"overall": retrieval["overall"], **retrieval["per_group"]}
    ks = [k for k in retrieval["overall"] if k.startswith("recall@")]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, r in rows.items():
        ax.plot(
            [int(k.split("@")[1]) for k in ks],
            [r[k] or 0 for k in ks],
            marker="o",
            label=f"{name} (n={r['n']})",
        )
    ax.set_xlabel("k")
    ax.set_ylabel("evidence recall@k")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_results(results: dict, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "markdown": out / "results.md"}
    paths["json"].write_text(
        json.dumps(results, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8"
    )
    paths["markdown"].write_text(render_markdown(results) + "\n", encoding="utf-8")
    if results.get("modes"):
        paths["accuracy_png"] = out / "accuracy.png"
        _plot_accuracy(results["modes"], paths["accuracy_png"])
        paths["tokens_png"] = out / "context_tokens.png"
        _plot_tokens(results["modes"], paths["tokens_png"])
    if results.get("retrieval"):
        paths["recall_png"] = out / "recall_at_k.png"
        _plot_recall(results["retrieval"], paths["recall_png"])
    return paths
