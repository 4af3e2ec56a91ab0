"""The client's logic, without I/O: every operation is a *plan*.

A plan is a generator that yields what it needs done — an :class:`~personatree_client._protocol.ApiRequest`
to send, or a :class:`~personatree_client._protocol.Sleep` before a retry — receives the answer
back, and finally returns the typed result or raises a typed error. The exchange itself (retries,
error mapping, JSON decoding, pagination) is ``_protocol.py``; this module builds each operation's
requests (ingest batching, paths, query bodies) and picks the result type. A list operation
returns a :class:`~personatree_client._protocol.Listing` instead: one plan per page, which the
clients run as their caller iterates.
:class:`~personatree_client.PersonaTree` (httpx.Client, time.sleep) and
:class:`~personatree_client.AsyncPersonaTree` (httpx.AsyncClient, asyncio.sleep) only carry the
actions out (``client.py``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote

from personatree_client._protocol import (
    ApiRequest,
    Listing,
    Plan,
    Response,
    RetryPolicy,
    Sleep,
    as_of_json,
    call,
    dumps,
    exchange,
    pages,
    subject_path,
)
from personatree_client.errors import APIError, IngestBlockedError, WaitTimeoutError
from personatree_client.imports import NDJSON, ImportJob, ImportSource, jsonl_body
from personatree_client.models import (
    AsOf,
    FlushResult,
    IngestResult,
    IngestStatus,
    Message,
    Mode,
    RequeuedChunk,
)
from personatree_client.results import (
    Answer,
    Change,
    Context,
    Erasure,
    Export,
    Leaf,
    LeafChange,
    Revert,
    SearchResult,
    SubjectSummary,
    Tree,
    Version,
)

T = TypeVar("T")

#: The server's defaults (``PERSONATREE_MAX_MESSAGES_PER_CALL``, ``..._MAX_REQUEST_BYTES``).
SERVER_MAX_MESSAGES_PER_CALL = 500
SERVER_MAX_REQUEST_BYTES = 500 * (4 * 20_000 + 1024)

_MESSAGE_INDEX = re.compile(r"^messages\[(\d+)\]")


def shift_message_index(field: str, offset: int) -> str:
    """``messages[3].content`` of a batch starting at message ``offset`` of the call -> of the call."""
    return _MESSAGE_INDEX.sub(lambda m: f"messages[{int(m[1]) + offset}]", field)


class Operations:
    """Every API operation as a plan (see the module docstring). Holds no connection."""

    def __init__(
        self,
        *,
        retry: RetryPolicy,
        max_batch_messages: int = SERVER_MAX_MESSAGES_PER_CALL,
        max_batch_bytes: int = SERVER_MAX_REQUEST_BYTES,
    ) -> None:
        if max_batch_messages < 1:
            raise ValueError("max_batch_messages must be at least 1")
        self.retry = retry
        self.max_batch_messages = max_batch_messages
        self.max_batch_bytes = max_batch_bytes

    # --- the exchanges every operation goes through (_protocol.py), with this client's retries ---

    def _exchange(self, request: ApiRequest) -> Plan[Response]:
        return exchange(request, self.retry)

    def _call(self, request: ApiRequest, parse: Callable[[dict[str, Any]], T]) -> Plan[T]:
        return call(request, parse, self.retry)

    def _list(
        self, path: str, page_size: int | None, key: str, parse: Callable[[dict[str, Any]], T]
    ) -> Listing[T]:
        """The list under ``key`` of each page of ``path``, each item read by ``parse``."""
        return Listing(path, page_size, lambda page: map(parse, page[key]), self.retry)

    def _pages(self, path: str, page_size: int | None, merge: Callable[[list[dict[str, Any]]], T]) -> Plan[T]:
        return pages(path, page_size, merge, self.retry)

    # --- ingest ----------------------------------------------------------------------------

    def _batches(
        self, messages: Iterable[Message | dict[str, Any]], recreate_erased: bool
    ) -> Iterator[tuple[int, bytes]]:
        """(count, body) of requests of at most ``max_batch_messages`` messages and
        ``max_batch_bytes`` bytes.

        Each message is encoded once; a message alone over the byte limit still goes (alone), so
        the server's 413 names it. No messages: one empty body, which the server refuses (400).
        Only the first batch asks to recreate an erased subject.
        """
        checked = [Message.coerce(item) for item in messages]  # a bad item fails before anything is sent
        head = b'{"messages":['
        tail = b'],"recreate_erased":true}' if recreate_erased else b"]}"
        parts: list[bytes] = []
        size = len(head) + len(tail)
        sent = False
        for message in checked:
            encoded = dumps(message.to_json())
            if parts and (
                len(parts) >= self.max_batch_messages or size + len(encoded) + 1 > self.max_batch_bytes
            ):
                yield len(parts), head + b",".join(parts) + tail
                sent, tail = True, b"]}"
                parts, size = [], len(head) + len(tail)
            parts.append(encoded)
            size += len(encoded) + 1
        if parts or not sent:
            yield len(parts), head + b",".join(parts) + tail

    def ingest(
        self, subject: str, messages: Iterable[Message | dict[str, Any]], *, recreate_erased: bool = False
    ) -> Plan[IngestResult]:
        """Append ``messages`` to the subject's log, in batches the server accepts.

        Messages are :class:`Message` objects or dicts with the same keys, all checked (and a dict
        without an ``idempotency_key`` given one) before the first batch is sent; a retried batch
        goes with the same keys (keep :class:`Message` objects to replay a whole call). Each batch is
        all or nothing on the server; batches are sent in order and the first error stops the
        call: it carries ``partial`` (the merged result of the batches stored before it, or
        ``None``) and a ``field`` indexed in the whole call (``messages[730].content``).
        ``recreate_erased`` starts a new subject under an erased subject's id (otherwise
        :class:`~personatree_client.errors.SubjectErasedError`).
        """
        path = subject_path(subject, "messages")
        result: IngestResult | None = None
        offset = 0
        for count, body in self._batches(messages, recreate_erased):
            request = ApiRequest("POST", path, content=body)
            try:
                batch = yield from self._call(request, IngestResult.from_json)
            except APIError as exc:
                exc.partial = result
                if exc.field and offset:
                    exc.field = shift_message_index(exc.field, offset)
                raise
            offset += count
            result = batch if result is None else result.merge(batch)
        assert result is not None
        return result

    def ingest_status(self, subject: str) -> Plan[IngestStatus]:
        """Where the subject's messages are: chunks by status, applied seq, failures."""
        return self._call(ApiRequest("GET", subject_path(subject, "ingest")), IngestStatus.from_json)

    def flush(self, subject: str) -> Plan[FlushResult]:
        """Close the subject's partial window now (instead of after the idle time)."""
        return self._call(ApiRequest("POST", subject_path(subject, "flush")), FlushResult.from_json)

    def requeue_chunk(self, subject: str, chunk_id: int) -> Plan[RequeuedChunk]:
        """Run a failed chunk again with a fresh attempt budget (``ingest`` scope); its id is in
        ``ingest_status(subject).failures``. ConflictError (``chunk_not_failed``) when it has not
        failed, NotFoundError when it is not the subject's. Not sent again after a lost answer: a
        second re-queue of the same chunk answers ConflictError."""
        path = subject_path(subject, "chunks", str(int(chunk_id)), "requeue")
        return self._call(ApiRequest("POST", path, idempotent=False), RequeuedChunk.from_json)

    # --- bulk imports --------------------------------------------------------------------

    def create_import(self, source: ImportSource, *, label: str | None = None) -> Plan[ImportJob]:
        """Send a JSONL file of histories (docs/BACKFILL.md) to be imported by the server.

        Every line is checked before anything is stored: a bad one is a BadRequestError whose
        ``field`` names it (``line 3 messages[0].role``); over the server's IMPORT_MAX_BYTES a
        PayloadTooLargeError. ``label`` names the source whose message keys a re-import shares
        (default: the body's digest: the same body sent again adds nothing). Poll ``get_import``.
        """
        params = {"source": label} if label else None
        request = ApiRequest(
            "POST",
            "/v1/imports",
            params=params,
            content=jsonl_body(source),
            content_type=NDJSON,
            idempotent=False,
        )
        return self._call(request, ImportJob.from_json)

    def get_import(self, import_id: str) -> Plan[ImportJob]:
        """One import: status, chunks by status, rate and ETA (another tenant's: NotFoundError)."""
        return self._call(
            ApiRequest("GET", "/v1/imports/" + quote(str(import_id), safe="")), ImportJob.from_json
        )

    def imports(self, *, page_size: int | None = None) -> Listing[ImportJob]:
        """The tenant's imports, newest first (a page of ``page_size`` fetched as it is reached)."""
        return self._list("/v1/imports", page_size, "imports", ImportJob.from_json)

    def wait_until_applied(
        self,
        subject: str,
        *,
        cursor: int | None = None,
        flush: bool = True,
        timeout: float = 60.0,
        poll_interval: float = 0.5,
    ) -> Plan[IngestStatus]:
        """Poll the ingest status until the log up to ``cursor`` (default: all of it) is in the tree.

        ``flush`` first closes the partial window, which otherwise waits for the server's idle
        time. Raises :class:`~personatree_client.errors.IngestBlockedError` when a chunk failed
        and :class:`~personatree_client.errors.WaitTimeoutError` after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        if flush:
            yield from self.flush(subject)
        while True:
            status = yield from self.ingest_status(subject)
            if status.blocked:
                raise IngestBlockedError(f"subject {subject!r} is blocked by a failed chunk", status=status)
            if cursor is None:
                done = status.pending_chunks == 0 and status.unchunked_messages == 0
            else:
                done = status.applied_through_seq >= cursor
            if done:
                return status
            if time.monotonic() + poll_interval > deadline:
                raise WaitTimeoutError(
                    f"subject {subject!r} not caught up after {timeout} s "
                    f"(applied through seq {status.applied_through_seq} of {status.cursor})",
                    status=status,
                )
            yield Sleep(poll_interval)

    # --- the tree --------------------------------------------------------------------------

    def tree(self, subject: str, *, as_of: AsOf | None = None) -> Plan[Tree]:
        """The subject's tree at its head, or ``as_of`` a version number or a datetime."""
        params = None if as_of is None else {"as_of": str(as_of_json(as_of))}
        return self._call(ApiRequest("GET", subject_path(subject, "tree"), params=params), Tree.from_json)

    def versions(self, subject: str, *, page_size: int | None = None) -> Listing[Version]:
        """The subject's versions, newest first (a page of ``page_size`` fetched as it is reached;
        the head version number is ``subject(subject).head_version``)."""
        return self._list(subject_path(subject, "versions"), page_size, "versions", Version.from_json)

    def export(self, subject: str, *, page_size: int | None = None) -> Plan[Export]:
        """Everything the store holds about the subject (tiers filtered by the key's scopes): every
        page (``page_size`` versions and ops each) merged into one :class:`Export`."""
        return self._pages(subject_path(subject, "export"), page_size, Export.from_pages)

    def subjects(self, *, page_size: int | None = None) -> Listing[SubjectSummary]:
        """Every subject of the key's tenant, by external id (a page fetched as it is reached)."""
        return self._list("/v1/subjects", page_size, "subjects", SubjectSummary.from_json)

    def subject(self, subject: str) -> Plan[SubjectSummary]:
        """One subject of the key's tenant: schema pin, head version (NotFoundError if unknown)."""
        return self._call(ApiRequest("GET", subject_path(subject)), SubjectSummary.from_json)

    @staticmethod
    def _leaf_path(subject: str, path: str) -> str:
        if not isinstance(path, str) or not path:
            raise ValueError("path must be a leaf path such as 'identity/location/current_city'")
        return subject_path(subject, "tree", "leaves", quote(path, safe="/"))

    def leaf(self, subject: str, path: str) -> Plan[Leaf]:
        """One leaf at the subject's head (``value`` None when empty); unknown path: NotFoundError."""
        return self._call(ApiRequest("GET", self._leaf_path(subject, path)), Leaf.from_json)

    def set_leaf(self, subject: str, path: str, value: str, *, base_version: int | None = None) -> Plan[Leaf]:
        """Set one leaf through the server's gate and audit log (needs the ``write`` scope).
        ``base_version``: refuse (ConflictError) if the subject moved on since that version.
        Sent again after a lost answer: setting the value it already holds is ``unchanged``."""
        body: dict[str, Any] = {"value": value}
        if base_version is not None:
            body["base_version"] = base_version
        request = ApiRequest("PUT", self._leaf_path(subject, path), content=dumps(body))
        return self._call(request, Leaf.from_json)

    def delete_leaf(self, subject: str, path: str, *, base_version: int | None = None) -> Plan[Leaf]:
        """Empty one leaf (``write`` scope). Not sent again after a lost answer: emptying an empty
        leaf answers NotFoundError (``leaf_empty``)."""
        params = None if base_version is None else {"base_version": str(base_version)}
        request = ApiRequest("DELETE", self._leaf_path(subject, path), params=params, idempotent=False)
        return self._call(request, Leaf.from_json)

    def leaf_history(self, subject: str, path: str, *, page_size: int | None = None) -> Listing[LeafChange]:
        """Every value the leaf was given, oldest first: version, op, actor, sentence (a page
        fetched as it is reached)."""
        return self._list(
            self._leaf_path(subject, path) + "/history", page_size, "changes", LeafChange.from_json
        )

    def diff(self, subject: str, a: int, b: int) -> Plan[tuple[Change, ...]]:
        """The net changes turning version ``a`` into version ``b`` (leaves the key may see)."""
        path = subject_path(subject, "versions", str(int(a)), "diff", str(int(b)))
        return self._call(
            ApiRequest("GET", path), lambda data: tuple(Change.from_json(c) for c in data["changes"])
        )

    def revert(self, subject: str, version: int, *, base_version: int | None = None) -> Plan[Revert]:
        """A new version whose tree equals ``version``'s (``write`` scope), through the gate and
        audit log; ``base_version``: ConflictError if the subject moved on. Sent again after a lost
        answer: a second revert to the same version is ``unchanged``."""
        body: dict[str, Any] = {} if base_version is None else {"base_version": base_version}
        path = subject_path(subject, "versions", str(int(version)), "revert")
        return self._call(ApiRequest("POST", path, content=dumps(body)), Revert.from_json)

    def erase(self, subject: str) -> Plan[Erasure]:
        """Erase the subject (messages, chunks, versions, ops, vectors), leaving a tombstone.

        Not sent again after a timeout: a second erase of the same id answers 404.
        """
        request = ApiRequest("DELETE", subject_path(subject), idempotent=False)
        return self._call(request, Erasure.from_json)

    # --- queries ---------------------------------------------------------------------------

    @staticmethod
    def _query_request(
        subject: str,
        endpoint: str,
        query: str,
        mode: Mode,
        as_of: AsOf | None,
        token_budget: int | None,
        timeout: float | None,
    ) -> ApiRequest:
        body: dict[str, Any] = {"query": query, "mode": mode}
        if as_of is not None:
            body["as_of"] = as_of_json(as_of)
        if token_budget is not None:
            body["token_budget"] = token_budget
        return ApiRequest("POST", subject_path(subject, endpoint), content=dumps(body), timeout=timeout)

    def context(
        self,
        subject: str,
        query: str,
        *,
        mode: Mode = "auto",
        as_of: AsOf | None = None,
        token_budget: int | None = None,
        timeout: float | None = None,
    ) -> Plan[Context]:
        """Memory context for ``query``: the rendered tree (+ evidence in deep mode)."""
        request = self._query_request(subject, "context", query, mode, as_of, token_budget, timeout)
        return self._call(request, Context.from_json)

    def answer(
        self,
        subject: str,
        query: str,
        *,
        mode: Mode = "auto",
        as_of: AsOf | None = None,
        token_budget: int | None = None,
        timeout: float | None = None,
    ) -> Plan[Answer]:
        """The responder model's answer to ``query`` over the same context (``timeout``: per call)."""
        request = self._query_request(subject, "answer", query, mode, as_of, token_budget, timeout)
        return self._call(request, Answer.from_json)

    def search(
        self,
        subject: str,
        query: str,
        *,
        prefix: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int | None = None,
        timeout: float | None = None,
    ) -> Plan[SearchResult]:
        """Leaf values and evidence matching ``query``, best first: leaves under ``prefix`` whose
        value was set in ``since``..``until``, evidence said in that range (keys with
        ``read_special``; otherwise ``evidence_status`` is ``withheld``)."""
        body: dict[str, Any] = {"query": query}
        if prefix:
            body["prefix"] = prefix
        for name, when in (("since", since), ("until", until)):
            if when is not None:
                body[name] = when.isoformat() if isinstance(when, datetime) else when
        if limit is not None:
            body["limit"] = limit
        request = ApiRequest("POST", subject_path(subject, "search"), content=dumps(body), timeout=timeout)
        return self._call(request, SearchResult.from_json)
