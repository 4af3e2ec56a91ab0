"""Merge the outputs of several runs over the same tenant into one result.

A local model answers one prompt at a time per process, so a long run can be split: trees built per
speaker in parallel (`--ingest-only --speakers X`, same `--tenant`), then the QA modes split between
processes (`--modes ...`, `--no-coverage` in all but one), each on its own copy of the evidence
index. `manage.py evaluate merge --out DIR PART...` joins their `results.json` files:

- every part must be the same benchmark over the same conversations, session slice and tenant, and
  parts that measured retrieval or QA must agree on k values and the QA limit;
- a QA mode or a coverage subject may come from one part only (two answers to one question would
  make the table a choice of ours); recall@k must be identical wherever it was measured;
- ingestion rows: per subject, the row of the part that sent that subject's chunks to the model
  (it carries the time per chunk); op statistics come from the audit log, so they agree otherwise;
- quality (LLM-free) comes from the last part that measured it (it reads the final trees and the audit
  log); context answer recall rows are joined, one per question and mode;
- the merged run is complete only when every part is, and names every part's command and provenance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from evaluation.quality import context_recall_section

SAME_RUN = ("conversations", "sessions")
SAME_MEASURE = ("ks", "qa_limit_per_conversation")


class MergeError(ValueError):
    """The parts cannot be merged; the message says which part and why."""


def load_part(path: str | Path) -> dict:
    p = Path(path)
    p = p / "results.json" if p.is_dir() else p
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise MergeError(f"{p}: no results.json there") from exc
    except json.JSONDecodeError as exc:
        raise MergeError(f"{p}: not a results file ({exc})") from exc


def merge_results(parts: Sequence[dict], names: Sequence[str] | None = None) -> dict:
    if len(parts) < 2:
        raise MergeError("merge needs at least two parts")
    names = list(names or [f"part {i + 1}" for i in range(len(parts))])
    first = parts[0]
    _check_same(parts, names)
    merged: dict = {"title": first.get("title", "Evaluation"), "benchmark": first.get("benchmark")}
    merged["ingestion"] = _merge_ingestion(parts)
    retrieval = [(n, p["retrieval"]) for n, p in zip(names, parts, strict=True) if p.get("retrieval")]
    for name, r in retrieval[1:]:
        if r != retrieval[0][1]:
            raise MergeError(f"{name}: recall@k differs from {retrieval[0][0]}'s (not the same index?)")
    if retrieval:
        merged["retrieval"] = retrieval[0][1]
        merged["retrieval_items"] = next(p["retrieval_items"] for p in parts if p.get("retrieval"))
    merged["coverage"] = _merge_unique(parts, names, "coverage", "coverage subject")
    merged["modes"] = _merge_unique(parts, names, "modes", "QA mode")
    merged["items"] = [item for p in parts for item in p.get("items", [])]
    quality = [p["quality"] for p in parts if p.get("quality")]
    if quality:  # computed from the store after ingestion: the last part saw the final trees
        merged["quality"] = quality[-1]
    recall_rows = {}
    for p in parts:
        for row in p.get("context_recall_items", []):
            recall_rows.setdefault((row["qid"], row["mode"]), row)
    if recall_rows:
        merged["context_recall_items"] = list(recall_rows.values())
        merged["context_recall"] = context_recall_section(merged["context_recall_items"])
    for key in ("coverage", "modes", "items"):
        if not merged[key]:
            del merged[key]
    runs = [p.get("run", {}) for p in parts]
    measured = next((r for r in runs if "ks" in r), runs[0])
    merged["run"] = {
        "merged_from": names,
        "commands": [r.get("command") for r in runs],
        "complete": all(r.get("complete", False) for r in runs),
        "notes": list(dict.fromkeys(n for r in runs for n in r.get("notes", []))),
        "conversations": first["run"].get("conversations"),
        "speakers": _speakers(runs),
        "sessions": first["run"].get("sessions"),
        "modes": list(merged.get("modes", {})),
        "ks": measured.get("ks"),
        "qa_limit_per_conversation": measured.get("qa_limit_per_conversation"),
        "questions_outside_slice": measured.get("questions_outside_slice"),
    }
    provs = [p.get("provenance", {}) for p in parts]
    merged["provenance"] = {
        **{k: v for k, v in provs[-1].items() if k not in ("date", "commit", "dirty")},
        "memlistener_model_ids": sorted({m for p in provs for m in p.get("memlistener_model_ids", [])}),
        "memlistener_prompt_versions": sorted(
            {v for p in provs for v in p.get("memlistener_prompt_versions", [])}
        ),
        "parts": [
            {"part": n, **{k: p.get(k) for k in ("date", "commit", "dirty", "commit_at_start")}}
            for n, p in zip(names, provs, strict=True)
        ],
    }
    return merged


def _check_same(parts: Sequence[dict], names: Sequence[str]) -> None:
    first, base = parts[0], names[0]
    for name, part in zip(names[1:], parts[1:], strict=True):
        if part.get("benchmark") != first.get("benchmark"):
            raise MergeError(
                f"{name}: benchmark {part.get('benchmark')!r}, {base} has {first.get('benchmark')!r}"
            )
        tenant = part.get("provenance", {}).get("tenant")
        if tenant != first.get("provenance", {}).get("tenant"):
            raise MergeError(f"{name}: tenant {tenant!r} is not {base}'s (parts must share one tenant)")
        for key in SAME_RUN:
            if part.get("run", {}).get(key) != first.get("run", {}).get(key):
                raise MergeError(f"{name}: run {key} differs from {base}'s")
    measuring = [(n, p["run"]) for n, p in zip(names, parts, strict=True) if "ks" in p.get("run", {})]
    for name, run in measuring[1:]:
        for key in SAME_MEASURE:
            if run.get(key) != measuring[0][1].get(key):
                raise MergeError(f"{name}: {key} differs from {measuring[0][0]}'s")


def _merge_unique(parts: Sequence[dict], names: Sequence[str], key: str, what: str) -> dict:
    out, owner = {}, {}
    for name, part in zip(names, parts, strict=True):
        for k, v in (part.get(key) or {}).items():
            if k in out:
                raise MergeError(f"{what} {k!r} is in both {owner[k]} and {name}")
            out[k], owner[k] = v, name
    return out


def _merge_ingestion(parts: Sequence[dict]) -> dict:
    out: dict[str, dict] = {}
    for part in parts:
        for subject, row in (part.get("ingestion") or {}).items():
            kept = out.get(subject)
            if kept is None or (row.get("chunks_processed_this_run") or 0) > (
                kept.get("chunks_processed_this_run") or 0
            ):
                out[subject] = row
    return out


def _speakers(runs: Sequence[dict]):
    values = [r.get("speakers") for r in runs]
    if "both" in values:
        return "both"
    return sorted({s for v in values if isinstance(v, list) for s in v})


__all__ = ["MergeError", "load_part", "merge_results"]
