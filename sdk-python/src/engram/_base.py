"""What the generated resources and the hand-written client share: the NOT_GIVEN sentinel and call options."""
from __future__ import annotations

from typing import Mapping, NamedTuple, Optional


class NotGiven:
    """An argument left out (sent as nothing), as opposed to None (sent as JSON null where the API allows it)."""

    _instance: Optional[NotGiven] = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


class RequestOptions(NamedTuple):
    """Per-call options every method takes."""

    extra_headers: Optional[Mapping[str, str]] = None
    extra_query: Optional[Mapping[str, object]] = None
    extra_body: Optional[Mapping[str, object]] = None
    idempotency_key: Optional[str] = None
    timeout: Optional[float] = None
