"""Store, search, list pages, errors by class, raw responses: against the live server."""
from __future__ import annotations

import uuid

import pytest

import engram
from conftest import Server


def test_store_search_get(client: engram.Engram) -> None:
    stored = client.memories.store(observation="The user prefers dark roast coffee", tags=["prefs"])
    memory_id = stored["id"]
    found = client.memories.search(q="coffee preference")
    assert any(r["uuid"] == memory_id for r in found["memories"])
    got = client.memories.get(memory_id)
    assert got["observation"] == "The user prefers dark roast coffee"
    updated = client.memories.update(memory_id, importance=9)
    assert updated["memory"]["importance"] == 9
    client.memories.delete(memory_id)
    with pytest.raises(engram.NotFoundError) as caught:
        client.memories.get(memory_id)
    assert caught.value.status == 404
    assert caught.value.code == "NOT_FOUND"
    assert caught.value.request_id


def test_list_pages_every_item(client: engram.Engram) -> None:
    batch = client.memories.store_many(memories=[{"observation": f"note number {i}"} for i in range(7)])
    assert len(batch["results"]) == 7
    pages = list(client.memories.list(limit=3).pages())
    assert [len(p["memories"]) for p in pages] == [3, 3, 1]
    items = list(client.memories.list(limit=3))
    assert len(items) == 7
    assert len({m["uuid"] for m in items}) == 7
    first = client.memories.list(limit=2, offset=5).page()
    assert len(first["memories"]) == 2


def test_errors_by_class(server: Server, client: engram.Engram) -> None:
    with pytest.raises(engram.BadRequestError) as bad:
        client.memories.store(observation="x", importance=99)
    assert bad.value.status == 400
    assert bad.value.code == "VALIDATION_ERROR"
    assert isinstance(bad.value.body, dict)
    with pytest.raises(engram.AuthenticationError) as unauthorized:
        engram.Engram(api_key="eng_not_a_key", base_url=server.base_url).memories.list().page()
    assert unauthorized.value.status == 401
    assert isinstance(unauthorized.value, engram.EngramError)
    with pytest.raises(engram.NotFoundError):
        client.traces.get("trc_" + uuid.uuid4().hex)


def test_connection_error(server: Server) -> None:
    dead = engram.Engram(api_key="eng_x", base_url="http://127.0.0.1:9", max_retries=0)
    with pytest.raises(engram.APIConnectionError) as caught:
        dead.memories.list().page()
    assert caught.value.status == 0


def test_raw_response_headers(client: engram.Engram) -> None:
    raw = client.with_raw_response.memories.store(observation="headers please")
    assert raw.status_code == 201
    assert raw.headers["x-request-id"]
    assert raw.headers["ratelimit"]
    assert raw.parse()["id"]
