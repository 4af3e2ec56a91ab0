"""What a chunk's ``last_error`` (read by staff and the ingest status) may keep: the error's kind
and a short reason; never the subject's or the model's text, URLs or paths (:func:`safe_chunk_error`).
"""

from __future__ import annotations

import re

MAX_CHARS = 200

_MASKS = (
    # quoted spans (repr of strings, JSON bodies), incl. escaped quotes inside them
    (re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""), "'…'"),
    (re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+"), "<url>"),  # URLs (the MemListener, Milvus, a server)
    (re.compile(r"(?<![\w.])(?:/[\w.@+-]+){2,}/?"), "<path>"),  # absolute paths (models, caches)
    (re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|\([^()]{40,}\)"), "{…}"),  # dicts, lists, long parentheses
    (re.compile(r"(input_value|input|value|text|content|prompt|output)=\S+"), r"\1=…"),
)


def safe_chunk_error(error: str) -> str:
    """The first line, quoted or bracketed spans, URLs and paths masked, at most :data:`MAX_CHARS`."""
    line = next((part.strip() for part in str(error).splitlines() if part.strip()), "")
    for pattern, placeholder in _MASKS:
        for _ in range(3):  # nested brackets: a few passes
            masked = pattern.sub(placeholder, line)
            if masked == line:
                break
            line = masked
    if len(line) > MAX_CHARS:
        line = line[: MAX_CHARS - 1] + "…"
    return line
