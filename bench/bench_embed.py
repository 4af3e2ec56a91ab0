"""MiniLM embedding speed: the transformers-only path (serving/embedder.py) against FlagEmbedding's
FlagModel.encode on the same packaged weights, in one process (same load). Needs the recall extra;
the FlagModel side runs only where the `bge` extra (FlagEmbedding) is installed.

    python bench/bench_embed.py [--texts 256] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from serving.embedder import MiniLMEmbedder  # noqa: E402

WORDS = "memory tree user likes swimming cat named Pixel moved to Lisbon works as a nurse since 2019".split()


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(4, 120))) for _ in range(n)]


def rate(fn, texts: list[str], repeat: int) -> float:
    fn(texts[:8])  # warm up (first call loads and traces)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(texts)
        best = min(best, time.perf_counter() - t0)
    return len(texts) / best


def in_fours(embed):
    return lambda texts: [embed(texts[i : i + 4]) for i in range(0, len(texts), 4)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    texts = corpus(args.texts)
    queries = corpus(4, seed=11)
    ours = MiniLMEmbedder(batch_size=64, max_length=256)
    out = {
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "texts": len(texts),
        "transformers_texts_per_s": round(rate(ours.embed, texts, args.repeat), 1),
        # agentic recall's shape: calls of 4 short queries (texts/s over 25 such calls)
        "transformers_query_calls_texts_per_s": round(
            rate(in_fours(ours.embed), queries * 25, args.repeat), 1
        ),
    }
    try:
        from FlagEmbedding import FlagModel
    except ImportError:
        out["flagembedding"] = "not installed (pip install -e '.[bge]')"
    else:
        flag = FlagModel(
            ours.path,
            pooling_method="mean",
            normalize_embeddings=True,
            use_fp16=False,
            devices="cpu",
            batch_size=64,
            passage_max_length=256,
            query_max_length=256,
        )

        def flag_embed(items: list[str]) -> np.ndarray:
            return np.asarray(flag.encode(items, batch_size=64, max_length=256), dtype=np.float32)

        out["flagmodel_texts_per_s"] = round(rate(flag_embed, texts, args.repeat), 1)
        diff = np.abs(flag_embed(texts) - ours.embed(texts)).max()
        out["max_abs_diff"] = float(f"{diff:.2e}")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
