"""personatree-client: the Python client of the PersonaTree memory API (sync and async, on httpx).

::

    from personatree_client import PersonaTree

    with PersonaTree("http://127.0.0.1:8008", api_key="pt_live_...") as pt:
        pt.ingest("user-42", [{"role": "user", "content": "I moved to Lisbon last spring."}])
        pt.wait_until_applied("user-42")
        print(pt.context("user-42", "Where do I live?").context.text)
"""

from personatree_client._protocol import RetryPolicy
from personatree_client.admin import ApiKey, DeliveryAttempt, WebhookDelivery, WebhookEndpoint
from personatree_client.client import AsyncPersonaTree, PersonaTree, __version__
from personatree_client.errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    IdempotencyConflictError,
    IngestBlockedError,
    ModelUnavailableError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PersonaTreeError,
    RateLimitError,
    ResponseDecodeError,
    ServerError,
    ServiceUnavailableError,
    SubjectErasedError,
    WaitTimeoutError,
)
from personatree_client.imports import ImportJob
from personatree_client.models import (
    ChunkFailure,
    ChunkSpan,
    FlushResult,
    IngestResult,
    IngestStatus,
    Message,
    Receipt,
    RequeuedChunk,
)
from personatree_client.results import (
    Answer,
    Change,
    Context,
    Erasure,
    EvidenceHit,
    Export,
    Leaf,
    LeafChange,
    LeafHit,
    RenderedContext,
    Revert,
    SearchResult,
    SubjectSummary,
    Tree,
    Version,
)

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "Answer",
    "ApiKey",
    "AsyncPersonaTree",
    "AuthenticationError",
    "Change",
    "BadRequestError",
    "ChunkFailure",
    "ChunkSpan",
    "ConflictError",
    "Context",
    "DeliveryAttempt",
    "Erasure",
    "EvidenceHit",
    "Export",
    "FlushResult",
    "IdempotencyConflictError",
    "ImportJob",
    "IngestBlockedError",
    "Leaf",
    "LeafChange",
    "LeafHit",
    "IngestResult",
    "IngestStatus",
    "Message",
    "ModelUnavailableError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PersonaTree",
    "PersonaTreeError",
    "RateLimitError",
    "Receipt",
    "RequeuedChunk",
    "RenderedContext",
    "ResponseDecodeError",
    "RetryPolicy",
    "Revert",
    "SearchResult",
    "ServerError",
    "ServiceUnavailableError",
    "SubjectErasedError",
    "SubjectSummary",
    "Tree",
    "Version",
    "WaitTimeoutError",
    "WebhookDelivery",
    "WebhookEndpoint",
    "__version__",
]
