"""Structured logs: every line carries the request id, the tenant id and a hash of the subject
(docs/DEPLOY.md, "Logs"); access lines name the route pattern, never the path (it holds external
ids); PostgreSQL's ``DETAIL``/``CONTEXT`` values (they quote the row) are cut out of every line.
Read by the settings: no Django model and no Celery at import time.
"""

from __future__ import annotations

import logging
import re
import sys
import time
import uuid
from contextvars import ContextVar, Token

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_TASK_HEADER = "pt_request_id"
TENANT_TASK_HEADER = "pt_tenant"  # stamped by workers.base.send
FORMATS = ("plain", "json")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")
#: Paths answered before the API (probes): no access line.
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

_VARS: dict[str, ContextVar[str | None]] = {
    name: ContextVar(f"personatree_log_{name}", default=None)
    for name in ("request_id", "tenant_id", "subject", "task", "task_id")
}
access_log = logging.getLogger("personatree.request")


def bind(**values) -> list[Token]:
    """Set log context values (request_id, tenant_id, subject, task, task_id); :func:`unbind` the tokens."""
    return [_VARS[name].set(None if value is None else str(value)) for name, value in values.items()]


def unbind(tokens: list[Token]) -> None:
    for token in reversed(tokens):
        token.var.reset(token)


def current() -> dict[str, str | None]:
    """The context values now (what the next log line would carry)."""
    return {name: var.get() for name, var in _VARS.items()}


def subject_hash(tenant_id, external_id: str) -> str:
    """What the logs hold for a subject: 16 hex digits of an HMAC-SHA256 of ``tenant:external_id``
    under the ``SECRET_KEY`` (``manage.py shell -c "from personatree_site.ops.logging import
    subject_hash; print(subject_hash(3, 'user-42'))"`` finds a subject's lines)."""
    from django.utils.crypto import salted_hmac

    raw = f"{tenant_id}:{external_id}".encode("utf-8", "surrogatepass")
    return salted_hmac("personatree.logs.subject", raw, algorithm="sha256").hexdigest()[:16]


def request_id_from(value: str | None) -> str:
    """The caller's request id when it is a sane token, else a new one."""
    if value and _REQUEST_ID.fullmatch(value):
        return value
    return uuid.uuid4().hex


class ContextFilter(logging.Filter):
    """The context (and trace ids) on every record; Django's request lines name the route, not the path."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if request is not None:  # django.request's lines: "Not Found: <path>", the path holds ids
            match = getattr(request, "resolver_match", None)
            route = match.route if match is not None else "-"
            if record.name == "django.request" and isinstance(record.args, tuple) and len(record.args) == 2:
                record.args = (record.args[0], route)
            record.__dict__["route"] = route
            del record.__dict__["request"]
        for name, var in _VARS.items():
            if not hasattr(record, name):
                setattr(record, name, var.get())
        trace = sys.modules.get("opentelemetry.trace")  # only when tracing was imported
        if trace is not None and not hasattr(record, "trace_id"):
            span_context = trace.get_current_span().get_span_context()
            if span_context.is_valid:
                record.trace_id = format(span_context.trace_id, "032x")
                record.span_id = format(span_context.span_id, "016x")
        return True


#: ``DETAIL: ...`` / ``CONTEXT: ...`` up to the end of the line, or of the repr that holds it.
_DB_DETAIL = re.compile(r"(?:(?<=\\n)|(?<!\w))(DETAIL|CONTEXT|WHERE):[^\n]*?(?=\\n|\n|$)", re.MULTILINE)


def redact_db_detail(text: str) -> str:
    """``text`` without the values of PostgreSQL's ``DETAIL``/``CONTEXT`` (also ``WHERE``) lines."""
    return _DB_DETAIL.sub(r"\1: [redacted]", text) if ":" in text else text


class RedactFilter(logging.Filter):
    """Drops database error details from a record's message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the formatter to report
            return True
        redacted = redact_db_detail(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        text = record.exc_text
        if record.exc_info and not text:
            text = logging.Formatter().formatException(record.exc_info)
        if text and (clean := redact_db_detail(text)) != text:
            # Formatters print exc_text when exc_info is gone (the JSON one too): the redacted text.
            # A traceback with nothing to redact keeps its exc_info for the other handlers.
            record.exc_text, record.exc_info = clean, None
        return True


class JsonFormatter(_JsonFormatter):
    """One JSON object a line: time, level, logger, message, the context values, extras."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger", "asctime": "time"})
        kwargs.setdefault("timestamp", False)
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s", *args, **kwargs)


def logging_config(log_format: str = "plain", level: str = "INFO") -> dict:
    """``LOGGING`` for ``log_format`` (``plain`` or ``json``): one console handler with the context."""
    if log_format not in FORMATS:
        raise ValueError(f"PERSONATREE_LOG_FORMAT must be one of {', '.join(FORMATS)}, not {log_format!r}.")
    formatter = (
        {"()": "personatree_site.ops.logging.JsonFormatter"}
        if log_format == "json"
        else {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "context": {"()": "personatree_site.ops.logging.ContextFilter"},
            "redact": {"()": "personatree_site.ops.logging.RedactFilter"},
        },
        "formatters": {"default": formatter},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "filters": ["context", "redact"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {"django.db.backends": {"level": "WARNING"}},
    }


class RequestContextMiddleware:
    """Binds the request id for the request's log lines, answers it, logs the access line."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id
        tokens = bind(request_id=request_id, tenant_id=None, subject=None)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response[REQUEST_ID_HEADER] = request_id
            if request.path_info not in QUIET_PATHS:
                match = getattr(request, "resolver_match", None)
                elapsed_ms = (time.perf_counter() - started) * 1000
                access_log.info(
                    "%s %s %s %.1fms",
                    request.method,
                    match.route if match is not None else "-",
                    response.status_code,
                    elapsed_ms,
                    extra={"status": response.status_code, "duration_ms": round(elapsed_ms, 1)},
                )
            return response
        finally:
            unbind(tokens)


# Celery: the request id travels in the task's headers.
_task_tokens: dict[str, list[Token]] = {}


def task_header(request, name: str):
    """A Celery task request's header (an attribute of the request, or in its ``headers``)."""
    value = getattr(request, name, None)
    if value is None:
        value = (getattr(request, "headers", None) or {}).get(name)
    return value


def _stamp_request_id(headers=None, **_kwargs) -> None:
    request_id = _VARS["request_id"].get()
    if headers is not None and request_id:
        headers.setdefault(REQUEST_ID_TASK_HEADER, request_id)


def _task_started(task_id=None, task=None, **_kwargs) -> None:
    values: dict = {"task": getattr(task, "name", None), "task_id": task_id}
    request = getattr(task, "request", None)
    for name, header in (("request_id", REQUEST_ID_TASK_HEADER), ("tenant_id", TENANT_TASK_HEADER)):
        value = task_header(request, header)
        if value:  # an eager task has no headers: it keeps its request's values
            values[name] = value
    if task_id:
        _task_tokens[task_id] = bind(**values)


def _task_finished(task_id=None, **_kwargs) -> None:
    tokens = _task_tokens.pop(task_id, None) if task_id else None
    if tokens:
        unbind(tokens)


def install_celery_hooks() -> None:
    """Connect the Celery signal receivers (idempotent: each has a dispatch uid)."""
    from celery.signals import before_task_publish, task_postrun, task_prerun

    before_task_publish.connect(_stamp_request_id, weak=False, dispatch_uid="personatree.logs.publish")
    task_prerun.connect(_task_started, weak=False, dispatch_uid="personatree.logs.prerun")
    task_postrun.connect(_task_finished, weak=False, dispatch_uid="personatree.logs.postrun")
