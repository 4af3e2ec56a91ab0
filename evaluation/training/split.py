"""Deterministic train/val split by subject.

A subject's examples all go to one side, so no person's dialogue is in both train and val. The
side is a pure function of (seed, subject id): the first 8 bytes of ``sha256(f"{seed}:{subject_id}")``
read as an integer and divided by 2**64 give a number in [0, 1); below ``val_share`` is ``val``.
Changing the seed reshuffles; adding subjects never moves an existing one.
"""

from __future__ import annotations

import hashlib

TRAIN = "train"
VAL = "val"


def split_of(subject_id: int | str, *, seed: int = 0, val_share: float = 0.1) -> str:
    """``"train"`` or ``"val"`` for a subject (see the module docstring)."""
    if not 0.0 <= val_share <= 1.0:
        raise ValueError(f"val_share must be in [0, 1], got {val_share!r}")
    digest = hashlib.sha256(f"{seed}:{subject_id}".encode()).digest()
    return VAL if int.from_bytes(digest[:8], "big") / 2**64 < val_share else TRAIN
