"""Record real model outputs for the RecordedEngine.

    python -m evaluation.record --chunks tests/fixtures/recordings/chunks.json \
        --out tests/fixtures/recordings/memlistener.jsonl [--model-path var/models/memlistener.gguf]

Runs the real llama.cpp engine (constrained output, default schema unless ``--schema`` names a
schema file) on every chunk of the chunks file (``[{"name", "turns", "tree"?}]``) and writes one
recording line per chunk, keyed by the chunk's turns (``Prompt.turns_key``) so the recording
stays valid when the prompt wording changes. Each line names the model that wrote it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from memory.engine.schema import default_schema, load_schema
from serving.config import EngineConfig
from serving.engines.recorded import recording_entry
from serving.output_schema import op_list_schema
from serving.prompt import PROMPT_VERSION, build_prompt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evaluation.record")
    ap.add_argument("--chunks", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model-path", default="var/models/memlistener.gguf")
    ap.add_argument("--schema", default="", help="schema file (default: the shipped default schema)")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--max-ops", type=int, default=4)
    ap.add_argument("--prompt-cache-dir", default="var/cache/llama")
    args = ap.parse_args(argv)

    from serving.engines.llamacpp import LlamaCppEngine

    schema = load_schema(args.schema) if args.schema else default_schema()
    engine = LlamaCppEngine.from_config(
        EngineConfig(
            model_path=args.model_path, max_tokens=args.max_tokens, prompt_cache_dir=args.prompt_cache_dir
        )
    )
    json_schema = op_list_schema(schema, max_ops=args.max_ops)
    chunks = json.loads(Path(args.chunks).read_text(encoding="utf-8"))
    with Path(args.out).open("w", encoding="utf-8") as out:
        for chunk in chunks:
            prompt = build_prompt(schema, chunk.get("tree", {}), chunk["turns"])
            gen = engine.generate([prompt], json_schema)[0]
            if gen.error:
                print(f"{chunk.get('name')}: {gen.error}", file=sys.stderr)
                return 1
            line = recording_entry(
                prompt, gen.text, model_id=gen.model_id, by="turns", prompt_version=PROMPT_VERSION,
                schema=f"{schema.id}/v{schema.version}", prompt_tokens=gen.prompt_tokens,
                completion_tokens=gen.completion_tokens,
                note=f"chunk {chunk.get('name')}: real output of {gen.model_id}, max_tokens={args.max_tokens}",
            )  # fmt: skip
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            out.flush()
            print(f"{chunk.get('name')}: {gen.text}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
