"""The event loop's access to the database, beside the ORM's (`core.base.executor` runs its units on it).

Core statements are written once with SQLAlchemy (tables and columns stay in one place) and compiled
once per dialect to the text a driver takes. On PostgreSQL they run on a few asyncpg connections on
the event loop (no thread hop, no ORM; about a third of psycopg's CPU per statement); on SQLite on a SQLAlchemy
Core connection in a thread, as SQLite has no asynchronous driver.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect
from sqlalchemy.engine import make_url

from config.settings import get_settings


@dataclass(frozen=True)
class Text:
    """A statement as asyncpg takes it: the SQL with `$1`…, its parameter names in order, and the
    values of the literals the statement holds itself."""

    sql: str
    names: tuple[str, ...]
    fixed: dict

    def arguments(self, parameters: dict) -> list:
        return [parameters[name] if name in parameters else self.fixed[name] for name in self.names]


@functools.cache
def postgres_text(statement: Any) -> Text:
    compiled = statement.compile(dialect=asyncpg_dialect.dialect(), compile_kwargs={"render_postcompile": True})
    return Text(str(compiled), tuple(compiled.positiontup or ()), dict(compiled.params))


class Rollback(Exception):
    """Raised in the block of `Connections.transaction` to roll the transaction back."""


class Connections:
    """At most `size` asyncpg connections of one event loop, handed out in the order they are asked
    for. Lighter than asyncpg's pool, whose release costs a task and a shield per request: a
    connection goes back only after a statement that ended cleanly; one that failed or was
    interrupted is closed with the idle ones (a restart of the database ends them all), and the next
    requests open others."""

    def __init__(self, size: int, connect: Callable[[], Awaitable[Any]]) -> None:
        self.size, self.connect = size, connect
        self.idle: list = []
        self.opened = 0
        self.waiting: collections.deque[asyncio.Future] = collections.deque()

    async def fetchrow(self, sql: str, arguments: list):
        return await self._run("fetchrow", sql, arguments)

    async def fetch(self, sql: str, arguments: list) -> list:
        return await self._run("fetch", sql, arguments)

    async def _run(self, method: str, sql: str, arguments: list):
        connection = await self._take()
        try:
            result = await getattr(connection, method)(sql, *arguments)
        except BaseException:
            self._drop_all(connection)
            raise
        self._give_back(connection)
        return result

    @contextlib.asynccontextmanager
    async def transaction(self):
        """One connection for the statements of a transaction: committed when the block ends, rolled
        back when it raises (`Rollback` on purpose; anything else closes the connection, as after a
        failed statement)."""
        connection = await self._take()
        try:
            async with connection.transaction():
                yield connection
        except Rollback:
            self._give_back(connection)
            raise
        except BaseException:
            self._drop_all(connection)
            raise
        self._give_back(connection)

    def _drop_all(self, connection) -> None:
        """Close `connection` and the idle ones: after a failure, maybe a restart of the database."""
        self._drop(connection)
        for idle in self.idle:
            self._drop(idle)
        self.idle = []

    async def _take(self):
        while True:
            if self.idle:
                return self.idle.pop()
            if self.opened < self.size:
                self.opened += 1
                try:
                    return await self.connect()
                except BaseException:
                    self._free_a_place()
                    raise
            waiter = asyncio.get_running_loop().create_future()
            self.waiting.append(waiter)
            try:
                handed = await waiter
            except BaseException:
                if not waiter.done():
                    self.waiting.remove(waiter)
                elif waiter.cancelled():
                    pass  # left in the queue, which skips it
                elif waiter.result() is not None:  # handed a connection as it was cancelled
                    self._give_back(waiter.result())
                else:
                    self._free_a_place()
                raise
            if handed is not None:
                return handed
            # None: a connection was closed, so this waiter may open one

    def _next_waiter(self) -> asyncio.Future | None:
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                return waiter
        return None

    def _give_back(self, connection) -> None:
        waiter = self._next_waiter()
        if waiter is not None:
            waiter.set_result(connection)
        else:
            self.idle.append(connection)

    def _drop(self, connection) -> None:
        connection.terminate()
        self._free_a_place()

    def _free_a_place(self) -> None:
        self.opened -= 1
        waiter = self._next_waiter()
        if waiter is not None:
            waiter.set_result(None)

    def terminate(self) -> None:
        for connection in self.idle:
            connection.terminate()
        self.idle, self.opened = [], 0

    async def close(self) -> None:
        idle, self.idle, self.opened = self.idle, [], 0
        for connection in idle:
            await connection.close()


class _PerLoop:
    """The event loop's connections, per process and loop (a test's client may run several
    loops in turn; connections of a loop that ended went with it)."""

    def __init__(self, *, durable: bool = False) -> None:
        self.connections: Connections | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.durable = durable

    def get(self) -> Connections:
        loop = asyncio.get_running_loop()
        if self.connections is None or self.loop is not loop:
            self.terminate()
            # Few connections: requests queue here, in order, rather than as many PostgreSQL backends
            # competing with this process for the CPU (p99 at 16 clients: 15 ms with 2, 25-45 ms with 8).
            settings = get_settings()
            size = settings.write_connections if self.durable else settings.read_connections
            self.connections = Connections(size,
                                           functools.partial(_connect, durable=self.durable))
            self.loop = loop
        return self.connections

    def terminate(self) -> None:
        if self.connections is not None and self.loop is not None and not self.loop.is_closed():
            self.connections.terminate()
        self.connections, self.loop = None, None

    async def close(self) -> None:
        if self.connections is not None and self.loop is asyncio.get_running_loop():
            await self.connections.close()
        self.connections, self.loop = None, None


async def _connect(*, durable: bool = False):
    import asyncpg
    url = make_url(get_settings().database_url).set(drivername="postgresql")
    connection = await asyncpg.connect(url.render_as_string(hide_password=False), statement_cache_size=64,
                                 server_settings={"application_name": application_name(),
                                                  # What the reads' connections write is the request's
                                                  # count, a key's last use and an idempotency key's
                                                  # claim: a crash may lose the last instants of them.
                                                  # An invoice is written on a durable connection.
                                                  "synchronous_commit": "on" if durable else "off",
                                                  # Every statement here is written for an index (a
                                                  # page of the list: the account's, read backwards).
                                                  # Their plans are made once per connection, maybe
                                                  # while a table is nearly empty, when a full scan and
                                                  # a sort look cheapest; later, without a new ANALYZE,
                                                  # that plan read the whole account for each page.
                                                  "enable_seqscan": "off", "enable_sort": "off",
                                                  # Those penalties make any plan with a sort (a page
                                                  # of receivables) cost past jit_above_cost: its
                                                  # JIT would compile ~125 ms for a 7 ms read.
                                                  "jit": "off",
                                                  "DateStyle": "ISO"})  # what the date codec below reads
    # asyncpg sends date.max and date.min as PostgreSQL's infinity and -infinity, which no date
    # compares equal to: the calendar's ends (9999-12-31, 0001-01-01) must be stored as themselves.
    await connection.set_type_codec("date", schema="pg_catalog", encoder=date.isoformat, decoder=date.fromisoformat,
                                    format="text")
    return connection


_per_loop, _durable_per_loop = _PerLoop(), _PerLoop(durable=True)


def postgres_connections(*, durable: bool = False) -> Connections:
    """The connections of this event loop; `durable`: those whose commits are flushed
    to disk before they return (for what a crash must not lose)."""
    return (_durable_per_loop if durable else _per_loop).get()


async def close_postgres_connections() -> None:
    await _per_loop.close()
    await _durable_per_loop.close()


def application_name() -> str:
    """How the pool's connections name themselves to PostgreSQL (pg_stat_activity), per process: the
    pid and a random part, as processes of other hosts or containers on one server may share a pid."""
    return f"invoicing-fast-{os.getpid()}-{_process_mark(os.getpid())}"


@functools.cache
def _process_mark(_pid: int) -> str:
    return secrets.token_hex(4)


# --- SQLite ---------------------------------------------------------------------------------------
# The same Core statements, compiled once for SQLite and run on the engine's own sqlite3 connections
# without SQLAlchemy's execution layer (~60 µs a statement): values converted both ways by the types'
# own processors, so rows come back as the ORM would read them (UUIDs, aware datetimes, JSON, decimals).


@dataclass(frozen=True)
class SqliteText:
    sql: str
    names: tuple[str, ...]
    fixed: dict
    binds: dict
    results: tuple  # per column, its type's result processor or None
    row: type  # a named tuple of the columns

    def arguments(self, parameters: dict) -> list:
        values = []
        for name in self.names:
            value = parameters[name] if name in parameters else self.fixed[name]
            process = self.binds.get(name)
            values.append(process(value) if process is not None else value)  # JSON's None is `null`
        return values

    def rows(self, cursor) -> list:
        processors, make = self.results, self.row._make
        return [make([value if process is None or value is None else process(value)
                      for process, value in zip(processors, values, strict=True)]) for values in cursor]

    def run(self, connection, parameters: dict) -> list:
        return self.rows(connection.execute(self.sql, self.arguments(parameters)))

    def execute(self, connection, parameters: dict):
        """The statement run, its cursor returned (a write's `rowcount`)."""
        return connection.execute(self.sql, self.arguments(parameters))


@functools.cache
def sqlite_text(statement: Any) -> SqliteText:
    from sqlalchemy.dialects.sqlite import pysqlite
    dialect = pysqlite.dialect()
    compiled = statement.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    columns = compiled._result_columns
    results = tuple(column[3]._cached_result_processor(dialect, None) for column in columns)
    return SqliteText(str(compiled), tuple(compiled.positiontup or ()), dict(compiled.params),
                      dict(compiled._bind_processors), results,
                      collections.namedtuple("Row", [column[0] for column in columns], rename=True))


@contextlib.contextmanager
def sqlite_connection():
    """One of the engine's sqlite3 connections (autocommit unless a transaction is begun)."""
    from core.base.db import get_engine
    pooled = get_engine().raw_connection()
    try:
        yield pooled.dbapi_connection
    finally:
        pooled.close()


@contextlib.contextmanager
def sqlite_reading(connection):
    """One snapshot for the statements of the block (a deferred BEGIN: no write lock)."""
    connection.execute("BEGIN")
    try:
        yield
    finally:
        connection.execute("COMMIT")


@contextlib.contextmanager
def sqlite_writing(connection):
    """The block as one write transaction, after this process's writers before it (`db._WriterTurns`)
    and SQLite's write lock (BEGIN IMMEDIATE): committed when it ends, rolled back when it raises."""
    connection.take_turn()
    try:
        connection.execute("BEGIN IMMEDIATE")
    except BaseException:
        connection.give_turn_back()
        raise
    try:
        yield
    except BaseException:
        connection.rollback()
        raise
    connection.commit()
