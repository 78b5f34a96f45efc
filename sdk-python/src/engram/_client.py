"""Engram and AsyncEngram: auth, JSON, Idempotency-Key on every POST, timeouts and retries."""
from __future__ import annotations

import asyncio
import copy
import email.utils
import json
import os
import platform
import random
import time
import uuid
from typing import Any, AsyncIterator, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple, Union
from urllib.parse import quote

import httpx

from ._base import NotGiven, RequestOptions
from ._errors import APIConnectionError, APITimeoutError, EngramError, error_from_response
from ._operations import Operation
from ._pagination import AsyncPaginator, SyncPaginator
from ._resources import AsyncNamespaces, SyncNamespaces
from ._streaming import EngramEvent, SSEDecoder
from ._version import __version__

DEFAULT_BASE_URL = "http://127.0.0.1:8787"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
BASE_DELAY = 0.5
MAX_DELAY = 8.0
#: A Retry-After longer than this is not waited out: the error goes to the caller at once.
MAX_RETRY_AFTER = 60.0
#: Statuses after which reconnecting an event stream cannot help.
FINAL_STREAM_STATUSES = (400, 401, 403, 404)


def backoff(attempt: int) -> float:
    """Full jitter: a random wait between 0 and the exponential cap of this attempt."""
    return random.random() * min(MAX_DELAY, BASE_DELAY * 2.0**attempt)


def retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After as seconds (a number or an HTTP date), None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_to_datetime(value) if value else None
    return None if parsed is None else max(0.0, parsed.timestamp() - time.time())


class RawResponse:
    """An answer with its headers (with_raw_response): `.headers`, `.status_code`, `.http_response`, `.parse()`."""

    def __init__(self, http_response: httpx.Response, parsed: Any) -> None:
        self.http_response = http_response
        self.headers = http_response.headers
        self.status_code = http_response.status_code
        self.request_id: Optional[str] = http_response.headers.get("x-request-id")
        self._parsed = parsed

    def parse(self) -> Any:
        return self._parsed


class _Prepared(NamedTuple):
    method: str
    url: str
    params: Dict[str, str]
    headers: Dict[str, str]
    content: Optional[bytes]
    timeout: float


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_query_value(v) for v in value)
    return str(value)


class _Common:
    api_key: str
    base_url: str
    max_retries: int
    timeout: float
    _default_headers: Dict[str, str]
    _raw: bool

    def _setup(
        self,
        api_key: Optional[str],
        base_url: Optional[str],
        max_retries: int,
        timeout: float,
        default_headers: Optional[Mapping[str, str]],
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("ENGRAM_API_KEY")
        if not key:
            raise EngramError("engram: an API key is required: pass api_key= or set ENGRAM_API_KEY", code="MISSING_API_KEY")
        self.api_key = key
        self.base_url = (base_url or os.environ.get("ENGRAM_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.max_retries = max_retries
        self.timeout = timeout
        self._default_headers = dict(default_headers or {})
        self._raw = False

    @property
    def user_agent(self) -> str:
        return f"engram-sdk-python/{__version__} (Python {platform.python_version()})"

    def _prepare(
        self,
        op: Operation,
        path: Mapping[str, object],
        query: Mapping[str, object],
        body: Optional[Mapping[str, object]],
        file: Union[str, bytes, None],
        options: RequestOptions,
        accept: str = "application/json",
    ) -> _Prepared:
        url_path = op.path
        for name, value in path.items():
            url_path = url_path.replace("{" + name + "}", quote(str(value), safe=""))
        merged_query = {**query, **(options.extra_query or {})}
        params = {k: _query_value(v) for k, v in merged_query.items() if v is not None and not isinstance(v, NotGiven)}
        headers = {
            "accept": accept,
            "user-agent": self.user_agent,
            **self._default_headers,
            "authorization": f"Bearer {self.api_key}",
        }
        content: Optional[bytes] = None
        if file is not None:
            content = file.encode("utf-8") if isinstance(file, str) else file
            headers["content-type"] = "application/x-ndjson"
        elif body is not None:
            fields = {k: v for k, v in body.items() if not isinstance(v, NotGiven)}
            fields.update(options.extra_body or {})
            content = json.dumps(fields, ensure_ascii=False).encode("utf-8")
            headers["content-type"] = "application/json"
        if op.method == "POST":
            # One key for every attempt: a retry after a lost answer is replayed, not done twice.
            headers["idempotency-key"] = options.idempotency_key or str(uuid.uuid4())
        headers.update(options.extra_headers or {})
        timeout = options.timeout if options.timeout is not None else self.timeout
        return _Prepared(op.method, self.base_url + url_path, params, headers, content, timeout)

    def _retry_wait(self, method: str, response: Optional[httpx.Response], attempt: int) -> Optional[float]:
        """Seconds to wait before the next attempt, or None when this answer (or failure) is final.

        `x-should-retry: true|false` from the server decides; without it 429, a keyed POST's 409
        `Idempotency-Status: in-progress`, 5xx and connection failures are retried, except a
        PATCH (not idempotent) after anything but 429. Every POST carries an Idempotency-Key.
        """
        if attempt >= self.max_retries:
            return None
        if response is None:
            return backoff(attempt) if method != "PATCH" else None
        should = response.headers.get("x-should-retry")
        wait = retry_after(response.headers.get("retry-after"))
        if wait is not None and wait > MAX_RETRY_AFTER:
            return None
        status = response.status_code
        if should == "true":
            retry = True
        elif should == "false":
            retry = False
        else:
            in_progress = status == 409 and response.headers.get("idempotency-status") == "in-progress"
            retry = in_progress or status == 429 or (status >= 500 and method != "PATCH")
        if not retry:
            return None
        return wait if wait is not None else backoff(attempt)

    @staticmethod
    def _parse(op: Operation, response: httpx.Response) -> Any:
        if response.status_code == 204 or op.kind == "none" or not response.content:
            return None
        if op.kind == "text":
            return response.text
        if "json" in response.headers.get("content-type", ""):
            return response.json()
        return response.text

    @staticmethod
    def _connection_error(prepared: _Prepared, err: Exception) -> EngramError:
        if isinstance(err, httpx.TimeoutException):
            return APITimeoutError(f"No answer within {prepared.timeout} s: {prepared.method} {prepared.url}", code="TIMEOUT")
        return APIConnectionError(f"The request failed: {prepared.method} {prepared.url}: {err}", code="NETWORK_ERROR")

    @staticmethod
    def _event(message: Mapping[str, Optional[str]]) -> EngramEvent:
        data = message.get("data") or "null"
        return {"id": message.get("id") or "", "type": message.get("event") or "message", "data": json.loads(data)}


class Engram(_Common, SyncNamespaces):
    """The engram API, synchronous. `Engram(api_key=..., base_url=...)`, or ENGRAM_API_KEY and ENGRAM_BASE_URL."""

    def __init__(
        self,
        *,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        default_headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        self._setup(api_key, base_url, max_retries, timeout, default_headers)
        self._http = http_client or httpx.Client()
        self._init_namespaces()

    def with_options(self, *, max_retries: Optional[int] = None, timeout: Optional[float] = None) -> Engram:
        """A client that shares this one's connections with other defaults."""
        other = copy.copy(self)
        if max_retries is not None:
            other.max_retries = max_retries
        if timeout is not None:
            other.timeout = timeout
        other._init_namespaces()
        return other

    @property
    def with_raw_response(self) -> Any:
        """The same methods answering a RawResponse (headers, status, the parsed body with `.parse()`)."""
        other = copy.copy(self)
        other._raw = True
        other._init_namespaces()
        return other

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    def _send(self, prepared: _Prepared) -> httpx.Response:
        for attempt in range(self.max_retries + 1):
            try:
                response = self._http.request(
                    prepared.method, prepared.url, params=prepared.params, headers=prepared.headers,
                    content=prepared.content, timeout=prepared.timeout,
                )
            except httpx.TransportError as err:
                wait = self._retry_wait(prepared.method, None, attempt)
                if wait is None:
                    raise self._connection_error(prepared, err) from err
                time.sleep(wait)
                continue
            if response.is_success:
                return response
            wait = self._retry_wait(prepared.method, response, attempt)
            if wait is None:
                raise error_from_response(response)
            time.sleep(wait)
        raise AssertionError("unreachable")

    def _call(
        self,
        op: Operation,
        *,
        path: Mapping[str, object],
        query: Mapping[str, object],
        body: Optional[Mapping[str, object]] = None,
        file: Union[str, bytes, None] = None,
        options: RequestOptions = RequestOptions(),
    ) -> Any:
        response = self._send(self._prepare(op, path, query, body, file, options))
        parsed = self._parse(op, response)
        return RawResponse(response, parsed) if self._raw else parsed

    def _paginate(
        self,
        op: Operation,
        *,
        path: Mapping[str, object],
        query: Mapping[str, object],
        options: RequestOptions = RequestOptions(),
    ) -> SyncPaginator[Any, Any]:
        start = query.get("offset")

        def fetch(offset: Optional[int]) -> Any:
            q: Dict[str, object] = dict(query) if offset is None else {**query, "offset": offset}
            return self._parse(op, self._send(self._prepare(op, path, q, None, None, options)))

        assert op.page_key is not None
        return SyncPaginator(fetch, op.page_key, start if isinstance(start, int) else None)

    def _stream_events(
        self,
        op: Operation,
        *,
        query: Mapping[str, object],
        last_event_id: Optional[str],
        max_reconnects: int,
        extra_headers: Optional[Mapping[str, str]],
    ) -> Iterator[EngramEvent]:
        """GET /v1/events/stream as an iterator that reconnects with Last-Event-ID (no event missed or repeated)."""
        failures = 0
        while True:
            headers = dict(extra_headers or {})
            if last_event_id:
                headers["last-event-id"] = last_event_id
            prepared = self._prepare(op, {}, query, None, None, RequestOptions(extra_headers=headers), accept="text/event-stream")
            received = False
            try:
                timeout = httpx.Timeout(prepared.timeout, read=None)
                with self._http.stream("GET", prepared.url, params=prepared.params, headers=prepared.headers, timeout=timeout) as response:
                    if not response.is_success:
                        response.read()
                        error = error_from_response(response)
                        if response.status_code in FINAL_STREAM_STATUSES:
                            raise error
                        failures += 1
                        if failures > max_reconnects:
                            raise error
                    else:
                        decoder = SSEDecoder()
                        for line in response.iter_lines():
                            message = decoder.line(line)
                            if message is None or message.get("data") is None:
                                continue
                            received = True
                            failures = 0
                            if message.get("id"):
                                last_event_id = message["id"]
                            yield self._event(message)
            except httpx.TransportError as err:
                failures += 1
                if failures > max_reconnects:
                    raise APIConnectionError(f"The event stream kept dropping: {err}", code="NETWORK_ERROR") from err
            else:
                if not received:
                    failures += 1
                    if failures > max_reconnects:
                        raise APIConnectionError("The event stream kept closing", code="NETWORK_ERROR")
            time.sleep(backoff(failures))


class AsyncEngram(_Common, AsyncNamespaces):
    """The engram API on asyncio: the same methods as Engram, awaited; lists and streams with `async for`."""

    def __init__(
        self,
        *,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        default_headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        self._setup(api_key, base_url, max_retries, timeout, default_headers)
        self._http = http_client or httpx.AsyncClient()
        self._init_namespaces()

    def with_options(self, *, max_retries: Optional[int] = None, timeout: Optional[float] = None) -> AsyncEngram:
        other = copy.copy(self)
        if max_retries is not None:
            other.max_retries = max_retries
        if timeout is not None:
            other.timeout = timeout
        other._init_namespaces()
        return other

    @property
    def with_raw_response(self) -> Any:
        other = copy.copy(self)
        other._raw = True
        other._init_namespaces()
        return other

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncEngram:
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.close()

    async def _send(self, prepared: _Prepared) -> httpx.Response:
        for attempt in range(self.max_retries + 1):
            try:
                response = await self._http.request(
                    prepared.method, prepared.url, params=prepared.params, headers=prepared.headers,
                    content=prepared.content, timeout=prepared.timeout,
                )
            except httpx.TransportError as err:
                wait = self._retry_wait(prepared.method, None, attempt)
                if wait is None:
                    raise self._connection_error(prepared, err) from err
                await asyncio.sleep(wait)
                continue
            if response.is_success:
                return response
            wait = self._retry_wait(prepared.method, response, attempt)
            if wait is None:
                raise error_from_response(response)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _call(
        self,
        op: Operation,
        *,
        path: Mapping[str, object],
        query: Mapping[str, object],
        body: Optional[Mapping[str, object]] = None,
        file: Union[str, bytes, None] = None,
        options: RequestOptions = RequestOptions(),
    ) -> Any:
        response = await self._send(self._prepare(op, path, query, body, file, options))
        parsed = self._parse(op, response)
        return RawResponse(response, parsed) if self._raw else parsed

    def _paginate(
        self,
        op: Operation,
        *,
        path: Mapping[str, object],
        query: Mapping[str, object],
        options: RequestOptions = RequestOptions(),
    ) -> AsyncPaginator[Any, Any]:
        start = query.get("offset")

        async def fetch(offset: Optional[int]) -> Any:
            q: Dict[str, object] = dict(query) if offset is None else {**query, "offset": offset}
            return self._parse(op, await self._send(self._prepare(op, path, q, None, None, options)))

        assert op.page_key is not None
        return AsyncPaginator(fetch, op.page_key, start if isinstance(start, int) else None)

    async def _stream_events(
        self,
        op: Operation,
        *,
        query: Mapping[str, object],
        last_event_id: Optional[str],
        max_reconnects: int,
        extra_headers: Optional[Mapping[str, str]],
    ) -> AsyncIterator[EngramEvent]:
        """The async twin of Engram._stream_events."""
        failures = 0
        while True:
            headers = dict(extra_headers or {})
            if last_event_id:
                headers["last-event-id"] = last_event_id
            prepared = self._prepare(op, {}, query, None, None, RequestOptions(extra_headers=headers), accept="text/event-stream")
            received = False
            try:
                timeout = httpx.Timeout(prepared.timeout, read=None)
                async with self._http.stream("GET", prepared.url, params=prepared.params, headers=prepared.headers, timeout=timeout) as response:
                    if not response.is_success:
                        await response.aread()
                        error = error_from_response(response)
                        if response.status_code in FINAL_STREAM_STATUSES:
                            raise error
                        failures += 1
                        if failures > max_reconnects:
                            raise error
                    else:
                        decoder = SSEDecoder()
                        async for line in response.aiter_lines():
                            message = decoder.line(line)
                            if message is None or message.get("data") is None:
                                continue
                            received = True
                            failures = 0
                            if message.get("id"):
                                last_event_id = message["id"]
                            yield self._event(message)
            except httpx.TransportError as err:
                failures += 1
                if failures > max_reconnects:
                    raise APIConnectionError(f"The event stream kept dropping: {err}", code="NETWORK_ERROR") from err
            else:
                if not received:
                    failures += 1
                    if failures > max_reconnects:
                        raise APIConnectionError("The event stream kept closing", code="NETWORK_ERROR")
            await asyncio.sleep(backoff(failures))
