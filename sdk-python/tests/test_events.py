"""events.stream(): SSE parsing, resume with Last-Event-ID on reconnect, and the live stream."""
from __future__ import annotations

import asyncio
import itertools
import json
import signal
from types import FrameType
from typing import Iterator, List, Optional

import httpx
import pytest

import engram
from conftest import Server


def event_text(seq: int, kind: str = "memory.created") -> str:
    body = {"id": f"evt_{seq}", "type": kind, "created_at": "2026-01-01T00:00:00Z", "tenant_id": "t", "data": {"n": seq}}
    return f"id: {seq}\nevent: {kind}\ndata: {json.dumps(body)}\n\n"


def dropping_server(seen: List[httpx.Request]) -> httpx.MockTransport:
    """Each connection sends the next event after Last-Event-ID (and a keepalive), then closes."""

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        after = int(request.headers.get("last-event-id", "0"))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=": keepalive\n\n" + event_text(after + 1))

    return httpx.MockTransport(handle)


def test_stream_resumes_with_last_event_id() -> None:
    seen: List[httpx.Request] = []
    c = engram.Engram(api_key="k", base_url="http://stub", http_client=httpx.Client(transport=dropping_server(seen)))
    events = list(itertools.islice(c.events.stream(types="memory.created"), 3))
    assert [e["id"] for e in events] == ["1", "2", "3"]
    assert events[0]["type"] == "memory.created" and events[0]["data"]["data"] == {"n": 1}
    assert "last-event-id" not in seen[0].headers
    assert [r.headers.get("last-event-id") for r in seen[1:3]] == ["1", "2"]
    assert seen[0].url.params["types"] == "memory.created"
    assert seen[0].headers["accept"] == "text/event-stream"


def test_stream_starts_after_a_given_id_and_stops_on_a_final_error() -> None:
    seen: List[httpx.Request] = []
    c = engram.Engram(api_key="k", base_url="http://stub", http_client=httpx.Client(transport=dropping_server(seen)))
    first = next(iter(c.events.stream(last_event_id="41")))
    assert first["id"] == "42" and seen[0].headers["last-event-id"] == "41"

    def unauthorized(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"code": "UNAUTHORIZED", "message": "bad key"})

    c = engram.Engram(api_key="k", base_url="http://stub", http_client=httpx.Client(transport=httpx.MockTransport(unauthorized)))
    with pytest.raises(engram.AuthenticationError):
        next(iter(c.events.stream()))


def test_async_stream_resumes() -> None:
    seen: List[httpx.Request] = []

    async def run() -> List[str]:
        c = engram.AsyncEngram(api_key="k", base_url="http://stub", http_client=httpx.AsyncClient(transport=dropping_server(seen)))
        ids: List[str] = []
        async for event in c.events.stream():
            ids.append(event["id"])
            if len(ids) == 3:
                break
        return ids

    assert asyncio.run(run()) == ["1", "2", "3"]
    assert [r.headers.get("last-event-id") for r in seen[1:3]] == ["1", "2"]


@pytest.fixture()
def deadline() -> Iterator[None]:
    """A live stream that never sends would block forever: fail the test instead."""

    def expire(signum: int, frame: Optional[FrameType]) -> None:
        raise TimeoutError("no event arrived")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_live_stream_and_resume(server: Server, client: engram.Engram, deadline: None) -> None:
    for i in range(3):
        client.memories.store(observation=f"event source {i}")
    events = list(itertools.islice(client.events.stream(types="memory.created", last_event_id="0"), 3))
    assert [e["type"] for e in events] == ["memory.created"] * 3
    assert [int(e["id"]) for e in events] == sorted(int(e["id"]) for e in events)
    resumed = next(iter(client.events.stream(types="memory.created", last_event_id=events[0]["id"])))
    assert resumed["id"] == events[1]["id"]
    assert resumed["data"]["data"] == events[1]["data"]["data"]
