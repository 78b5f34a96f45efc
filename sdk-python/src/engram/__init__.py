"""The Python SDK of engram: `Engram` (sync) and `AsyncEngram` on httpx, generated from the contract."""
from __future__ import annotations

from . import _types as types
from . import webhooks
from ._base import NOT_GIVEN, NotGiven
from ._client import AsyncEngram, Engram, RawResponse
from ._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    EngramError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from ._pagination import AsyncPaginator, SyncPaginator
from ._streaming import EngramEvent
from ._version import __version__
from .verify import CertificateCheck, ReceiptCheck, verify_erasure_receipt, verify_trace_certificate
from .webhooks import WebhookVerificationError

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncEngram",
    "AsyncPaginator",
    "AuthenticationError",
    "BadRequestError",
    "CertificateCheck",
    "ConflictError",
    "Engram",
    "EngramError",
    "EngramEvent",
    "InternalServerError",
    "NOT_GIVEN",
    "NotFoundError",
    "NotGiven",
    "PermissionDeniedError",
    "RateLimitError",
    "RawResponse",
    "ReceiptCheck",
    "SyncPaginator",
    "UnprocessableEntityError",
    "WebhookVerificationError",
    "__version__",
    "types",
    "verify_erasure_receipt",
    "verify_trace_certificate",
    "webhooks",
]
