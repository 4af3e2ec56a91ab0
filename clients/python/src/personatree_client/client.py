"""The two clients: :class:`PersonaTree` (blocking) and :class:`AsyncPersonaTree` (asyncio).

Both expose the same operations, defined once in :class:`~personatree_client._core.Operations`
(tenant administration: :class:`~personatree_client.admin.AdminOperations`)
as plans; a client only runs a plan: it sends the requests the plan yields on its httpx client
and sleeps where the plan asks (``time.sleep`` or ``asyncio.sleep``). Each public method is an
operation bound by a descriptor that keeps the operation's signature and docstring for type
checkers and ``help()``.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Concatenate, Generic, ParamSpec, Self, TypeVar, overload

import httpx

from personatree_client._core import SERVER_MAX_MESSAGES_PER_CALL, SERVER_MAX_REQUEST_BYTES, Operations
from personatree_client._protocol import ApiRequest, NoResponse, Outcome, Plan, Response, RetryPolicy, Sleep
from personatree_client.admin import AdminOperations

__version__ = "0.1.0"

P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C", bound=Callable[..., object])
H = TypeVar("H", bound=httpx.Client | httpx.AsyncClient)
X = TypeVar("X", bound=httpx.BaseTransport | httpx.AsyncBaseTransport)
OperationFn = Callable[Concatenate[AdminOperations, P], Plan[T]]


def _outcome(response: httpx.Response) -> Response:
    return Response(response.status_code, response.headers, response.content)


class _Bound(Generic[P, T]):
    """A descriptor turning an operation into a method of the client class it is set on."""

    def __init__(self, operation: OperationFn[P, T]) -> None:
        self.operation = operation
        self.__doc__ = operation.__doc__
        signature = inspect.signature(operation)  # without the Operations instance and the Plan
        self.signature = signature.replace(
            parameters=list(signature.parameters.values())[1:], return_annotation=inspect.Signature.empty
        )

    def _named(self, call: C) -> C:
        """``call`` named, documented and signed as the operation (``help(client.ingest)``)."""
        call.__name__ = call.__qualname__ = self.operation.__name__
        call.__doc__ = self.operation.__doc__
        call.__signature__ = self.signature  # type: ignore[attr-defined]
        return call


class _SyncOperation(_Bound[P, T]):
    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: PersonaTree, owner: type) -> Callable[P, T]: ...
    def __get__(self, client: PersonaTree | None, owner: type) -> Self | Callable[P, T]:
        if client is None:
            return self
        operation, ops, run = self.operation, client._ops, client._run

        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return run(operation(ops, *args, **kwargs))

        return self._named(call)


class _AsyncOperation(_Bound[P, T]):
    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: AsyncPersonaTree, owner: type) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, client: AsyncPersonaTree | None, owner: type) -> Self | Callable[P, Awaitable[T]]:
        if client is None:
            return self
        operation, ops, run = self.operation, client._ops, client._run

        def call(*args: P.args, **kwargs: P.kwargs) -> Awaitable[T]:
            return run(operation(ops, *args, **kwargs))

        return self._named(call)


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

    ingest = _SyncOperation(Operations.ingest)
    ingest_status = _SyncOperation(Operations.ingest_status)
    flush = _SyncOperation(Operations.flush)
    requeue_chunk = _SyncOperation(Operations.requeue_chunk)
    create_import = _SyncOperation(Operations.create_import)
    get_import = _SyncOperation(Operations.get_import)
    imports = _SyncOperation(Operations.imports)
    wait_until_applied = _SyncOperation(Operations.wait_until_applied)
    tree = _SyncOperation(Operations.tree)
    versions = _SyncOperation(Operations.versions)
    diff = _SyncOperation(Operations.diff)
    revert = _SyncOperation(Operations.revert)
    export = _SyncOperation(Operations.export)
    erase = _SyncOperation(Operations.erase)
    subjects = _SyncOperation(Operations.subjects)
    subject = _SyncOperation(Operations.subject)
    leaf = _SyncOperation(Operations.leaf)
    leaf_history = _SyncOperation(Operations.leaf_history)
    set_leaf = _SyncOperation(Operations.set_leaf)
    delete_leaf = _SyncOperation(Operations.delete_leaf)
    context = _SyncOperation(Operations.context)
    answer = _SyncOperation(Operations.answer)
    search = _SyncOperation(Operations.search)
    api_keys = _SyncOperation(AdminOperations.api_keys)
    api_key = _SyncOperation(AdminOperations.api_key)
    create_api_key = _SyncOperation(AdminOperations.create_api_key)
    rotate_api_key = _SyncOperation(AdminOperations.rotate_api_key)
    revoke_api_key = _SyncOperation(AdminOperations.revoke_api_key)
    webhooks = _SyncOperation(AdminOperations.webhooks)
    webhook = _SyncOperation(AdminOperations.webhook)
    register_webhook = _SyncOperation(AdminOperations.register_webhook)
    update_webhook = _SyncOperation(AdminOperations.update_webhook)
    rotate_webhook_secret = _SyncOperation(AdminOperations.rotate_webhook_secret)
    delete_webhook = _SyncOperation(AdminOperations.delete_webhook)
    webhook_deliveries = _SyncOperation(AdminOperations.webhook_deliveries)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncPersonaTree(_Client[httpx.AsyncClient, httpx.AsyncBaseTransport]):
    """The same client for asyncio: every operation is a coroutine (same arguments, same results).

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

    ingest = _AsyncOperation(Operations.ingest)
    ingest_status = _AsyncOperation(Operations.ingest_status)
    flush = _AsyncOperation(Operations.flush)
    requeue_chunk = _AsyncOperation(Operations.requeue_chunk)
    create_import = _AsyncOperation(Operations.create_import)
    get_import = _AsyncOperation(Operations.get_import)
    imports = _AsyncOperation(Operations.imports)
    wait_until_applied = _AsyncOperation(Operations.wait_until_applied)
    tree = _AsyncOperation(Operations.tree)
    versions = _AsyncOperation(Operations.versions)
    diff = _AsyncOperation(Operations.diff)
    revert = _AsyncOperation(Operations.revert)
    export = _AsyncOperation(Operations.export)
    erase = _AsyncOperation(Operations.erase)
    subjects = _AsyncOperation(Operations.subjects)
    subject = _AsyncOperation(Operations.subject)
    leaf = _AsyncOperation(Operations.leaf)
    leaf_history = _AsyncOperation(Operations.leaf_history)
    set_leaf = _AsyncOperation(Operations.set_leaf)
    delete_leaf = _AsyncOperation(Operations.delete_leaf)
    context = _AsyncOperation(Operations.context)
    answer = _AsyncOperation(Operations.answer)
    search = _AsyncOperation(Operations.search)
    api_keys = _AsyncOperation(AdminOperations.api_keys)
    api_key = _AsyncOperation(AdminOperations.api_key)
    create_api_key = _AsyncOperation(AdminOperations.create_api_key)
    rotate_api_key = _AsyncOperation(AdminOperations.rotate_api_key)
    revoke_api_key = _AsyncOperation(AdminOperations.revoke_api_key)
    webhooks = _AsyncOperation(AdminOperations.webhooks)
    webhook = _AsyncOperation(AdminOperations.webhook)
    register_webhook = _AsyncOperation(AdminOperations.register_webhook)
    update_webhook = _AsyncOperation(AdminOperations.update_webhook)
    rotate_webhook_secret = _AsyncOperation(AdminOperations.rotate_webhook_secret)
    delete_webhook = _AsyncOperation(AdminOperations.delete_webhook)
    webhook_deliveries = _AsyncOperation(AdminOperations.webhook_deliveries)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
