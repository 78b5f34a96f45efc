"""AsyncEngram against the live server: calls, pages with `async for`, errors by class."""
from __future__ import annotations

import asyncio

import pytest

import engram
from conftest import Server


def test_async_store_search_list_and_errors(server: Server, api_key: str) -> None:
    async def run() -> None:
        async with engram.AsyncEngram(api_key=api_key, base_url=server.base_url) as client:
            stored = await asyncio.gather(*(client.memories.store(observation=f"async fact {i}", tags=["async"]) for i in range(5)))
            assert len({s["uuid"] for s in stored}) == 5
            found = await client.memories.search(q="async fact")
            assert found["memories"]
            ids = [m["uuid"] async for m in client.memories.list(limit=2)]
            assert sorted(ids) == sorted(s["uuid"] for s in stored)
            pages = [p async for p in client.memories.list(limit=2).pages()]
            assert [len(p["memories"]) for p in pages] == [2, 2, 1]
            with pytest.raises(engram.NotFoundError):
                await client.memories.get("00000000-0000-7000-8000-000000000000")
            raw = await client.with_raw_response.memories.search(q="async")
            assert raw.status_code == 200 and raw.headers.get("x-request-id")

    asyncio.run(run())
