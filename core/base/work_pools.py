"""Small thread pools of their own for slow work (PDF renders, e-mails), apart from the threads
that serve requests, so that a burst of such work queues here instead of taking those threads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class WorkPool:
    def __init__(self, name: str, threads: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)

    def submit(self, function: Callable[..., T], *arguments: object) -> Future:
        return self._executor.submit(function, *arguments)

    @staticmethod
    async def wait(future: Future) -> T:
        """Wait for a submitted job without holding a thread (from the event loop). A cancelled
        waiter (its client went away) leaves the job running for the others who wait for it."""
        return await asyncio.shield(asyncio.wrap_future(future))

    def run(self, function: Callable[..., T], *arguments: object) -> T:
        """Run on the pool and wait (from a thread)."""
        return self._executor.submit(function, *arguments).result()

    async def run_async(self, function: Callable[..., T], *arguments: object) -> T:
        """Run on the pool and wait without holding a thread (from the event loop)."""
        return await self.wait(self._executor.submit(function, *arguments))
