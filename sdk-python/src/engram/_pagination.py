"""List operations as iterators: the API pages with limit/offset (docs/architecture.md#pages-and-totals)."""
from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Callable, Generic, Iterator, List, Mapping, Optional, TypeVar, cast

PageT = TypeVar("PageT")
ItemT = TypeVar("ItemT")


def _next_offset(page: Mapping[str, Any], key: str, offset: Optional[int]) -> Optional[int]:
    """Where the next page starts, or None at the end: `has_more: false`, the total reached, or an empty page."""
    items = page.get(key) or []
    start = page.get("offset")
    nxt = (start if isinstance(start, int) else (offset or 0)) + len(items)
    total = page.get("total", page.get("total_count"))
    has_more = page.get("has_more")
    if not items or has_more is False or (has_more is None and isinstance(total, int) and nxt >= total):
        return None
    return nxt


class SyncPaginator(Generic[PageT, ItemT]):
    """Iterate it for every item across pages; `pages()` for whole pages; `page()` for the one the query names."""

    def __init__(self, fetch: Callable[[Optional[int]], PageT], key: str, start: Optional[int]) -> None:
        self._fetch = fetch
        self._key = key
        self._start = start

    def page(self) -> PageT:
        return self._fetch(self._start)

    def pages(self) -> Iterator[PageT]:
        offset = self._start
        while True:
            page = self._fetch(offset)
            yield page
            nxt = _next_offset(cast(Mapping[str, Any], page), self._key, offset)
            if nxt is None:
                return
            offset = nxt

    def __iter__(self) -> Iterator[ItemT]:
        for page in self.pages():
            yield from cast(List[ItemT], cast(Mapping[str, Any], page).get(self._key) or [])

    def to_list(self) -> List[ItemT]:
        """Every item, collected (mind large lists)."""
        return list(self)


class AsyncPaginator(Generic[PageT, ItemT]):
    """`async for item in ...` for every item across pages; `pages()`; `await page()`."""

    def __init__(self, fetch: Callable[[Optional[int]], Awaitable[PageT]], key: str, start: Optional[int]) -> None:
        self._fetch = fetch
        self._key = key
        self._start = start

    async def page(self) -> PageT:
        return await self._fetch(self._start)

    async def pages(self) -> AsyncIterator[PageT]:
        offset = self._start
        while True:
            page = await self._fetch(offset)
            yield page
            nxt = _next_offset(cast(Mapping[str, Any], page), self._key, offset)
            if nxt is None:
                return
            offset = nxt

    async def __aiter__(self) -> AsyncIterator[ItemT]:
        async for page in self.pages():
            for item in cast(List[ItemT], cast(Mapping[str, Any], page).get(self._key) or []):
                yield item

    async def to_list(self) -> List[ItemT]:
        return [item async for item in self]
