"""The wire protocol under every operation, without I/O: what a plan yields and gets back.

A *plan* (``_core.py``) is a generator that yields an :class:`ApiRequest` to send, or a
:class:`Sleep` before a retry, and receives the :class:`Response` (or :class:`NoResponse`) back.
This module holds those values, the :class:`RetryPolicy`, and the three exchanges every plan is
built from: :func:`exchange` (send with retries, raise the typed error), :func:`call` (the same,
then parse the JSON body), :class:`Listing` (a cursor-paginated list, one page plan at a time)
and :func:`pages` (every page of one, merged).
"""

from __future__ import annotations

import email.utils
import json
import random
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qs, quote, urlsplit

import httpx

from personatree_client.errors import APIConnectionError, APITimeoutError, ResponseDecodeError, error_for
from personatree_client.models import AsOf

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One HTTP request of the API. ``idempotent``: safe to send again when no answer came."""

    method: str
    path: str
    params: Mapping[str, str] | None = None
    content: bytes | None = None
    timeout: float | None = None
    idempotent: bool = True
    content_type: str = "application/json"

    def httpx_kwargs(self) -> dict[str, Any]:
        """The arguments of ``httpx.Client.request`` / ``httpx.AsyncClient.request``."""
        return {
            "method": self.method,
            "url": self.path,
            "params": self.params,
            "content": self.content,
            "headers": {"Content-Type": self.content_type} if self.content is not None else None,
            "timeout": httpx.USE_CLIENT_DEFAULT if self.timeout is None else self.timeout,
        }


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: Mapping[str, str]
    content: bytes


@dataclass(frozen=True, slots=True)
class NoResponse:
    """The transport failed (the httpx exception) before an answer came."""

    error: httpx.TransportError


Action = ApiRequest | Sleep
Outcome = Response | NoResponse | None
Plan = Generator[Action, Outcome, T]


def retry_after_seconds(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds (delta-seconds or an HTTP date), ``None`` if absent or unreadable."""
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When to send a request again, and after how long.

    Retried: answers with a status in ``statuses`` (429 and 503: the server did nothing), and
    requests that got no answer — always when the connection was never made, otherwise only
    idempotent requests (everything but ``erase``; ingest is idempotent through its keys).
    The wait is the server's ``Retry-After`` when it sends one (at least; never less than the
    backoff below, so ``Retry-After: 0`` is no busy loop); a ``Retry-After`` longer than
    ``max_wait`` is not waited for (the error is raised at once, with ``retry_after`` set). Without
    one: exponential backoff from ``backoff`` seconds (x 0.5-1 jitter, doubling, capped at
    ``max_wait``). At most ``max_retries`` retries per request.
    """

    max_retries: int = 3
    max_wait: float = 10.0
    backoff: float = 0.5
    statuses: frozenset[int] = frozenset({429, 503})

    def delay(self, outcome: Response | NoResponse, attempt: int, request: ApiRequest) -> float | None:
        if attempt >= self.max_retries:
            return None
        if isinstance(outcome, NoResponse):
            never_sent = isinstance(outcome.error, httpx.ConnectError | httpx.ConnectTimeout)
            return self._backoff(attempt) if (never_sent or request.idempotent) else None
        if outcome.status not in self.statuses:
            return None
        told = retry_after_seconds(outcome.headers)
        if told is None:
            return self._backoff(attempt)
        # At least what the server said; a "0" (DRF rounds the wait down) still backs off a little.
        return max(told, self._backoff(attempt)) if told <= self.max_wait else None

    def _backoff(self, attempt: int) -> float:
        return min(self.max_wait, self.backoff * 2.0**attempt * random.uniform(0.5, 1.0))


def subject_path(subject: str, *rest: str) -> str:
    if not isinstance(subject, str):
        raise TypeError(f"subject must be a str (the external id), not {type(subject).__name__}")
    return "/".join(["/v1/subjects", quote(subject, safe=""), *rest])


def as_of_json(as_of: AsOf) -> int | str:
    if isinstance(as_of, datetime):
        return as_of.isoformat()
    return as_of


# One encoder for every call: ingest encodes each message on its own (to count the batch's bytes).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> bytes:
    return _ENCODER.encode(value).encode("utf-8")


def next_cursor(page: dict[str, Any]) -> str | None:
    """The ``cursor`` of a page's ``next`` link (``None`` on the last page)."""
    link = page.get("next")
    if not link:
        return None
    cursors = parse_qs(urlsplit(str(link)).query).get("cursor")
    if not cursors:
        raise ValueError(f"the next link {link!r} has no cursor")
    return cursors[0]


def exchange(request: ApiRequest, retry: RetryPolicy) -> Plan[Response]:
    """Send (with retries); return a success answer or raise the typed error."""
    attempt = 0
    while True:
        outcome = yield request
        assert outcome is not None, "a transport must answer a request"
        wait = retry.delay(outcome, attempt, request)
        if wait is None:
            break
        attempt += 1
        yield Sleep(wait)
    if isinstance(outcome, NoResponse):
        cls = APITimeoutError if isinstance(outcome.error, httpx.TimeoutException) else APIConnectionError
        raise cls(f"{request.method} {request.path}: {outcome.error!r}") from outcome.error
    if outcome.status >= 400:
        raise error_for(
            outcome.status,
            outcome.content,
            retry_after_seconds(outcome.headers),
            request_id=outcome.headers.get("x-request-id"),
        )
    return outcome


def call(request: ApiRequest, parse: Callable[[dict[str, Any]], T], retry: RetryPolicy) -> Plan[T]:
    """:func:`exchange`, then ``parse`` the JSON object of the answer (ResponseDecodeError if not)."""
    response = yield from exchange(request, retry)
    try:
        data = json.loads(response.content)
        if not isinstance(data, dict):
            raise TypeError("the body is not a JSON object")
        return parse(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise ResponseDecodeError(
            f"{request.method} {request.path}: unexpected answer ({exc!r})",
            status=response.status,
            body=response.content,
        ) from exc


class Listing(Generic[T]):
    """A cursor-paginated list, one page at a time: the plan of each page, no I/O.

    :meth:`next_page` is the plan of the page after the last one read: its items, parsed by
    ``items`` from the page's JSON object. A client runs those plans one at a time, only when its
    caller reaches the end of the previous page, and stops when :attr:`exhausted` (the last page
    had no ``next``). A page's ``next`` is the URL of the following page (``null`` on the last; a
    server without pagination sends none). Only its ``cursor`` is taken: the client asks its own
    ``base_url`` again, so a ``next`` built with the server's internal host name behind a proxy does
    no harm. A ``next`` without a cursor, or with one already followed (a server that would loop),
    is a :class:`~personatree_client.errors.ResponseDecodeError`.
    """

    def __init__(
        self,
        path: str,
        page_size: int | None,
        items: Callable[[dict[str, Any]], Iterable[T]],
        retry: RetryPolicy,
    ) -> None:
        self.path = path
        self.items = items
        self.retry = retry
        self.exhausted = False
        self._params = {} if page_size is None else {"page_size": str(page_size)}
        self._seen: set[str] = set()

    def _parse(self, page: dict[str, Any]) -> tuple[tuple[T, ...], str | None]:
        return tuple(self.items(page)), next_cursor(page)

    def next_page(self) -> Plan[tuple[T, ...]]:
        """The next page's items (the first page on the first call)."""
        if self.exhausted:
            raise RuntimeError(f"GET {self.path}: every page was read")
        request = ApiRequest("GET", self.path, params=self._params or None)
        items, cursor = yield from call(request, self._parse, self.retry)
        if cursor is None:
            self.exhausted = True
        elif cursor in self._seen:
            raise ResponseDecodeError(
                f"GET {self.path}: the next page repeats a cursor", status=200, body=b""
            )
        else:
            self._seen.add(cursor)
            self._params = {**self._params, "cursor": cursor}
        return items

    def every_page(self) -> Plan[list[T]]:
        """The items of every page left, in order (for an answer merged from its pages)."""
        read: list[T] = []
        while not self.exhausted:
            read.extend((yield from self.next_page()))
        return read


def pages(
    path: str, page_size: int | None, merge: Callable[[list[dict[str, Any]]], T], retry: RetryPolicy
) -> Plan[T]:
    """Every page of a cursor-paginated answer (:class:`Listing`), merged into one by ``merge``."""
    read = yield from Listing(path, page_size, lambda page: (page,), retry).every_page()
    try:
        return merge(read)
    except (KeyError, TypeError, ValueError) as exc:
        raise ResponseDecodeError(f"GET {path}: unexpected answer ({exc!r})", status=200, body=b"") from exc
