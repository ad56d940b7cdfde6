"""Lists that fetch their pages as they are iterated (cursor pagination, newest first)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Generic, TypeVar

from invoicing_client.models import InvoicingObject, Page

T = TypeVar("T", bound=InvoicingObject)


class Pager(Generic[T]):
    """Every object of a list, page after page: `for invoice in client.invoices.list(): …`.
    `pages()` gives the pages themselves; `limit` of the list is the page size."""

    def __init__(self, fetch: Callable[[str | None], Page[T]]) -> None:
        self._fetch = fetch
        self._items: Iterator[T] | None = None

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._items is None:
            self._items = (item for page in self.pages() for item in page.data)
        return next(self._items)

    def pages(self) -> Iterator[Page[T]]:
        cursor: str | None = None
        while True:
            page = self._fetch(cursor)
            yield page
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def to_list(self) -> list[T]:
        return list(self)


class AsyncPager(Generic[T]):
    """Every object of a list, page after page: `async for invoice in client.invoices.list(): …`."""

    def __init__(self, fetch: Callable[[str | None], Awaitable[Page[T]]]) -> None:
        self._fetch = fetch
        self._items: AsyncIterator[T] | None = None

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        if self._items is None:
            self._items = self._every()
        return await self._items.__anext__()

    async def _every(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.data:
                yield item

    async def pages(self) -> AsyncIterator[Page[T]]:
        cursor: str | None = None
        while True:
            page = await self._fetch(cursor)
            yield page
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def to_list(self) -> list[T]:
        return [item async for item in self]
