"""Hostile values for the long negative run (``tests/fuzz/hostile_run.py``), as schemathesis hooks.

Loaded with ``SCHEMATHESIS_HOOKS=tests.fuzz.hostile`` (it registers the contract's own check too).
Every generated body, query and path parameter goes through :func:`hostile`: with a seeded random
choice, strings get a NUL, a lone surrogate (sent as the JSON escape ``\\ud800``), right-to-left
marks, combining marks, astral characters or a 70,000-character run; numbers become huge (2**64,
-2**63 - 1, 10**400, 1e308); and a value may be buried in 400 levels of nested lists or objects
(deeper than the decoder can go is the parser's own 400, tested in tests/memory/api).
Query and path values cannot carry a lone surrogate (the client cannot encode one in a URL): they get
NUL, unicode and huge numbers only. Never part of the default suite.
"""

from __future__ import annotations

import os
import random
from typing import Any

import schemathesis

import tests.fuzz.contract  # noqa: F401  (registers positive_data_acceptance_or_listed)

_rng = random.Random(int(os.environ.get("PERSONATREE_HOSTILE_SEED", "24")))

STRINGS = [
    "a\x00b",
    "\x00",
    "lone \ud800 surrogate",
    "\udfff",
    "\u202eevil\u202c",
    "e\u0301\u0301\u0301\u0301\u0301\u0301",
    "\U0001f600\U0001f4a9\U00010348",
    "\ufeff\u200b\u2028\u2029",
    "x" * 70_000,
    "../../etc/passwd",
    "%00%ff%ED%A0%80",
]
URL_STRINGS = [s for s in STRINGS if not any(0xD800 <= ord(c) <= 0xDFFF for c in s) and len(s) < 1000]
NUMBERS: list[Any] = [2**64, -(2**63) - 1, 10**400, 1e308, -1e308, 0.1**300]
DEPTH = 400  # schemathesis hashes each case recursively; past ~1000 levels it fails itself


def _nest(value: Any, rng: random.Random) -> Any:
    for _ in range(DEPTH):
        value = [value] if rng.random() < 0.5 else {"a": value}
    return value


def hostile(value: Any, rng: random.Random = _rng, *, url: bool = False) -> Any:
    """The value with some of its leaves replaced by hostile ones (about one leaf in three)."""
    if isinstance(value, dict):
        return {k: hostile(v, rng, url=url) for k, v in value.items()}
    if isinstance(value, list):
        return [hostile(v, rng, url=url) for v in value]
    roll = rng.random()
    if roll > 0.35:
        return value
    if isinstance(value, bool) or value is None:
        return rng.choice(URL_STRINGS if url else STRINGS)
    if isinstance(value, int | float):
        return rng.choice(NUMBERS) if not url else str(rng.choice(NUMBERS[:3]))
    if isinstance(value, str):
        return value + rng.choice(URL_STRINGS if url else STRINGS)
    return value


@schemathesis.hook
def map_body(ctx, body):
    if _rng.random() < 0.1:
        return _nest(body, _rng)
    return hostile(body)


@schemathesis.hook
def map_query(ctx, query):
    return hostile(query, url=True) if query else query


@schemathesis.hook
def map_path_parameters(ctx, path_parameters):
    return hostile(path_parameters, url=True) if path_parameters else path_parameters
