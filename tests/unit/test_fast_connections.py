"""The fast read path's connections (`core.base.raw.Connections`): a bound on how many are open,
requests served in the order they asked, and no place lost to a failure or a cancellation."""

from __future__ import annotations

import asyncio

import pytest

from core.base.raw import Connections


class FakeConnection:
    def __init__(self, number: int, gate: asyncio.Event | None = None, fail: bool = False) -> None:
        self.number, self.gate, self.fail, self.closed = number, gate, fail, False

    async def fetchrow(self, sql, *arguments):
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise ConnectionError("the server closed the connection")
        return (self.number, sql)

    def terminate(self) -> None:
        self.closed = True


def pool(size: int, **kwargs) -> tuple[Connections, list[FakeConnection]]:
    made: list[FakeConnection] = []

    async def connect():
        made.append(FakeConnection(len(made) + 1, **kwargs))
        return made[-1]
    return Connections(size, connect), made


def run(coroutine):
    return asyncio.run(coroutine)


def test_no_more_than_size_connections_are_opened_and_waiters_go_in_order():
    async def scenario():
        gate = asyncio.Event()
        connections, made = pool(2, gate=gate)
        order: list[int] = []

        async def request(n: int):
            await connections.fetchrow("SELECT", [])
            order.append(n)
        tasks = [asyncio.create_task(request(n)) for n in range(6)]
        await asyncio.sleep(0)
        assert len(made) == 2 and len(connections.waiting) == 4
        gate.set()
        await asyncio.gather(*tasks)
        assert len(made) == 2 and order == sorted(order[:2]) + [2, 3, 4, 5]
        assert len(connections.idle) == 2
    run(scenario())


def test_a_failed_statement_closes_its_connection_and_the_idle_ones():
    async def scenario():
        gate = asyncio.Event()
        connections, made = pool(2, gate=gate)
        both = asyncio.gather(connections.fetchrow("A", []), connections.fetchrow("B", []))
        await asyncio.sleep(0)
        gate.set()
        await both
        assert len(connections.idle) == 2
        made[0].fail = made[1].fail = True
        with pytest.raises(ConnectionError):
            await connections.fetchrow("C", [])
        assert all(connection.closed for connection in made) and connections.idle == []
        assert connections.opened == 0
        assert (await connections.fetchrow("D", []))[0] == 3  # a new one
    run(scenario())


def test_a_failure_hands_its_place_to_a_waiter():
    async def scenario():
        gate = asyncio.Event()
        connections, made = pool(1, gate=gate, fail=True)
        first = asyncio.create_task(connections.fetchrow("A", []))
        second = asyncio.create_task(connections.fetchrow("B", []))
        await asyncio.sleep(0)
        gate.set()
        with pytest.raises(ConnectionError):
            await first
        with pytest.raises(ConnectionError):
            await second  # it opened a connection of its own in the freed place
        assert len(made) == 2 and connections.opened == 0
    run(scenario())


def test_a_waiter_cancelled_keeps_no_place():
    async def scenario():
        gate = asyncio.Event()
        connections, made = pool(1, gate=gate)
        holder = asyncio.create_task(connections.fetchrow("A", []))
        waiter = asyncio.create_task(connections.fetchrow("B", []))
        await asyncio.sleep(0)
        waiter.cancel()
        gate.set()
        await holder
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert (await connections.fetchrow("C", []))[0] == 1  # the one connection, handed on
        assert len(made) == 1 and connections.opened == 1
    run(scenario())


def test_a_request_cancelled_during_its_statement_closes_the_connection():
    async def scenario():
        gate = asyncio.Event()
        connections, made = pool(1, gate=gate)
        running = asyncio.create_task(connections.fetchrow("A", []))
        await asyncio.sleep(0)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert made[0].closed and connections.opened == 0
        gate.set()
        assert (await connections.fetchrow("B", []))[0] == 2
    run(scenario())


def test_a_connection_that_cannot_be_opened_frees_its_place():
    async def scenario():
        attempts = []

        async def refused():
            attempts.append(1)
            raise OSError("connection refused")
        connections = Connections(1, refused)
        for _ in range(3):
            with pytest.raises(OSError):
                await connections.fetchrow("A", [])
        assert len(attempts) == 3 and connections.opened == 0
    run(scenario())
