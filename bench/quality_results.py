"""bench_quality's results: the metric rows of bench/results/latest.json, the printed table and the
run folder's ``<date>-<sha>.json`` / ``.md`` (``bench/bench_quality.py`` documents the metrics)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from bench.quality_locomo import ROOT

RESULTS = ROOT / "bench" / "results" / "latest.json"
RUNS = ROOT / "bench" / "results" / "quality"
SAMPLE = 40
SEED = 0
TARGETS = {
    "quality.locomo_obs_coverage_06": ">= 0.40",
    "quality.locomo_obs_precision_06": ">= 0.55",
    "quality.first_person_rate": "<= 0.02",
    "quality.words_per_clause_p50": "<= 12",
    "quality.answerable_ratio": ">= 0.80",
    "quality.answerable_words_ratio": "<= 0.10",
    "quality.false_deletes": "0",
    "quality.spc_stated_coverage_06": ">= 0.60",
    "memlistener.s_per_chunk_p50": "<= 1.0",
}

# --- metrics ---------------------------------------------------------------------------------------


def _metric(value, unit, note, target=None):
    return {"value": value, "unit": unit, "target": target, "note": note}


def _rnd(x, n=4):
    return None if x is None else round(float(x), n)


def _set_values(p: dict) -> dict[str, object]:
    """The headline numbers of one pooled set, by metric name."""
    v, c, a = p["values"], p["coverage"], p["answerable"]
    at = c.get("precision_at") or {}
    return {
        "memlistener.grounded_rate": v["grounded_rate"],
        "memlistener.invented_rate": v["invented_rate"],
        "memlistener.wrong_speaker_rate": v["wrong_speaker_rate"],
        "memlistener.s_per_chunk_p50": _rnd(p["s_per_chunk_p50"]),
        "memlistener.model_skip_share": _rnd(p["model_skip_share"]),
        "quality.locomo_obs_coverage": c["coverage"].get("0.5"),
        "quality.locomo_obs_coverage_06": c["coverage"].get("0.6"),
        "quality.locomo_obs_coverage_07": c["coverage"].get("0.7"),
        "quality.locomo_obs_precision": c["precision"],
        "quality.locomo_obs_precision_06": at.get("0.6"),
        "quality.tree_tokens_p50": _rnd(p["tree_tokens_p50"], 1),
        "quality.first_person_rate": p["first_person_rate"],
        "quality.words_per_clause_p50": p["words_per_clause_p50"],
        "quality.answerable_ratio": a["ratio"],
        "quality.answerable_words_ratio": p["answerable_words_ratio"],
        "quality.answerable_ratio_first_person_paste": p["pasted"]["ratio"],
        "quality.answerable_words_ratio_first_person_paste": p["pasted"]["words_ratio"],
        "quality.false_deletes": p["false_deletes"],
    }


UNITS = {"memlistener.s_per_chunk_p50": "s", "quality.tree_tokens_p50": "tokens",
         "quality.words_per_clause_p50": "words", "quality.false_deletes": "ops"}  # fmt: skip


def _detail(name: str, p: dict) -> str:
    v, c, a = p["values"], p["coverage"], p["answerable"]
    if name == "memlistener.model_skip_share":
        return f"chunks answered without a model call, of {p['chunks']}"
    if name.startswith("memlistener.") and name != "memlistener.s_per_chunk_p50":
        return f"{v['values']} applied ADD/UPDATE values"
    if name == "memlistener.s_per_chunk_p50":
        return f"median wall time of one listener call over {p['chunks']} chunks ({p['errors']} errors)"
    if name.startswith("quality.locomo_obs"):
        return f"{c['facts']} observation facts, {c['clauses']} clauses, neutralised MiniLM cosine"
    if name == "quality.answerable_ratio":
        return (f"{a['questions']} questions (cat 1-4, naming a speaker): answer words all in the trees "
                f"{a['in_tree']}, in the history {a['in_history']}")  # fmt: skip
    if name == "quality.answerable_words_ratio":
        return f"tree words {p['tree_words']} / history words {p['history_words']}"
    if name.endswith("_first_person_paste"):
        return ("the reference: every clause of both speakers saying I/my/we/our pasted, with every "
                "session date (dates not counted as words)")  # fmt: skip
    if name == "quality.false_deletes":
        return "DELETEs + UPDATEs only removing clauses; no real retraction in the dev data (list in the run file)"
    return f"{p['clauses']} clauses"


def metrics(m: dict) -> dict[str, dict]:
    """latest.json rows: the validation set's values (the tune set's in the note), SPC, the load."""
    head = m.get("validation") or m.get("tune") or m
    other = m.get("tune") if m.get("validation") else None
    load = f"load average {m.get('load', os.getloadavg()[0]):.1f} on {os.cpu_count() or 0} cores"
    label = m.get("label") or head.get("label", "")
    where = f"LoCoMo {'+'.join(head['conversations'])} ({label}, both speakers)"
    head_values = _set_values(head)
    other_values = _set_values(other) if other else {}
    rows = {}
    for name, value in head_values.items():
        note = f"{_detail(name, head)}; {where}"
        if other:
            note += (
                f"; tune {'+'.join(other['conversations'])}: {other_values[name]} ({_detail(name, other)})"
            )
        if name.startswith("quality.locomo_obs") and m.get("null_coverage"):
            null = m["null_coverage"]
            key = name.removeprefix("quality.locomo_obs_")
            floor = {
                "coverage": null["coverage"].get("0.5"),
                "coverage_06": null["coverage"].get("0.6"),
                "coverage_07": null["coverage"].get("0.7"),
                "precision": null["precision"],
                "precision_06": (null["precision_at"] or {}).get("0.6"),
            }.get(key)
            note += f"; judge floor (each conversation's facts against the next one's trees): {floor}"
        rows[name] = _metric(value, UNITS.get(name, "ratio"), f"{note}; {load}", TARGETS.get(name))
    spc = m.get("spc")
    spc_where = m.get("spc_data") or "skipped: no --spc"
    if spc:
        base = (f"{spc['subjects']} speakers, {spc['stated']} of {spc['persona_facts']} persona facts stated "
                f"(cosine >= 0.6 to a sentence), {spc['clauses']} clauses, {spc['chunks']} chunks "
                f"(s/chunk p50 {_rnd(spc['s_per_chunk_p50'])}), first-person {spc['first_person_rate']}, "
                f"words/clause p50 {spc['words_per_clause_p50']}; {spc_where}; {load}")  # fmt: skip
        rows["quality.spc_stated_coverage_06"] = _metric(
            spc["coverage"], "ratio", f"stated facts with a clause at >= 0.6; {base}",
            TARGETS["quality.spc_stated_coverage_06"])  # fmt: skip
        rows["quality.spc_precision_06"] = _metric(
            spc["precision"], "ratio", f"clauses with a persona fact at >= 0.6; {base}"
        )
    else:
        for name in ("quality.spc_stated_coverage_06", "quality.spc_precision_06"):
            rows[name] = _metric(None, "ratio", f"{spc_where}; {load}", TARGETS.get(name))
    if m.get("leaf_accuracy"):
        acc = m["leaf_accuracy"]
        rows["quality.leaf_accuracy"] = _metric(
            acc.get("accuracy"), "ratio", json.dumps(acc)[:300], ">= 0.80"
        )
    return rows


# --- output ----------------------------------------------------------------------------------------


def _fmt(x) -> str:
    return "–" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


SUMMARY = [("cov@.6", "quality.locomo_obs_coverage_06"), ("prec@.6", "quality.locomo_obs_precision_06"),
           ("1st person", "quality.first_person_rate"), ("words p50", "quality.words_per_clause_p50"),
           ("answerable", "quality.answerable_ratio"), ("words ratio", "quality.answerable_words_ratio"),
           ("false del", "quality.false_deletes"), ("grounded", "memlistener.grounded_rate"),
           ("s/chunk", "memlistener.s_per_chunk_p50")]  # fmt: skip


def summary_rows(m: dict) -> list[tuple[str, dict]]:
    sets = [(name, p) for name, p in (m.get("per_conversation") or {}).items()]
    sets += [(f"{k} pooled", m[k]) for k in ("tune", "validation") if m.get(k)]
    if not sets and m.get("conversations"):
        sets = [(m["conversation"], m)]
    return sets


def summary_cells(p: dict) -> list[str]:
    """One set's SUMMARY values, formatted (a row of the printed table and of the markdown one)."""
    values = _set_values(p)
    return [_fmt(values[k]) for _, k in SUMMARY]


def print_table(m: dict) -> None:
    print(f"{m.get('label')}: " + " | ".join(h for h, _ in SUMMARY))
    for name, p in summary_rows(m):
        print(f"{name:<18} {p['chunks']:>5} chunks | " + " | ".join(summary_cells(p)))
    if m.get("spc"):
        spc = m["spc"]
        print(f"SPC {m['spc_data']}: stated coverage@.6 {_fmt(spc['coverage'])}, precision@.6 "
              f"{_fmt(spc['precision'])} ({spc['stated']} stated facts, {spc['clauses']} clauses)")  # fmt: skip


def markdown(m: dict, rows: dict[str, dict], stamp: str) -> str:
    """The run's readable summary: the metrics, per-set table, removals, a sample of values."""
    head = "+".join((m.get("validation") or m.get("tune") or {}).get("conversations", []))
    tune_names = "+".join(m["tune"]["conversations"]) if m.get("tune") and m.get("validation") else "–"
    out = [f"# Quality run {stamp}", "",
           f"Listener: {m['label']}; data {m['data']}; SPC {m.get('spc_data')}; turns carry ts: {m['ts_passed']}; "
           f"{m['seconds']} s (LoCoMo {m['locomo_seconds']} s); load average {m['load']:.1f} on "
           f"{os.cpu_count() or 0} cores.", "",
           f"| metric | value ({head}) | target | tune ({tune_names}) |", "|---|---|---|---|"]  # fmt: skip
    tune = _set_values(m["tune"]) if m.get("tune") and m.get("validation") else {}
    for name, r in rows.items():
        out.append(f"| `{name}` | {_fmt(r['value'])} | {r['target'] or ''} | {_fmt(tune.get(name))} |")
    out += ["", "| set | chunks | " + " | ".join(h for h, _ in SUMMARY) + " |",
            "|---|---|" + "---|" * len(SUMMARY)]  # fmt: skip
    for name, p in summary_rows(m):
        out.append(f"| {name} | {p['chunks']} | " + " | ".join(summary_cells(p)) + " |")
    null = m.get("null_coverage")
    if null:
        out += ["", f"Judge floor (each conversation's facts against the next conversation's trees, neutralised): "
                f"coverage@.6 {_fmt(null['coverage'].get('0.6'))}, precision@.6 "
                f"{_fmt((null['precision_at'] or {}).get('0.6'))}."]  # fmt: skip
    removals = [r for k in ("tune", "validation") if m.get(k) for r in m[k]["removals"]]
    out += ["", f"## Removals ({len(removals)}; the dev conversations hold no real retraction)", ""]
    for r in removals:
        said = " / ".join(r["user_turns"])[:300]
        out.append(f"- {r['subject']} chunk {r['chunk']}: {r['op']} `{r['path']}` dropped "
                   f"{json.dumps(r['dropped'])[:200]}; user said: {said!r}")  # fmt: skip
    out += ["", f"## {len(m['sample'])} tree values (seeded sample, seed {SEED})", "",
            "| subject | leaf | value |", "|---|---|---|"]  # fmt: skip
    for r in m["sample"]:
        value = r["value"].replace("|", "\\|")
        out.append(f"| {r['subject']} | `{r['path']}` | {value} |")
    return "\n".join(out) + "\n"


def _git_sha() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip() or "nogit"  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "nogit"


def _jsonable(m: dict) -> dict:
    """The run record without trees' internals (trees as plain dicts, rows dropped)."""

    def clean(p: dict | None) -> dict | None:
        if p is None:
            return None
        return {k: v for k, v in p.items() if k not in ("speakers",)}

    return {
        **{k: v for k, v in m.items() if k not in ("tune", "validation", "per_conversation")},
        "tune": clean(m.get("tune")),
        "validation": clean(m.get("validation")),
        "per_conversation": {k: clean(v) for k, v in (m.get("per_conversation") or {}).items()},
    }


def write_run(m: dict, rows: dict[str, dict], folder: Path | None = None) -> tuple[Path, Path]:
    """``<folder>/<date>-<sha>.json`` (metrics + the run record) and ``.md`` (the readable summary)."""
    folder = folder or RUNS
    folder.mkdir(parents=True, exist_ok=True)
    stamp = f"{dt.date.today().isoformat()}-{_git_sha()}"
    record = {"metrics": rows, "run": _jsonable(m), "command": " ".join(["python", *sys.argv])}
    json_path, md_path = folder / f"{stamp}.json", folder / f"{stamp}.md"
    json_path.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    md_path.write_text(markdown(m, rows, stamp), encoding="utf-8")
    return json_path, md_path


def write_latest(rows: dict[str, dict]) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    previous.update(rows)
    RESULTS.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")


NAMES = (
    "memlistener.grounded_rate", "memlistener.invented_rate", "memlistener.wrong_speaker_rate",
    "memlistener.s_per_chunk_p50", "memlistener.model_skip_share", "quality.locomo_obs_coverage",
    "quality.locomo_obs_coverage_06", "quality.locomo_obs_coverage_07", "quality.locomo_obs_precision",
    "quality.locomo_obs_precision_06", "quality.tree_tokens_p50", "quality.first_person_rate",
    "quality.words_per_clause_p50", "quality.answerable_ratio", "quality.answerable_words_ratio",
    "quality.answerable_ratio_first_person_paste", "quality.answerable_words_ratio_first_person_paste",
    "quality.false_deletes", "quality.spc_stated_coverage_06", "quality.spc_precision_06",
)  # fmt: skip


def _skipped(path: Path) -> dict[str, dict]:
    note = f"skipped: LoCoMo file not found at {path} (pass --data or set PERSONATREE_LOCOMO_PATH)"
    return {k: _metric(None, UNITS.get(k, "ratio"), note, TARGETS.get(k)) for k in NAMES}
