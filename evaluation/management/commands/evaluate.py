"""`manage.py evaluate locomo|personamem ...` — run a benchmark through the real pipeline.

    manage.py evaluate locomo --data PATH [--conversations conv-26 ...] [--speakers Caroline ...]
        [--sessions N] [--modes ...] [--k 1 5 10] [--no-qa] [--no-coverage] [--no-quality]
    manage.py evaluate personamem --questions CSV --contexts JSONL [--limit N] [--modes ...]
    manage.py evaluate merge --out DIR PART_DIR PART_DIR ...   (runs over one tenant that split the work)

Common: `--memlistener SPEC` (default: the product's configured listener), `--responder SPEC`
(default `local`; see evaluation/endpoints.py),
`--out DIR` (results.json, results.md, PNG plots). Data paths come from the user; nothing is vendored.
Each run writes into a fresh tenant `eval-<run id>` of the configured database.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import uuid
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from evaluation import locomo_run, personamem_run, pipeline
from evaluation.datasets import DatasetError
from evaluation.endpoints import EndpointError
from evaluation.merge import MergeError, load_part, merge_results
from evaluation.results import write_results


class Command(BaseCommand):
    help = "Evaluate PersonaTree on LoCoMo or PersonaMem through the real pipeline."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="benchmark", required=True)
        loc = sub.add_parser("locomo", help="LoCoMo: a tree per speaker; recall@k, QA per category, coverage")
        loc.add_argument("--data", required=True, help="path of a LoCoMo JSON file (e.g. locomo10.json)")
        loc.add_argument("--conversations", nargs="+", help="sample ids to run (default: all)")
        loc.add_argument("--speakers", nargs="+", help="speaker names, or a/b (default: both)")
        loc.add_argument("--sessions", type=int, help="only the first N sessions of each conversation")
        loc.add_argument("--modes", nargs="+", default=list(locomo_run.MODES), choices=locomo_run.MODES)
        loc.add_argument("--k", nargs="+", type=int, default=[1, 5, 10], help="k values of recall@k")
        loc.add_argument("--no-qa", action="store_true", help="skip answering (recall@k and coverage only)")
        loc.add_argument("--qa-limit", type=int, help="answer only the first N questions per conversation")
        loc.add_argument("--no-coverage", action="store_true", help="skip the observation-coverage judge")
        loc.add_argument(
            "--quality",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="LLM-free memory quality: value grounding, MiniLM observation coverage, context answer "
            "recall (default on; also with --no-qa)",
        )
        loc.add_argument(
            "--ingest-only",
            action="store_true",
            help="build the trees and stop (re-run later with the same --tenant and --out for the rest)",
        )
        pm = sub.add_parser(
            "personamem", help="PersonaMem: multiple-choice accuracy per question type and mode"
        )
        pm.add_argument("--questions", required=True, help="questions CSV (e.g. questions_32k.csv)")
        pm.add_argument(
            "--contexts", required=True, help="shared contexts JSONL (e.g. shared_contexts_32k.jsonl)"
        )
        pm.add_argument("--limit", type=int, help="first N questions only")
        pm.add_argument(
            "--modes", nargs="+", default=list(personamem_run.MODES), choices=personamem_run.MODES
        )
        mg = sub.add_parser(
            "merge",
            help="join the results of runs over one tenant that split the work (evaluation/merge.py)",
        )
        mg.add_argument("parts", nargs="+", help="output folders (or results.json files) of the runs")
        mg.add_argument("--out", required=True, help="output folder of the merged result")
        for p in (loc, pm):
            p.add_argument(
                "--history-budget",
                type=int,
                default=6000,
                help="full-history mode: newest tokens of the (sliced) history that fit the responder window",
            )
            p.add_argument(
                "--memlistener",
                default=None,
                help="extractive | local | local:GGUF | recorded:JSONL | openai:URL[#model] | ray:URL "
                "(default: the product's configured MemListener, PERSONATREE_MEMLISTENER_BACKEND)",
            )
            p.add_argument(
                "--responder",
                default="local",
                help="local | local:GGUF | recorded:JSONL | openai:URL[#model]",
            )
            p.add_argument("--responder-max-tokens", type=int, default=48)
            p.add_argument(
                "--record-memlistener", help="append the MemListener's raw outputs to this recording"
            )
            p.add_argument("--record-responder", help="append the responder's replies to this recording")
            p.add_argument("--out", required=True, help="output folder")
            p.add_argument(
                "--tenant",
                help="tenant to write into; an existing one is reused (its applied chunks are not re-run)",
            )
            p.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **opts):
        if opts["benchmark"] == "merge":
            return self._merge(opts)
        for name in ("sessions", "limit", "qa_limit", "history_budget"):
            if opts.get(name) is not None and opts[name] < 1:
                raise CommandError(f"--{name} must be at least 1")
        if opts["benchmark"] == "locomo" and any(k < 1 for k in opts["k"]):
            raise CommandError("--k values must be at least 1")
        run_id = uuid.uuid4().hex[:8]
        Path(opts["out"]).mkdir(parents=True, exist_ok=True)
        try:
            ctx = pipeline.run_context(
                run_id=run_id,
                memlistener=opts["memlistener"],
                responder=opts["responder"],
                responder_max_tokens=opts["responder_max_tokens"],
                record_memlistener=opts["record_memlistener"],
                record_responder=opts["record_responder"],
                tenant_name=opts["tenant"],
                usage_path=str(Path(opts["out"]) / "memlistener_usage.json"),
            )
        except EndpointError as exc:
            raise CommandError(str(exc)) from exc
        progress = None if opts["no_progress"] else (lambda **kw: tqdm(file=sys.stderr, **kw))
        ctx.progress = not opts["no_progress"]
        try:
            if opts["benchmark"] == "locomo":
                results = locomo_run.run_locomo(
                    data_path=opts["data"],
                    ctx=ctx,
                    conversations=opts["conversations"],
                    speakers=opts["speakers"],
                    max_sessions=opts["sessions"],
                    modes=opts["modes"],
                    ks=opts["k"],
                    qa=not opts["no_qa"],
                    qa_limit=opts["qa_limit"],
                    ingest_only=opts["ingest_only"],
                    checkpoint=lambda partial: self._write(partial, ctx, run_id, opts, final=False),
                    coverage=not opts["no_coverage"],
                    quality=opts["quality"],
                    history_budget=opts["history_budget"],
                    progress=progress,
                )
            else:
                results = personamem_run.run_personamem(
                    questions_path=opts["questions"],
                    contexts_path=opts["contexts"],
                    ctx=ctx,
                    modes=opts["modes"],
                    limit=opts["limit"],
                    history_budget=opts["history_budget"],
                    progress=progress,
                )
        except (DatasetError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        for kind, path in self._write(results, ctx, run_id, opts, final=True).items():
            self.stdout.write(f"{kind}: {path}")

    def _merge(self, opts: dict) -> None:
        try:
            parts = [load_part(p) for p in opts["parts"]]
            merged = merge_results(parts, names=opts["parts"])
        except MergeError as exc:
            raise CommandError(str(exc)) from exc
        merged["run"]["command"] = _command_line(opts)
        for kind, path in write_results(merged, opts["out"]).items():
            self.stdout.write(f"{kind}: {path}")

    def _write(self, results: dict, ctx, run_id: str, opts: dict, *, final: bool) -> dict:
        out = dict(results)
        out["provenance"] = pipeline.run_provenance(ctx)
        out["run"] = {
            "command": _command_line(opts),
            "run_id": run_id,
            "complete": final,
            "notes": ctx.notes,
            **results.get("run", {}),
        }
        return write_results(out, opts["out"])


def _command_line(opts: dict) -> str:
    """The command as typed when run from a shell; else rebuilt from the options (call_command)."""
    if "evaluate" in sys.argv:
        return "manage.py " + shlex.join(sys.argv[sys.argv.index("evaluate") :])
    skip = {
        "verbosity",
        "settings",
        "pythonpath",
        "traceback",
        "no_color",
        "force_color",
        "skip_checks",
        "benchmark",
    }
    parts = ["manage.py", "evaluate", opts["benchmark"]]
    for k, v in opts.items():
        if k == "quality":  # on by default: only its negation is part of the command
            parts += [] if v else ["--no-quality"]
            continue
        if k in skip or v in (None, False):
            continue
        flag = "--" + k.replace("_", "-")
        if v is True:
            parts.append(flag)
        else:
            parts += [flag, *(map(str, v) if isinstance(v, list) else [str(v)])]
    return shlex.join(parts)
