"""Export MemListener training examples from the audit log as JSONL (format: docs/TRAINING.md).

    python manage.py export_training_data --out var/training.jsonl [--tenant NAME]
        [--split-seed 0 --val-share 0.1] [--include-special]
        [--rebuild-pointing [--candidate-k 8 --candidate-threshold 0.3 --embedder minilm]]
        [--resume | --overwrite] [--no-progress]

One line per chunk a model processed (``evaluation.training.export``). An existing file is refused
unless ``--resume`` (append the chunks not yet in it) or ``--overwrite``. ``--resume`` first
re-reads the file: lines whose chunk no longer exists (the subject was erased since) and a torn
last line are dropped and the file rewritten, and every kept line must have the split the given
seed and share give its subject (otherwise the file was written with other split options).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from evaluation.training.cosine import CandidateSettings
from evaluation.training.export import Exporter, ExportOptions, model_chunks
from evaluation.training.split import split_of
from memory.models import Chunk


def read_existing(path: Path, *, seed: int, val_share: float) -> tuple[set[int], int]:
    """(chunk ids kept in the file, lines dropped); rewrites the file when lines are dropped."""
    kept, dropped = [], 0
    with path.open(encoding="utf-8") as fh:
        for raw in fh:
            try:
                line = json.loads(raw)
                chunk_id = int(line["chunk_id"])
            except (ValueError, KeyError, TypeError):
                dropped += 1  # a torn line from an interrupted run
                continue
            if line.get("split") != split_of(line["subject_id"], seed=seed, val_share=val_share):
                raise CommandError(
                    f"{path}: chunk {chunk_id} is in split {line.get('split')!r}, not the one "
                    "--split-seed/--val-share give; resume with the options the file was written with."
                )
            kept.append((chunk_id, raw if raw.endswith("\n") else raw + "\n"))
    ids = [cid for cid, _ in kept]
    alive = set()
    for start in range(0, len(ids), 5000):
        alive |= set(Chunk.objects.filter(pk__in=ids[start : start + 5000]).values_list("pk", flat=True))
    survivors = [(cid, raw) for cid, raw in kept if cid in alive]
    dropped += len(kept) - len(survivors)
    if dropped:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(raw for _, raw in survivors)
        os.replace(tmp, path)
    return {cid for cid, _ in survivors}, dropped


class Command(BaseCommand):
    help = "Export MemListener training examples (one JSONL line per model-processed chunk)."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="JSONL file to write")
        parser.add_argument("--tenant", default=None, help="only this tenant (by name)")
        parser.add_argument("--split-seed", type=int, default=0)
        parser.add_argument("--val-share", type=float, default=0.1)
        parser.add_argument(
            "--include-special", action="store_true", help="keep special-tier leaves and chunks"
        )
        parser.add_argument(
            "--rebuild-pointing",
            action="store_true",
            help="rebuild memlistener-pointing/4 prompts (loads the embedder)",
        )
        defaults = CandidateSettings()
        parser.add_argument(
            "--candidate-k", type=int, default=defaults.k, help="--rebuild-pointing: candidate leaves shown"
        )
        parser.add_argument(
            "--candidate-threshold",
            type=float,
            default=defaults.threshold,
            help="--rebuild-pointing: lowest candidate similarity",
        )
        parser.add_argument(
            "--embedder", choices=["minilm", "bge-m3"], default="minilm", help="--rebuild-pointing"
        )
        parser.add_argument("--embedder-path", default="", help="--rebuild-pointing: bge-m3's directory")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--resume", action="store_true", help="append chunks not yet in --out")
        mode.add_argument("--overwrite", action="store_true", help="replace an existing --out")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **opts):
        out = Path(opts["out"])
        if not 0.0 <= opts["val_share"] <= 1.0:
            raise CommandError("--val-share must be in [0, 1].")
        if opts["candidate_k"] < 1 or not -1.0 <= opts["candidate_threshold"] <= 1.0:
            raise CommandError("--candidate-k must be at least 1 and --candidate-threshold in [-1, 1].")
        skip: set[int] = set()
        if out.exists() and opts["resume"]:
            skip, dropped = read_existing(out, seed=opts["split_seed"], val_share=opts["val_share"])
            if dropped:
                self.stderr.write(f"dropped {dropped} line(s) of {out}: torn, or their subject was erased")
        elif out.exists() and not opts["overwrite"]:
            raise CommandError(f"{out} exists: pass --resume to append to it or --overwrite to replace it.")
        out.parent.mkdir(parents=True, exist_ok=True)

        pointing = None
        if opts["rebuild_pointing"]:
            from evaluation.training.pointing import pointing_prompt_builder
            from serving.embedder import default_embed

            threshold = opts["candidate_threshold"]
            settings = CandidateSettings(
                k=opts["candidate_k"], threshold=threshold, filled_threshold=threshold
            )
            pointing = pointing_prompt_builder(
                default_embed(opts["embedder"], opts["embedder_path"]), settings
            )
        exporter = Exporter(
            ExportOptions(
                tenant=opts["tenant"],
                seed=opts["split_seed"],
                val_share=opts["val_share"],
                include_special=opts["include_special"],
                skip_chunks=skip,
            ),
            pointing_prompt=pointing,
        )
        total = model_chunks(opts["tenant"]).count()
        bar = tqdm(total=total, desc="chunks", unit="chunk", file=sys.stderr, disable=opts["no_progress"])
        with bar, out.open("a" if opts["resume"] else "w", encoding="utf-8") as fh:
            for line in exporter.examples(on_chunk=lambda: bar.update(1)):
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.stdout.write(f"{out}: {exporter.stats.summary()}")
