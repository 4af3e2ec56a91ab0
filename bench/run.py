"""Run every benchmark module in bench/ and write bench/results/latest.json.

Each `bench/bench_<area>.py` exposes `run() -> dict[name, {value, unit, target, note}]`.
Metric names are fixed (the issues name them); a module that fails is reported
as a failure row and does not stop the others. Usage: `python bench/run.py [area ...]`.
`bench_gpu.py` (a GPU box with vLLM) runs only when named: `python bench/run.py gpu`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
OPT_IN = {"bench_gpu"}
sys.path.insert(0, str(HERE.parent))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _check(name: str, row: dict) -> dict:
    missing = {"value", "unit", "target", "note"} - set(row)
    if missing:
        raise ValueError(f"metric {name!r} lacks {sorted(missing)}")
    return {k: row[k] for k in ("value", "unit", "target", "note")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("areas", nargs="*", help="only these areas (e.g. engine store)")
    args = parser.parse_args(argv)
    modules = sorted(HERE.glob("bench_*.py"))
    if args.areas:
        modules = [m for m in modules if m.stem.removeprefix("bench_") in args.areas]
    else:  # opt-in modules run only when named (bench_gpu needs a GPU box and vLLM)
        modules = [m for m in modules if m.stem not in OPT_IN]
    results: dict[str, dict] = {}
    failures: list[str] = []
    for path in modules:
        started = time.perf_counter()
        print(f"-- {path.stem} ...", flush=True)
        try:
            rows = _load(path).run()
            for name, row in rows.items():
                results[name] = _check(name, row)
        except Exception:  # a broken benchmark is reported, the others still run
            failures.append(path.stem)
            traceback.print_exc()
        print(f"   {path.stem} took {time.perf_counter() - started:.1f} s", flush=True)

    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "latest.json"
    previous = json.loads(out.read_text()) if (out.exists() and args.areas) else {}
    previous.update(results)
    out.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")

    width = max((len(n) for n in results), default=10)
    print(f"\n{'metric':<{width}}  {'value':>12}  {'unit':<10} {'target':<10} note")
    for name in sorted(results):
        r = results[name]
        value = r["value"]
        shown = f"{value:.4g}" if isinstance(value, int | float) else str(value)
        print(f"{name:<{width}}  {shown:>12}  {r['unit']:<10} {str(r['target'] or ''):<10} {r['note']}")
    print(f"\nwrote {out}")
    if failures:
        print(f"FAILED benchmark modules: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
