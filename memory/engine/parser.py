"""Tolerant parser for model output: the paper's op line format and a JSON form.

:func:`parse_ops` never raises. It returns a :class:`ParseResult` with the ops it could read,
one :class:`ParseError` per line (or JSON element) it could not, and the numbers of lines it
skipped as commentary. Good lines are never lost because of bad ones.

Line format (one op per line; several per line also work)::

    ADD(identity/name/full_name, "Ana")
    UPDATE(behaviour/habits/exercise, "used to run; knee trouble, now swims", confidence=0.8)
    DELETE(identity/relationships/partner, None)
    NO_OP()

Tolerated: markdown fences (skipped), list numbering and bullets, bold/backtick wrapping,
commentary before or after an op on its line, lines of commentary (skipped, reported in
``ignored``), escaped quotes (``\\"``) and JSON escapes in values, unescaped inner quotes when the
closing quote is still recognisable (followed by ``)``, ``, confidence`` or the line's end), single
or curly quotes, ``None``/``null`` for DELETE, a missing final ``)`` after a closed value, a bare
value (verbatim up to the closing parenthesis), a bare ``NO_OP`` starting a line, and
``NOOP``/``NO-OP``. Op names are upper case and ``ADD``/``UPDATE``/``DELETE`` count only before
``(``, so prose like "add (more)" is no op. Errors: an op name and ``(`` whose arguments cannot be
read (no path, ADD/UPDATE without value, unterminated string, junk before ``)``, bad confidence);
non-empty output with neither ops nor errors gets one error at ``line_no=0`` ("no op found"), so
garbage is never mistaken for "nothing to do".

JSON form: the whole output (fences removed) may be a list of op objects
``[{"op": "ADD", "path": ..., "value": ...}]``, an object ``{"ops": [...]}``, or a single op
object; each line may also be one JSON op object (JSON lines). Bad elements give errors whose
message starts with ``ops[i]``.

:func:`format_ops` writes ops back in the line format; ``parse_ops(format_ops(ops)).ops == ops``
for any ops whose values are strings or ``None``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .ops import Op, OpError, OpType

_MAX_LINE = 500
_OP_TOKEN = re.compile(r"\b(ADD|UPDATE|DELETE|NO_OP|NOOP|NO-OP)\b\s*(\()?")
_LINE_PREFIX = re.compile(r"\s*(?:[-*+\u2022]\s+|\d+\s*[.):]\s*|#+\s*)?[`*_\"']*\s*")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_CLOSE_AFTER_QUOTE = re.compile(rf"\s*(?:\)|,\s*(?:confidence\s*[=:]\s*)?{_NUMBER}\s*\)|$)")
_CLOSE_AFTER_PATH = re.compile(r"\s*(?:[,)]|$)")
_CONFIDENCE = re.compile(rf"\s*,\s*(?:confidence\s*[=:]\s*)?({_NUMBER})")
_BARE_NO_OP = re.compile(r"(NO_OP|NOOP|NO-OP)\b(?!\s*\()")
_BARE_PATH_ARG = re.compile(r"[^,)]*")
_NULLS = {"none", "null", "nil"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\", "/": "/"}
_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}


@dataclass(frozen=True, slots=True)
class ParseError:
    line_no: int
    line: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"line_no": self.line_no, "line": self.line, "message": self.message}


@dataclass(frozen=True, slots=True)
class ParseResult:
    ops: tuple[Op, ...]
    errors: tuple[ParseError, ...]
    ignored: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


class _Bad(Exception):
    """Internal: the op starting here cannot be read."""


def format_ops(ops: Iterable[Op]) -> str:
    return "\n".join(op.to_line() for op in ops)


def _unescape(m: re.Match[str]) -> str:
    esc = m.group(1)
    if esc[0] == "u":
        return chr(int(esc[1:], 16))
    return _ESCAPES[esc]


_STOPS = {c: re.compile(r"\\.|" + re.escape(c), re.S) for c in set(_QUOTES.values())}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[ntrbf\"'\\/])")


def _decode(raw: str) -> str:
    """Decode JSON-style backslash escapes; unknown escapes are kept verbatim."""
    if "\\" not in raw:
        return raw
    text = _ESCAPE.sub(_unescape, raw)
    try:
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeError:
        return text


def _read_quoted(line: str, pos: int, close: re.Pattern[str] = _CLOSE_AFTER_QUOTE) -> tuple[str, int]:
    """Read a quoted string starting at ``line[pos]`` (a quote); return (value, index after it).

    An unescaped closing quote ends the string only when ``close`` matches what follows it, or
    when no further closing quote exists on the line (tolerates unescaped inner quotes)."""
    closer = _QUOTES[line[pos]]
    stop = _STOPS[closer]
    i = pos + 1
    while True:
        m = stop.search(line, i)
        if m is None:
            raise _Bad("unterminated string (output truncated?)")
        i = m.end()
        if m.group(0) != closer:
            continue
        if close.match(line, i) or line.find(closer, i) < 0:
            return _decode(line[pos + 1 : i - 1]), i


def _skip_ws(line: str, pos: int) -> int:
    while pos < len(line) and line[pos].isspace():
        pos += 1
    return pos


def _closing_paren(line: str, pos: int) -> int:
    depth = 0
    for i in range(pos, len(line)):
        if line[i] == "(":
            depth += 1
        elif line[i] == ")":
            if depth == 0:
                return i
            depth -= 1
    return -1


def _read_op(line: str, name: str, pos: int) -> tuple[Op, int]:
    """Read the arguments of ``name(`` whose parenthesis ends at ``pos``."""
    op_type = OpType.NO_OP if name in ("NOOP", "NO-OP") else OpType(name)
    if op_type is OpType.NO_OP:
        end = _closing_paren(line, pos)
        return Op(OpType.NO_OP), (len(line) if end < 0 else end + 1)

    pos = _skip_ws(line, pos)
    if pos < len(line) and line[pos] in _QUOTES:
        path, pos = _read_quoted(line, pos, _CLOSE_AFTER_PATH)
    else:
        m = _BARE_PATH_ARG.match(line, pos)
        path = m.group(0).strip() if m else ""
        pos = m.end() if m else pos
    if not path.strip():
        raise _Bad(f"{name} has no path")

    pos = _skip_ws(line, pos)
    value: str | None = None
    confidence: float | None = None
    has_value = False
    if pos < len(line) and line[pos] == ",":
        pos = _skip_ws(line, pos + 1)
        if pos < len(line) and line[pos] in _QUOTES:
            value, pos = _read_quoted(line, pos)
            has_value = True
        else:
            end = _closing_paren(line, pos)
            raw = (line[pos:] if end < 0 else line[pos:end]).strip()
            conf = re.search(rf",\s*confidence\s*[=:]\s*({_NUMBER})\s*$", raw)
            if conf:
                confidence = float(conf.group(1))
                raw = raw[: conf.start()].rstrip()
            pos = len(line) if end < 0 else end
            if raw.lower() in _NULLS:  # explicit None: kept, so the gate can say why it is wrong
                value, has_value = None, True
            elif raw:
                value, has_value = raw, True

    m = _CONFIDENCE.match(line, pos)
    if m and confidence is None:
        confidence = float(m.group(1))
        pos = m.end()
    pos = _skip_ws(line, pos)
    if pos < len(line):
        if line[pos] != ")":
            raise _Bad(f"unexpected text in {name}(...): {line[pos : pos + 30]!r}")
        pos += 1
    elif value is None and op_type is not OpType.DELETE:
        raise _Bad(f"{name} is missing its closing parenthesis")

    if op_type in (OpType.ADD, OpType.UPDATE) and not has_value:
        raise _Bad(f"{name} needs a value")
    try:
        return Op(op_type, path, value, confidence), pos
    except OpError as exc:
        raise _Bad(str(exc)) from exc


def _parse_line(line: str) -> tuple[list[Op], str | None]:
    """Ops on one line, and an error message for the first op that could not be read."""
    ops: list[Op] = []
    start = _LINE_PREFIX.match(line)
    head = line[start.end() if start else 0 :]
    bare = _BARE_NO_OP.match(head)
    if bare:
        return [Op(OpType.NO_OP)], None
    pos = 0
    while True:
        m = _OP_TOKEN.search(line, pos)
        if m is None:
            return ops, None
        if m.group(2) is None:  # op name without "(": prose
            pos = m.end()
            continue
        try:
            op, pos = _read_op(line, m.group(1), m.end())
        except _Bad as exc:
            return ops, str(exc)
        ops.append(op)


def _from_json(data: Any, line_no: int) -> tuple[list[Op], list[ParseError]] | None:
    if isinstance(data, dict) and "ops" in data:
        data = data["ops"]
    elif isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        return None
    ops: list[Op] = []
    errors: list[ParseError] = []
    for i, item in enumerate(data):
        try:
            ops.append(Op.from_dict(item))
        except (OpError, TypeError, ValueError) as exc:
            shown = json.dumps(item, ensure_ascii=False, default=str)[:_MAX_LINE]
            errors.append(ParseError(line_no, shown, f"ops[{i}]: {exc}"))
    return ops, errors


def _parse(text: str) -> ParseResult:
    lines = text.split("\n")
    body = [(n, ln.rstrip("\r")) for n, ln in enumerate(lines, 1) if not ln.lstrip().startswith("```")]
    joined = "\n".join(ln for _, ln in body).strip()
    if joined[:1] in ("[", "{"):
        try:
            data = json.loads(joined)
        except ValueError:
            data = None
        if data is not None:
            first = next((n for n, ln in body if ln.strip()), 1)
            parsed = _from_json(data, first)
            if parsed is not None:
                return ParseResult(tuple(parsed[0]), tuple(parsed[1]))

    ops: list[Op] = []
    errors: list[ParseError] = []
    ignored: list[int] = []
    for n, line in body:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("{"):
            try:
                parsed = _from_json(json.loads(stripped), n)
            except ValueError:
                parsed = None
            if parsed is not None:
                ops.extend(parsed[0])
                errors.extend(parsed[1])
                continue
        try:
            found, message = _parse_line(line)
        except Exception as exc:  # defensive: one bad line must not lose the others
            found, message = [], f"unreadable line ({type(exc).__name__})"
        ops.extend(found)
        if message is not None:
            errors.append(ParseError(n, line[:_MAX_LINE], message))
        elif not found:
            ignored.append(n)
    if not ops and not errors and ignored:
        errors.append(ParseError(0, "", "no op found in model output"))
    return ParseResult(tuple(ops), tuple(errors), tuple(ignored))


def parse_ops(text: str) -> ParseResult:
    """Parse model output into ops; never raises (see the module docstring)."""
    if not isinstance(text, str):
        return ParseResult((), (ParseError(0, "", f"model output must be text, got {type(text).__name__}"),))
    try:
        return _parse(text)
    except Exception as exc:  # defensive: never lose the call because of a parser bug
        return ParseResult(
            (), (ParseError(0, text[:_MAX_LINE], f"parser failure: {type(exc).__name__}: {exc}"),)
        )
