"""Evidence indexing of many spans at once (a backfill's applied chunks): their units embedded in one
call (no database needed: another thread may do it), each span then written as its own task would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .indexing import _turns, evidence_index_span
from .units import pair_units

Span = tuple[int, int, int]  # (subject_id, start_seq, end_seq)


def span_texts(spans: Sequence[Span]) -> list[str]:
    """The distinct texts of the spans' pair units, in order."""
    return list(dict.fromkeys(u.text for s, a, b in spans for u in pair_units(_turns(s, a, b))))


def embed_texts(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """``texts`` embedded in one call, by text."""
    from memory.recall import runtime

    embedder = runtime.configured_embedder()
    return dict(zip(texts, embedder.embed(list(texts)), strict=True)) if texts else {}


class KnownVectors:
    """An embedder over vectors computed beforehand; a text it has not seen is embedded then."""

    def __init__(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.vectors = dict(vectors)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:  # the span changed since its texts were read (a message edited or erased)
            self.vectors.update(embed_texts(missing))
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)


def evidence_write_spans(spans: Sequence[Span], vectors: Mapping[str, np.ndarray]) -> dict[Span, int]:
    """Write every span with the given vectors; rows written per span (0 for an erased subject)."""
    known = KnownVectors(vectors)
    return {
        (s, a, b): evidence_index_span(subject_id=s, start_seq=a, end_seq=b, embedder=known)
        for s, a, b in spans
    }
