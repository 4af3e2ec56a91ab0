"""PersonaTree schemas: which leaves exist, what each means, how long it may be, how sensitive it is.

A :class:`Schema` is an ``id``, an integer ``version`` and a tuple of :class:`Leaf` records. The file
format, what :func:`load_schema` refuses (a :class:`SchemaError` naming the offending path) and the
size limits are in docs/SCHEMAS.md ("File format"); the default schema ships as
``schemas/personatree-default.v1.json``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args

Tier = Literal["normal", "personal", "special"]
TIERS: tuple[str, ...] = get_args(Tier)

SCHEMA_DIR = Path(__file__).with_name("schemas")
DEFAULT_SCHEMA_ID = "personatree-default"
DEFAULT_SCHEMA_VERSION = 1

_SEGMENT = re.compile(r"[a-z][a-z0-9_]*")
_SCHEMA_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")
_LEAF_FIELDS = {
    "description",
    "budget",
    "tier",
    "aliases",
    "examples",
    "single",
    "alias_required",
    "alias_owned",
}
MAX_ALIASES = 24
MAX_ALIAS_CHARS = 40
MAX_EXAMPLES = 6
MAX_EXAMPLE_CHARS = 120
MAX_BUDGET = 4000  # characters of one leaf's value
MAX_PATH_CHARS = 300  # OpRecord.path's column
MAX_DEPTH = 8  # segments of a path (the nested form's depth)
# Leaf names the API's URLs use after a leaf path (``.../tree/leaves/<path>/history``).
RESERVED_LEAF_NAMES = frozenset({"history"})
MAX_DESCRIPTION_CHARS = 500
_LIMITS: ContextVar[bool] = ContextVar("schema_limits", default=True)
_BAD_TEXT = re.compile(r"[\x00\ud800-\udfff]")


class SchemaError(ValueError):
    """The schema source is invalid; the message names the offending path."""


@dataclass(frozen=True, slots=True)
class Leaf:
    path: str
    description: str
    budget: int
    tier: Tier = "normal"
    aliases: tuple[str, ...] = ()  # short keyword phrases naming the slot ("dog", "cat" for pets)
    examples: tuple[str, ...] = ()  # short third-person example facts ("Has a dog named Max")
    single: bool = False  # one current state: a new value replaces the old one instead of appending
    alias_required: bool = False  # filed here only when the fact says an alias: "son", "dog" (family)
    alias_owned: bool = False  # a fact naming an alias not as the speaker's is not filed here (pets)

    @property
    def trunk(self) -> str:
        return self.path.split("/", 1)[0]


@dataclass(frozen=True)
class Schema:
    id: str
    version: int
    leaves: tuple[Leaf, ...]
    doc: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        index = {leaf.path: leaf for leaf in self.leaves}
        inner = {leaf.path.rsplit("/", 1)[0] for leaf in self.leaves if "/" in leaf.path}
        inner = {p for q in inner for p in _ancestors_and_self(q)}
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_inner", frozenset(inner))

    @property
    def key(self) -> tuple[str, int]:
        return (self.id, self.version)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(leaf.path for leaf in self.leaves)

    @property
    def trunks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(leaf.trunk for leaf in self.leaves))

    def leaf(self, path: str) -> Leaf | None:
        return self._index.get(path)  # type: ignore[attr-defined]

    def is_leaf(self, path: str) -> bool:
        return path in self._index  # type: ignore[attr-defined]

    def is_inner(self, path: str) -> bool:
        return path in self._inner  # type: ignore[attr-defined]

    def prefixes(self) -> tuple[str, ...]:
        """All inner-node paths, sorted."""
        return tuple(sorted(self._inner))  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self.leaves)

    def __hash__(self) -> int:
        return hash((self.id, self.version, self.leaves))

    def to_dict(self) -> dict[str, Any]:
        """The flat file form; ``load_schema(schema.to_dict()) == schema``."""
        return {
            "id": self.id,
            "version": self.version,
            "doc": self.doc,
            "leaves": [_leaf_dict(x) for x in self.leaves],
        }


def _leaf_dict(leaf: Leaf) -> dict[str, Any]:
    """A leaf in file form; the optional placement fields only when set (old documents stay the same)."""
    out: dict[str, Any] = {
        "path": leaf.path,
        "description": leaf.description,
        "budget": leaf.budget,
        "tier": leaf.tier,
    }
    if leaf.aliases:
        out["aliases"] = list(leaf.aliases)
    if leaf.examples:
        out["examples"] = list(leaf.examples)
    if leaf.single:
        out["single"] = True
    if leaf.alias_required:
        out["alias_required"] = True
    if leaf.alias_owned:
        out["alias_owned"] = True
    return out


def _ancestors_and_self(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def check_text(value: Any, where: str = "schema") -> None:
    """``SchemaError`` for a NUL or a lone surrogate in any string or key (PostgreSQL stores neither)."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        at, item = stack.pop()
        if isinstance(item, str):
            if _BAD_TEXT.search(item):
                raise SchemaError(f"{at}: text holds a NUL character or a lone surrogate")
        elif isinstance(item, Mapping):
            for key, child in item.items():
                stack.append((at, key))
                clean = isinstance(key, str) and not _BAD_TEXT.search(key)  # the message names no bad text
                stack.append((f"{at}/{key}" if clean else at, child))
        elif isinstance(item, list | tuple):
            stack.extend((at, child) for child in item)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise SchemaError(f"duplicate key {key!r} in schema file")
        out[key] = value
    return out


def _read(source: str | Path) -> Mapping[str, Any]:
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SchemaError(f"cannot read schema file {path}: {exc}") from exc
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"schema file {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, Mapping):
        raise SchemaError(f"schema file {path} must hold a JSON object")
    return data


def _resolve_budget(path: str, raw: Any, budgets: Mapping[str, int]) -> int:
    if isinstance(raw, str):
        if raw not in budgets:
            raise SchemaError(f"{path}: unknown budget name {raw!r} (known: {', '.join(sorted(budgets))})")
        return budgets[raw]
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
        raise SchemaError(f"{path}: budget must be a positive integer, got {raw!r}")
    if raw > MAX_BUDGET and _LIMITS.get():
        raise SchemaError(f"{path}: budget {raw} is over the limit of {MAX_BUDGET} characters")
    return raw


def _make_leaf(path: str, spec: Any, budgets: Mapping[str, int], default_tier: str) -> Leaf:
    if not isinstance(spec, Mapping):
        raise SchemaError(f"{path}: a leaf must be an object with a description")
    extra = set(spec) - _LEAF_FIELDS - {"path"}
    if extra:
        raise SchemaError(f"{path}: inner node carries leaf fields, or unknown leaf fields {sorted(extra)}")
    _check_path(path)
    description = spec.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SchemaError(f"{path}: description must be a non-empty string")
    if len(description) > MAX_DESCRIPTION_CHARS and _LIMITS.get():
        raise SchemaError(f"{path}: description is longer than {MAX_DESCRIPTION_CHARS} characters")
    if "budget" not in spec:
        raise SchemaError(f"{path}: leaf has no budget")
    budget = _resolve_budget(path, spec["budget"], budgets)
    tier = spec.get("tier", default_tier)
    if tier not in TIERS:
        raise SchemaError(f"{path}: unknown tier {tier!r} (known: {', '.join(TIERS)})")
    aliases = _short_strings(path, "aliases", spec.get("aliases", []), MAX_ALIASES, MAX_ALIAS_CHARS)
    examples = _short_strings(path, "examples", spec.get("examples", []), MAX_EXAMPLES, MAX_EXAMPLE_CHARS)
    flags = {name: spec.get(name, False) for name in ("single", "alias_required", "alias_owned")}
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise SchemaError(f"{path}: {name} must be true or false, got {flag!r}")
        if flag and name.startswith("alias") and not aliases:
            raise SchemaError(f"{path}: {name} needs aliases")
    return Leaf(path, " ".join(description.split()), budget, tier, aliases, examples, **flags)


def _check_path(path: str) -> None:
    segments = path.split("/")
    if _LIMITS.get() and len(path) > MAX_PATH_CHARS:
        raise SchemaError(f"{path[:40]}...: path is longer than {MAX_PATH_CHARS} characters")
    if _LIMITS.get() and len(segments) > MAX_DEPTH:
        raise SchemaError(f"{path[:40]}...: path is deeper than {MAX_DEPTH} segments")
    for segment in segments:
        if not _SEGMENT.fullmatch(segment):
            raise SchemaError(f"{path}: path segment {segment!r} is not lower_snake")
    if _LIMITS.get() and segments[-1] in RESERVED_LEAF_NAMES:
        raise SchemaError(f"{path}: a leaf may not be named {segments[-1]!r} (the API's leaf URLs use it)")


def _short_strings(path: str, name: str, raw: Any, most: int, chars: int) -> tuple[str, ...]:
    """A validated list of short non-empty strings, whitespace normalised, duplicates refused."""
    if not isinstance(raw, list):
        raise SchemaError(f"{path}: {name} must be a list of strings")
    if len(raw) > most:
        raise SchemaError(f"{path}: {name} holds {len(raw)} items (at most {most})")
    out: list[str] = []
    for item in raw:
        if not isinstance(item, str) or not item.strip():
            raise SchemaError(f"{path}: {name} must hold non-empty strings, got {item!r}")
        text = " ".join(item.split())
        if len(text) > chars:
            raise SchemaError(f"{path}: {name} item {text[:20]!r}... is longer than {chars} characters")
        if text.lower() in (x.lower() for x in out):
            raise SchemaError(f"{path}: duplicate {name} item {text!r}")
        out.append(text)
    return tuple(out)


def _walk(node: Mapping[str, Any], prefix: str, out: list[tuple[str, Any]], depth: int = 1) -> None:
    if depth > MAX_DEPTH and _LIMITS.get():
        raise SchemaError(f"{prefix[:40]}...: the tree is deeper than {MAX_DEPTH} levels")
    for name, child in node.items():
        path = f"{prefix}/{name}" if prefix else name
        if not isinstance(child, Mapping):
            raise SchemaError(f"{path}: inner nodes must hold objects; use a leaf object for values")
        if "description" in child:
            out.append((path, child))
        elif not child:
            raise SchemaError(f"{path}: empty inner node (no leaves below it)")
        else:
            stray = _LEAF_FIELDS & set(child)
            if stray:
                raise SchemaError(f"{path}: inner node carries a value ({', '.join(sorted(stray))})")
            _walk(child, path, out, depth + 1)


def load_schema(source: str | Path | Mapping[str, Any], *, limits: bool = True) -> Schema:
    """Load and validate a schema from a file or a mapping (``limits=False``: a stored document)."""
    data = source if isinstance(source, Mapping) else _read(source)
    check_text(data)
    token = _LIMITS.set(limits)
    try:
        return _load(data)
    finally:
        _LIMITS.reset(token)


def _load(data: Mapping[str, Any]) -> Schema:
    schema_id = data.get("id")
    if not isinstance(schema_id, str) or not _SCHEMA_ID.fullmatch(schema_id):
        raise SchemaError(f"schema id must be a lowercase slug, got {schema_id!r}")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SchemaError(f"schema {schema_id}: version must be a positive integer, got {version!r}")
    budgets = data.get("budgets", {})
    if not isinstance(budgets, Mapping):
        raise SchemaError(f"schema {schema_id}: 'budgets' must map names to positive integers")
    for name, value in budgets.items():
        _resolve_budget(f"budgets/{name}", value, {})
    default_tier = data.get("default_tier", "normal")
    if default_tier not in TIERS:
        raise SchemaError(f"schema {schema_id}: unknown default_tier {default_tier!r}")

    raw: list[tuple[str, Any]] = []
    if "tree" in data and "leaves" in data:
        raise SchemaError(f"schema {schema_id}: give either 'tree' or 'leaves', not both")
    if "tree" in data:
        if not isinstance(data["tree"], Mapping) or not data["tree"]:
            raise SchemaError(f"schema {schema_id}: 'tree' must be a non-empty object")
        _walk(data["tree"], "", raw)
    elif "leaves" in data:
        if not isinstance(data["leaves"], list) or not data["leaves"]:
            raise SchemaError(f"schema {schema_id}: 'leaves' must be a non-empty list")
        for i, spec in enumerate(data["leaves"]):
            path = spec.get("path") if isinstance(spec, Mapping) else None
            if not isinstance(path, str) or not path:
                raise SchemaError(f"schema {schema_id}: leaves[{i}] has no path")
            raw.append((path, spec))
    else:
        raise SchemaError(f"schema {schema_id}: no 'tree' or 'leaves'")

    leaves = [_make_leaf(path, spec, budgets, default_tier) for path, spec in raw]
    seen: set[str] = set()
    for leaf in leaves:
        if leaf.path in seen:
            raise SchemaError(f"{leaf.path}: duplicate path")
        seen.add(leaf.path)
    for leaf in leaves:
        for ancestor in _ancestors_and_self(leaf.path)[:-1]:
            if ancestor in seen:
                raise SchemaError(
                    f"{ancestor}: inner node carries a value (it is a leaf and a prefix of {leaf.path})"
                )
    doc = data.get("doc", "")
    return Schema(schema_id, version, tuple(leaves), doc if isinstance(doc, str) else "")


def canonical_json(document: object) -> str:
    """A document as JSON with sorted keys and no spaces: equal documents, equal text."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def document_digest(document: object) -> str:
    """SHA-256 of :func:`canonical_json`: identifies a tenant's document (its id is per tenant)."""
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()


#: Parsed schema documents kept by :func:`schema_from_document` (least recently used dropped first).
MAX_PARSED_DOCUMENTS = 256
_parsed: OrderedDict[str, Schema] = OrderedDict()
_parsed_lock = threading.Lock()


def schema_from_document(document: Mapping[str, Any]) -> tuple[Schema, str]:
    """``(schema, digest)`` of a schema document, parsed once per digest (LRU, thread-safe)."""
    digest = document_digest(document)
    with _parsed_lock:
        schema = _parsed.get(digest)
        if schema is not None:
            _parsed.move_to_end(digest)
            return schema, digest
    schema = load_schema(document, limits=False)  # stored documents; uploads are checked in full
    with _parsed_lock:
        _parsed[digest] = schema
        while len(_parsed) > MAX_PARSED_DOCUMENTS:
            _parsed.popitem(last=False)
    return schema, digest


def parsed_document_digests() -> tuple[str, ...]:
    """Digests of the documents :func:`schema_from_document` holds parsed, oldest first."""
    with _parsed_lock:
        return tuple(_parsed)


@cache
def get_schema(schema_id: str, version: int) -> Schema:
    """A schema shipped with the project (``schemas/<id>.v<version>.json``); cached."""
    if not isinstance(schema_id, str) or not _SCHEMA_ID.fullmatch(schema_id):
        raise SchemaError(f"unknown schema {schema_id!r} v{version}")
    path = SCHEMA_DIR / f"{schema_id}.v{version}.json"
    if not path.is_file():
        raise SchemaError(f"unknown schema {schema_id!r} v{version} (no {path.name})")
    schema = load_schema(path)
    if schema.key != (schema_id, version):
        raise SchemaError(
            f"{path.name} declares {schema.id} v{schema.version}, expected {schema_id} v{version}"
        )
    return schema


def shipped_schemas() -> tuple[tuple[str, int], ...]:
    """(id, version) of every schema file shipped in ``schemas/``."""
    out = []
    for path in sorted(SCHEMA_DIR.glob("*.v*.json")):
        stem, _, ver = path.name[: -len(".json")].rpartition(".v")
        if ver.isdigit():
            out.append((stem, int(ver)))
    return tuple(out)


def default_schema() -> Schema:
    """The default bio-psycho-social schema (cached)."""
    return get_schema(DEFAULT_SCHEMA_ID, DEFAULT_SCHEMA_VERSION)
