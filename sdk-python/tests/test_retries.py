"""Retries, Idempotency-Key and User-Agent, against httpx.MockTransport (a stub server in-process)."""
from __future__ import annotations

import asyncio
import json
import platform
from typing import Callable, List

import httpx
import pytest

import engram

Handler = Callable[[httpx.Request], httpx.Response]


def scripted(answers: List[httpx.Response], seen: List[httpx.Request]) -> Handler:
    """Answers the scripted responses in turn (the last one again when they run out), recording each request."""

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[min(len(seen), len(answers)) - 1]

    return handle


def client(handler: Handler, max_retries: int = 2) -> engram.Engram:
    return engram.Engram(api_key="eng_test", base_url="http://stub", max_retries=max_retries, http_client=httpx.Client(transport=httpx.MockTransport(handler)))


ERROR_503 = {"error": "down", "code": "SERVICE_UNAVAILABLE", "status": 503, "request_id": "req_1"}
STORED = {"id": "m1", "uuid": "m1", "hash": "h", "created_at": "2026-01-01T00:00:00Z"}


def test_should_retry_true_then_success_reuses_the_idempotency_key() -> None:
    seen: List[httpx.Request] = []
    answers = [
        httpx.Response(503, json=ERROR_503, headers={"x-should-retry": "true", "retry-after": "0"}),
        httpx.Response(201, json=STORED),
    ]
    stored = client(scripted(answers, seen)).memories.store(observation="hello")
    assert stored["id"] == "m1"
    assert len(seen) == 2
    keys = {r.headers["idempotency-key"] for r in seen}
    assert len(keys) == 1 and keys != {""}
    assert json.loads(seen[1].content) == {"observation": "hello"}


def test_given_idempotency_key_is_sent() -> None:
    seen: List[httpx.Request] = []
    client(scripted([httpx.Response(201, json=STORED)], seen)).memories.store(observation="x", idempotency_key="my-key-1")
    assert seen[0].headers["idempotency-key"] == "my-key-1"


def test_should_retry_false_is_final_even_for_5xx() -> None:
    seen: List[httpx.Request] = []
    answers = [httpx.Response(500, json={**ERROR_503, "code": "INTERNAL_ERROR", "status": 500}, headers={"x-should-retry": "false"})]
    with pytest.raises(engram.InternalServerError) as caught:
        client(scripted(answers, seen)).memories.list().page()
    assert len(seen) == 1
    assert caught.value.status == 500 and caught.value.code == "INTERNAL_ERROR" and caught.value.request_id == "req_1"


def test_should_retry_true_on_a_4xx_is_retried() -> None:
    seen: List[httpx.Request] = []
    answers = [httpx.Response(409, json={"code": "CONFLICT"}, headers={"x-should-retry": "true", "retry-after": "0"}), httpx.Response(200, json={"ok": True})]
    client(scripted(answers, seen)).memories.get("m1")
    assert len(seen) == 2


def test_without_the_header_5xx_and_429_are_retried_up_to_max_retries() -> None:
    seen: List[httpx.Request] = []
    answers = [httpx.Response(503, json=ERROR_503, headers={"retry-after": "0"})]
    with pytest.raises(engram.InternalServerError):
        client(scripted(answers, seen), max_retries=3).memories.get("m1")
    assert len(seen) == 4
    seen.clear()
    answers = [httpx.Response(429, json={"code": "RATE_LIMITED"}, headers={"retry-after": "0"}), httpx.Response(200, json={"uuid": "m1"})]
    assert client(scripted(answers, seen)).memories.get("m1")["uuid"] == "m1"
    assert len(seen) == 2


def test_without_the_header_a_patch_is_not_retried_after_a_5xx() -> None:
    seen: List[httpx.Request] = []
    with pytest.raises(engram.InternalServerError):
        client(scripted([httpx.Response(502, text="bad gateway")], seen)).memories.update("m1", importance=3)
    assert len(seen) == 1


def test_4xx_is_not_retried_and_maps_to_its_class() -> None:
    cases = [
        (400, engram.BadRequestError),
        (401, engram.AuthenticationError),
        (403, engram.PermissionDeniedError),
        (404, engram.NotFoundError),
        (409, engram.ConflictError),
        (422, engram.UnprocessableEntityError),
    ]
    for status, cls in cases:
        seen: List[httpx.Request] = []
        with pytest.raises(cls) as caught:
            client(scripted([httpx.Response(status, json={"code": "X", "message": "no"})], seen)).memories.get("m1")
        assert len(seen) == 1 and caught.value.status == status and caught.value.message == "no"


def test_a_long_retry_after_is_not_waited_out() -> None:
    seen: List[httpx.Request] = []
    with pytest.raises(engram.RateLimitError):
        client(scripted([httpx.Response(429, json={"code": "RATE_LIMITED"}, headers={"retry-after": "3600"})], seen)).memories.get("m1")
    assert len(seen) == 1


def test_connection_errors_are_retried_then_raised() -> None:
    seen: List[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) < 2:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={"uuid": "m1"})

    assert client(refuse).memories.get("m1")["uuid"] == "m1"
    assert len(seen) == 2

    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(engram.APITimeoutError) as caught:
        client(timeout, max_retries=0).memories.get("m1")
    assert isinstance(caught.value, engram.APIConnectionError) and caught.value.status == 0


def test_user_agent_auth_and_query() -> None:
    seen: List[httpx.Request] = []
    client(scripted([httpx.Response(200, json={"memories": [], "has_more": False})], seen)).memories.list(limit=5, tags="a,b").page()
    request = seen[0]
    assert request.headers["user-agent"] == f"engram-sdk-python/{engram.__version__} (Python {platform.python_version()})"
    assert request.headers["authorization"] == "Bearer eng_test"
    assert request.url.params["limit"] == "5" and request.url.params["tags"] == "a,b"
    assert "offset" not in request.url.params


def test_async_client_retries_with_the_same_key() -> None:
    seen: List[httpx.Request] = []
    answers = [
        httpx.Response(503, json=ERROR_503, headers={"x-should-retry": "true", "retry-after": "0"}),
        httpx.Response(201, json=STORED),
    ]

    async def run() -> None:
        async with engram.AsyncEngram(
            api_key="k", base_url="http://stub", http_client=httpx.AsyncClient(transport=httpx.MockTransport(scripted(answers, seen)))
        ) as c:
            stored = await c.memories.store(observation="x")
            assert stored["uuid"] == "m1"

    asyncio.run(run())
    assert len(seen) == 2 and seen[0].headers["idempotency-key"] == seen[1].headers["idempotency-key"]


def test_missing_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_API_KEY", raising=False)
    with pytest.raises(engram.EngramError):
        engram.Engram()
    monkeypatch.setenv("ENGRAM_API_KEY", "eng_env")
    monkeypatch.setenv("ENGRAM_BASE_URL", "http://from-env/")
    c = engram.Engram()
    assert c.api_key == "eng_env" and c.base_url == "http://from-env"


def test_an_in_progress_idempotent_post_is_retried_and_a_plain_409_is_not() -> None:
    seen: List[httpx.Request] = []
    running = httpx.Response(409, json={"code": "CONFLICT"}, headers={"idempotency-status": "in-progress", "retry-after": "0"})
    assert client(scripted([running, httpx.Response(201, json=STORED)], seen)).memories.store(observation="x")["id"] == "m1"
    assert len(seen) == 2 and seen[0].headers["idempotency-key"] == seen[1].headers["idempotency-key"]
    seen.clear()
    with pytest.raises(engram.ConflictError):
        client(scripted([httpx.Response(409, json={"code": "CONFLICT"})], seen)).memories.store(observation="x")
    assert len(seen) == 1


def test_a_patch_is_retried_after_429() -> None:
    seen: List[httpx.Request] = []
    answers = [httpx.Response(429, json={"code": "RATE_LIMITED"}, headers={"retry-after": "0"}), httpx.Response(200, json={"uuid": "m1"})]
    client(scripted(answers, seen)).memories.update("m1", importance=2)
    assert len(seen) == 2 and all(r.method == "PATCH" for r in seen)
