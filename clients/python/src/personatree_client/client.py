"""The two clients: :class:`PersonaTree` (blocking) and :class:`AsyncPersonaTree` (asyncio).

Both expose the same operations, defined once in :class:`~personatree_client._core.Operations`
(tenant administration: :class:`~personatree_client.admin.AdminOperations`)
as plans; a client only runs a plan: it sends the requests the plan yields on its httpx client
and sleeps where the plan asks (``time.sleep`` or ``asyncio.sleep``). A list operation is one
plan per page (:class:`~personatree_client._protocol.Listing`): the client runs the next one when
its caller's iteration reaches it. Each public method is an
operation bound by a descriptor that keeps the operation's signature and docstring for type
checkers and ``help()``.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Concatenate, Generic, ParamSpec, Self, TypeVar, overload

import httpx

from personatree_client._core import SERVER_MAX_MESSAGES_PER_CALL, SERVER_MAX_REQUEST_BYTES, Operations
from personatree_client._protocol import (
    ApiRequest,
    Listing,
    NoResponse,
    Outcome,
    Plan,
    Response,
    RetryPolicy,
    Sleep,
)
from personatree_client.admin import AdminOperations

__version__ = "0.1.0"

P = ParamSpec("P")
T = TypeVar("T")
H = TypeVar("H", bound=httpx.Client | httpx.AsyncClient)
X = TypeVar("X", bound=httpx.BaseTransport | httpx.AsyncBaseTransport)
R = TypeVar("R")
Y = TypeVar("Y")


def _outcome(response: httpx.Response) -> Response:
    return Response(response.status_code, response.headers, response.content)


class _Bound(Generic[P, R]):
    """A descriptor turning an operation (returning ``R``: a plan, or a list's page plans) into a
    method of the client class it is set on."""

    def __init__(self, operation: Callable[Concatenate[AdminOperations, P], R]) -> None:
        self.operation = operation
        self.__doc__ = operation.__doc__
        signature = inspect.signature(operation)  # without the Operations instance and the Plan
        self.signature = signature.replace(
            parameters=list(signature.parameters.values())[1:], return_annotation=inspect.Signature.empty
        )

    def _bind(self, ops: AdminOperations, run: Callable[[R], Y]) -> Callable[P, Y]:
        """The method: the operation's arguments are checked at the call, then ``run`` carries it
        out (runs the plan; or, for a list, returns an iterator over its pages)."""
        operation = self.operation

        def call(*args: P.args, **kwargs: P.kwargs) -> Y:
            return run(operation(ops, *args, **kwargs))

        # Named, documented and signed as the operation (``help(client.ingest)``).
        call.__name__ = call.__qualname__ = operation.__name__
        call.__doc__ = operation.__doc__
        call.__signature__ = self.signature  # type: ignore[attr-defined]
        return call


class _SyncOperation(_Bound[P, Plan[T]]):
    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: PersonaTree, owner: type) -> Callable[P, T]: ...
    def __get__(self, client: PersonaTree | None, owner: type) -> Self | Callable[P, T]:
        return self if client is None else self._bind(client._ops, client._run)


class _SyncList(_Bound[P, Listing[T]]):
    """A list operation as a method returning a lazy iterator of its items (``_iterate``)."""

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: PersonaTree, owner: type) -> Callable[P, Iterator[T]]: ...
    def __get__(self, client: PersonaTree | None, owner: type) -> Self | Callable[P, Iterator[T]]:
        return self if client is None else self._bind(client._ops, client._iterate)


class _AsyncOperation(_Bound[P, Plan[T]]):
    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: AsyncPersonaTree, owner: type) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, client: AsyncPersonaTree | None, owner: type) -> Self | Callable[P, Awaitable[T]]:
        return self if client is None else self._bind(client._ops, client._run)


class _AsyncList(_Bound[P, Listing[T]]):
    """A list operation as a method returning a lazy async iterator (``async for``)."""

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: AsyncPersonaTree, owner: type) -> Callable[P, AsyncIterator[T]]: ...
    def __get__(self, client: AsyncPersonaTree | None, owner: type) -> Self | Callable[P, AsyncIterator[T]]:
        return self if client is None else self._bind(client._ops, client._iterate)


class _Client(Generic[H, X]):
    """What both clients share: configuration, the operations, and an httpx client of type ``H``
    (``transport``: an httpx transport of type ``X``, e.g. ``httpx.MockTransport`` in tests)."""

    _http_class: Callable[..., H]

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        max_retries: int = 3,
        max_retry_wait: float = 10.0,
        max_batch_messages: int = SERVER_MAX_MESSAGES_PER_CALL,
        max_batch_bytes: int = SERVER_MAX_REQUEST_BYTES,
        transport: X | None = None,
    ) -> None:
        base_url = base_url or os.environ.get("PERSONATREE_URL")
        api_key = api_key or os.environ.get("PERSONATREE_API_KEY")
        if not base_url:
            raise ValueError("base_url is required (or set PERSONATREE_URL), e.g. http://127.0.0.1:8008")
        if not api_key:
            raise ValueError("api_key is required (or set PERSONATREE_API_KEY)")
        self._ops = AdminOperations(
            retry=RetryPolicy(max_retries=max_retries, max_wait=max_retry_wait),
            max_batch_messages=max_batch_messages,
            max_batch_bytes=max_batch_bytes,
        )
        headers = {
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "User-Agent": f"personatree-client/{__version__} httpx/{httpx.__version__}",
        }
        self._http: H = self._http_class(
            base_url=base_url, headers=headers, timeout=timeout, transport=transport
        )


class PersonaTree(_Client[httpx.Client, httpx.BaseTransport]):
    """Blocking client of the PersonaTree API.

    ``base_url`` and ``api_key`` default to ``$PERSONATREE_URL`` and ``$PERSONATREE_API_KEY``.
    ``timeout`` (seconds, or an ``httpx.Timeout``) applies to every request (``context`` and
    ``answer`` take their own). 429 and 503 answers are retried at most ``max_retries`` times,
    after the server's ``Retry-After`` if it is at most ``max_retry_wait`` seconds (see
    :class:`~personatree_client._protocol.RetryPolicy`). ``ingest`` splits messages into calls of at
    most ``max_batch_messages`` messages and ``max_batch_bytes`` bytes (the server's default
    limits; lower them to match a server configured lower). ``transport`` replaces httpx's
    (tests: ``httpx.MockTransport``). Use as a context manager, or call :meth:`close`.

    The list methods (``subjects``, ``versions``, ``leaf_history``, ``imports``, ``api_keys``,
    ``webhooks``, ``webhook_deliveries``) return a lazy iterator: a page (``page_size`` items, the
    server's default without one) is requested when iteration reaches it, so an API error comes
    from the loop, not the call; ``list(pt.subjects())`` reads them all. Iterate before the client
    is closed.
    """

    _http_class = httpx.Client

    def _send(self, request: ApiRequest) -> Outcome:
        try:
            return _outcome(self._http.request(**request.httpx_kwargs()))
        except httpx.TransportError as exc:
            return NoResponse(exc)

    def _run(self, plan: Plan[T]) -> T:
        outcome: Outcome = None
        while True:
            try:
                action = plan.send(outcome)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(action, Sleep):
                time.sleep(action.seconds)
                outcome = None
            else:
                outcome = self._send(action)

    def _iterate(self, listing: Listing[T]) -> Iterator[T]:
        """The items of ``listing``, each page requested when the caller reaches it."""
        while not listing.exhausted:
            yield from self._run(listing.next_page())

    ingest = _SyncOperation(Operations.ingest)
    ingest_status = _SyncOperation(Operations.ingest_status)
    flush = _SyncOperation(Operations.flush)
    requeue_chunk = _SyncOperation(Operations.requeue_chunk)
    create_import = _SyncOperation(Operations.create_import)
    get_import = _SyncOperation(Operations.get_import)
    imports = _SyncList(Operations.imports)
    wait_until_applied = _SyncOperation(Operations.wait_until_applied)
    tree = _SyncOperation(Operations.tree)
    versions = _SyncList(Operations.versions)
    diff = _SyncOperation(Operations.diff)
    revert = _SyncOperation(Operations.revert)
    export = _SyncOperation(Operations.export)
    erase = _SyncOperation(Operations.erase)
    subjects = _SyncList(Operations.subjects)
    subject = _SyncOperation(Operations.subject)
    leaf = _SyncOperation(Operations.leaf)
    leaf_history = _SyncList(Operations.leaf_history)
    set_leaf = _SyncOperation(Operations.set_leaf)
    delete_leaf = _SyncOperation(Operations.delete_leaf)
    context = _SyncOperation(Operations.context)
    answer = _SyncOperation(Operations.answer)
    search = _SyncOperation(Operations.search)
    api_keys = _SyncList(AdminOperations.api_keys)
    api_key = _SyncOperation(AdminOperations.api_key)
    create_api_key = _SyncOperation(AdminOperations.create_api_key)
    rotate_api_key = _SyncOperation(AdminOperations.rotate_api_key)
    revoke_api_key = _SyncOperation(AdminOperations.revoke_api_key)
    webhooks = _SyncList(AdminOperations.webhooks)
    webhook = _SyncOperation(AdminOperations.webhook)
    register_webhook = _SyncOperation(AdminOperations.register_webhook)
    update_webhook = _SyncOperation(AdminOperations.update_webhook)
    rotate_webhook_secret = _SyncOperation(AdminOperations.rotate_webhook_secret)
    delete_webhook = _SyncOperation(AdminOperations.delete_webhook)
    webhook_deliveries = _SyncList(AdminOperations.webhook_deliveries)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncPersonaTree(_Client[httpx.AsyncClient, httpx.AsyncBaseTransport]):
    """The same client for asyncio: every operation is a coroutine (same arguments, same results),
    but a list method returns an async iterator (``async for``) where the blocking client's
    returns an iterator.

    Arguments as :class:`PersonaTree`'s; ``transport`` is an ``httpx.AsyncBaseTransport``. Use
    as an async context manager, or call :meth:`aclose`.
    """

    _http_class = httpx.AsyncClient

    async def _send(self, request: ApiRequest) -> Outcome:
        try:
            return _outcome(await self._http.request(**request.httpx_kwargs()))
        except httpx.TransportError as exc:
            return NoResponse(exc)

    async def _run(self, plan: Plan[T]) -> T:
        outcome: Outcome = None
        while True:
            try:
                action = plan.send(outcome)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(action, Sleep):
                await asyncio.sleep(action.seconds)
                outcome = None
            else:
                outcome = await self._send(action)

    async def _iterate(self, listing: Listing[T]) -> AsyncIterator[T]:
        """The items of ``listing``, each page requested when the caller reaches it."""
        while not listing.exhausted:
            for item in await self._run(listing.next_page()):
                yield item

    ingest = _AsyncOperation(Operations.ingest)
    ingest_status = _AsyncOperation(Operations.ingest_status)
    flush = _AsyncOperation(Operations.flush)
    requeue_chunk = _AsyncOperation(Operations.requeue_chunk)
    create_import = _AsyncOperation(Operations.create_import)
    get_import = _AsyncOperation(Operations.get_import)
    imports = _AsyncList(Operations.imports)
    wait_until_applied = _AsyncOperation(Operations.wait_until_applied)
    tree = _AsyncOperation(Operations.tree)
    versions = _AsyncList(Operations.versions)
    diff = _AsyncOperation(Operations.diff)
    revert = _AsyncOperation(Operations.revert)
    export = _AsyncOperation(Operations.export)
    erase = _AsyncOperation(Operations.erase)
    subjects = _AsyncList(Operations.subjects)
    subject = _AsyncOperation(Operations.subject)
    leaf = _AsyncOperation(Operations.leaf)
    leaf_history = _AsyncList(Operations.leaf_history)
    set_leaf = _AsyncOperation(Operations.set_leaf)
    delete_leaf = _AsyncOperation(Operations.delete_leaf)
    context = _AsyncOperation(Operations.context)
    answer = _AsyncOperation(Operations.answer)
    search = _AsyncOperation(Operations.search)
    api_keys = _AsyncList(AdminOperations.api_keys)
    api_key = _AsyncOperation(AdminOperations.api_key)
    create_api_key = _AsyncOperation(AdminOperations.create_api_key)
    rotate_api_key = _AsyncOperation(AdminOperations.rotate_api_key)
    revoke_api_key = _AsyncOperation(AdminOperations.revoke_api_key)
    webhooks = _AsyncList(AdminOperations.webhooks)
    webhook = _AsyncOperation(AdminOperations.webhook)
    register_webhook = _AsyncOperation(AdminOperations.register_webhook)
    update_webhook = _AsyncOperation(AdminOperations.update_webhook)
    rotate_webhook_secret = _AsyncOperation(AdminOperations.rotate_webhook_secret)
    delete_webhook = _AsyncOperation(AdminOperations.delete_webhook)
    webhook_deliveries = _AsyncList(AdminOperations.webhook_deliveries)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
