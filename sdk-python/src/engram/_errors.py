"""Errors by class, as openai-node has them; `code` is one of the closed table (docs/errors.md)."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Type

import httpx


class EngramError(Exception):
    """Every error the SDK raises. `status` is 0 when no answer came (connection, timeout)."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        code: str = "",
        request_id: Optional[str] = None,
        details: Optional[List[Dict[str, Any]]] = None,
        body: object = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.details: List[Dict[str, Any]] = details or []
        self.body = body
        self.headers: Mapping[str, str] = headers or {}

    def __str__(self) -> str:
        where = f" (request_id {self.request_id})" if self.request_id else ""
        prefix = f"{self.status} {self.code}: " if self.status else (f"{self.code}: " if self.code else "")
        return f"{prefix}{self.message}{where}"


class APIStatusError(EngramError):
    """The API answered with an error status."""


class BadRequestError(APIStatusError):
    pass


class AuthenticationError(APIStatusError):
    pass


class PermissionDeniedError(APIStatusError):
    pass


class NotFoundError(APIStatusError):
    pass


class ConflictError(APIStatusError):
    pass


class UnprocessableEntityError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    pass


class InternalServerError(APIStatusError):
    """Any 5xx."""


class APIConnectionError(EngramError):
    """No answer: the connection failed or broke."""


class APITimeoutError(APIConnectionError):
    """No answer within the timeout."""


_BY_STATUS: Dict[int, Type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def error_from_response(response: httpx.Response) -> APIStatusError:
    """The error for an answer the API sent with a non-2xx status (its body already read)."""
    status = response.status_code
    body: object
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = response.text
    fields: Dict[str, Any] = body if isinstance(body, dict) else {}
    message = fields.get("message") or fields.get("error") or (body if isinstance(body, str) and body else f"HTTP {status}")
    code = fields.get("code") if isinstance(fields.get("code"), str) else ""
    request_id = fields.get("request_id") or response.headers.get("x-request-id") or None
    details = fields.get("details") if isinstance(fields.get("details"), list) else None
    cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else APIStatusError)
    return cls(
        str(message),
        status=status,
        code=str(code or ""),
        request_id=str(request_id) if request_id else None,
        details=details,
        body=body,
        headers=dict(response.headers),
    )
