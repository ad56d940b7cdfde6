"""One executor for units of Core statements, whichever the database.

A unit is an `async def unit(db)` that only awaits `db`: it is written once and runs on PostgreSQL
on asyncpg connections on the event loop (`core.base.raw.Connections`: no thread, no ORM), and on
SQLite on one of the engine's sqlite3 connections in one worker thread, where `db` never suspends
and the unit is driven to its end in that thread (so its statements share the connection, and a
write transaction its turn). Rows come back as named tuples with the values the ORM would read
(UUIDs, aware datetimes, parsed JSON, decimals).

Code on the ORM runs a unit inside its session's transaction with `within(session, unit)`.

A unit that the database dropped the connection of (a restart) is run once more when it is safe to
repeat (`repeatable`), else it fails as `upstream_failed`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anyio
import orjson
from sqlalchemy import JSON, TypeDecorator

from core.base import raw
from core.base.db import UNAVAILABLE, get_engine
from core.base.errors import DomainError, UpstreamFailed

T = TypeVar("T")


class Db(Protocol):
    """What a unit may await: statements, and a block of independent writes."""

    dialect: str  # "postgresql" or "sqlite", for statements written per database

    async def rows(self, statement: Any, parameters: dict) -> list: ...

    async def first(self, statement: Any, parameters: dict) -> Any | None: ...

    async def execute(self, statement: Any, parameters: dict) -> None:
        """A statement whose rows, if any, are not wanted."""
        ...

    async def execute_many(self, statement: Any, rows: list[dict]) -> None:
        """A statement run once per set of parameters (the lines of an invoice), in one round trip."""
        ...

    def reading(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Reads that must see one state: on SQLite one snapshot (a deferred BEGIN, no write lock);
        on PostgreSQL under READ COMMITTED every statement takes its own snapshot in a transaction
        too, so the block adds nothing."""
        ...

    def transaction(self) -> contextlib.AbstractAsyncContextManager[Db]:
        """One transaction, whose statements go through the `Db` it gives: committed when the block
        ends, rolled back when it raises (on PostgreSQL on a connection whose commit is flushed to disk;
        on SQLite a write transaction, in this process's turn). Within one, it is that one."""
        ...

    def independent_writes(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Writes that need no common rollback (a request's count, a credential's last use): on
        PostgreSQL each commits on its own, with no BEGIN and COMMIT round trips; on SQLite they run
        in one short write transaction, in this process's turn."""
        ...


async def run(unit: Callable[..., Awaitable[T]], *arguments: Any, repeatable: bool = False) -> T:
    """`unit(db, *arguments)` on this process's database; a dropped connection repeats it once when
    `repeatable`."""
    if get_engine().dialect.name != "postgresql":
        return await anyio.to_thread.run_sync(_drive, unit, arguments)
    try:
        return await unit(_Postgres(raw.postgres_connections()), *arguments)
    except DROPPED:
        if not repeatable:
            raise UpstreamFailed(UNAVAILABLE) from None
    try:
        return await unit(_Postgres(raw.postgres_connections()), *arguments)
    except DROPPED:
        raise UpstreamFailed(UNAVAILABLE) from None


def _dropped() -> tuple[type[BaseException], ...]:
    import asyncpg
    return (asyncpg.PostgresConnectionError, asyncpg.InterfaceError, asyncpg.AdminShutdownError, ConnectionError,
            asyncio.TimeoutError)


DROPPED = _dropped()


# --- PostgreSQL -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Shape:
    """A statement compiled for asyncpg, how its values are sent and its rows made (asyncpg takes and
    gives `json` as text and knows nothing of our column types)."""

    text: raw.Text
    binds: tuple  # per parameter in order: a function of its value, or None
    row: type
    convert: tuple  # per column: a function of a non-null value, or None

    def arguments(self, parameters: dict) -> list:
        return [value if bind is None else bind(value)
                for bind, value in zip(self.binds, self.text.arguments(parameters), strict=True)]

    def make(self, record) -> tuple:
        return self.row._make([value if convert is None or value is None else convert(value)
                               for convert, value in zip(self.convert, record, strict=True)])


@functools.cache
def _shape(statement: Any) -> _Shape:
    from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect
    dialect = asyncpg_dialect.dialect()
    compiled = statement.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    columns, names = compiled._result_columns, tuple(compiled.positiontup or ())
    return _Shape(raw.Text(str(compiled), names, dict(compiled.params)),
                  tuple(compiled._bind_processors.get(name) for name in names),  # the dialect's (JSON made text)
                  collections.namedtuple("Row", [column[0] for column in columns], rename=True),
                  tuple(_converter(column[3], dialect) for column in columns))


def _converter(column_type, dialect) -> Callable[[Any], Any] | None:
    """The column type's own result processor, after parsing JSON text (asyncpg leaves `json` as text)."""
    base = column_type.impl_instance if isinstance(column_type, TypeDecorator) else column_type
    parse = _parse_json if isinstance(base, JSON) else None
    try:
        process = column_type._cached_result_processor(dialect, None)
    except NotImplementedError:  # an array of records, which SQLAlchemy does not read: as asyncpg gives it
        return parse
    if parse is None or process is None:
        return parse or process
    return lambda value: process(parse(value))


def _parse_json(value):
    return orjson.loads(value) if isinstance(value, str) else value


class _Postgres:
    dialect = "postgresql"

    def __init__(self, connections: raw.Connections) -> None:
        self.connections = connections

    async def rows(self, statement: Any, parameters: dict) -> list:
        shape = _shape(statement)
        return [shape.make(record) for record in
                await self.connections.fetch(shape.text.sql, shape.arguments(parameters))]

    async def first(self, statement: Any, parameters: dict) -> Any | None:
        shape = _shape(statement)
        record = await self.connections.fetchrow(shape.text.sql, shape.arguments(parameters))
        return None if record is None else shape.make(record)

    async def execute(self, statement: Any, parameters: dict) -> None:
        shape = _shape(statement)
        await self.connections.fetch(shape.text.sql, shape.arguments(parameters))

    async def execute_many(self, statement: Any, rows: list[dict]) -> None:
        async with self.transaction() as tx:
            await tx.execute_many(statement, rows)

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        yield  # see Db.reading

    @contextlib.asynccontextmanager
    async def independent_writes(self) -> AsyncIterator[None]:
        yield  # every statement commits on its own

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Db]:
        refused: DomainError | None = None
        try:
            async with raw.postgres_connections(durable=True).transaction() as connection:
                try:
                    yield _InTransaction(connection)
                except DomainError as error:  # an answer, not a fault: the connection stays open
                    refused = error
                    raise raw.Rollback from error
        except raw.Rollback:
            if refused is None:
                raise
            raise refused from None


class _Joined:
    """A `Db` already inside one transaction: every block joins it."""

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        yield

    @contextlib.asynccontextmanager
    async def independent_writes(self) -> AsyncIterator[None]:
        yield

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Db]:
        yield self


class _InTransaction(_Joined):
    """A PostgreSQL transaction's statements, on its one connection."""

    dialect = "postgresql"

    def __init__(self, connection) -> None:
        self.connection = connection

    async def rows(self, statement: Any, parameters: dict) -> list:
        shape = _shape(statement)
        return [shape.make(record) for record in
                await self.connection.fetch(shape.text.sql, *shape.arguments(parameters))]

    async def first(self, statement: Any, parameters: dict) -> Any | None:
        shape = _shape(statement)
        record = await self.connection.fetchrow(shape.text.sql, *shape.arguments(parameters))
        return None if record is None else shape.make(record)

    async def execute(self, statement: Any, parameters: dict) -> None:
        shape = _shape(statement)
        await self.connection.fetch(shape.text.sql, *shape.arguments(parameters))

    async def execute_many(self, statement: Any, rows: list[dict]) -> None:
        shape = _shape(statement)
        await self.connection.executemany(shape.text.sql, [shape.arguments(row) for row in rows])



# --- SQLite ---------------------------------------------------------------------------------------


def _drive(unit: Callable[..., Awaitable[T]], arguments: tuple) -> T:
    """Run `unit` to its end in this thread, on one sqlite3 connection: nothing it awaits suspends."""
    with raw.sqlite_connection() as connection:
        return _to_the_end(unit(_Sqlite(connection), *arguments))


def _to_the_end(coroutine: Awaitable[T]) -> T:
    """A unit's coroutine run to its end at once: its database never suspends it."""
    try:
        coroutine.send(None)  # type: ignore[attr-defined]
    except StopIteration as finished:
        return finished.value
    coroutine.close()  # type: ignore[attr-defined]
    raise RuntimeError("a unit of statements awaited something else than its database")


class _Sqlite:
    dialect = "sqlite"

    def __init__(self, connection) -> None:
        self.connection = connection

    async def rows(self, statement: Any, parameters: dict) -> list:
        return raw.sqlite_text(statement).run(self.connection, parameters)

    async def first(self, statement: Any, parameters: dict) -> Any | None:
        found = raw.sqlite_text(statement).run(self.connection, parameters)
        return found[0] if found else None

    async def execute(self, statement: Any, parameters: dict) -> None:
        raw.sqlite_text(statement).execute(self.connection, parameters)

    async def execute_many(self, statement: Any, rows: list[dict]) -> None:
        text = raw.sqlite_text(statement)
        self.connection.executemany(text.sql, [text.arguments(row) for row in rows])

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        if self.connection.in_transaction:
            yield
            return
        with raw.sqlite_reading(self.connection):
            yield

    @contextlib.asynccontextmanager
    async def independent_writes(self) -> AsyncIterator[None]:
        async with self.transaction():  # one short write transaction
            yield

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Db]:
        if self.connection.in_transaction:
            yield self
            return
        with raw.sqlite_writing(self.connection):
            yield self


# --- Within an ORM session ------------------------------------------------------------------------


def within(session, unit: Callable[..., Awaitable[T]], *arguments: Any) -> T:
    """`unit(db, *arguments)` in this thread on the session's connection, inside its transaction (it
    sees what the session wrote): for code on the ORM that needs what a unit computes."""
    return _to_the_end(unit(_InSession(session.connection()), *arguments))


class _InSession(_Joined):
    """Statements on an ORM session's connection, in its transaction."""

    def __init__(self, connection) -> None:
        self.connection = connection
        self.dialect = connection.dialect.name

    async def rows(self, statement: Any, parameters: dict) -> list:
        return self.connection.execute(statement, parameters).all()

    async def first(self, statement: Any, parameters: dict) -> Any | None:
        return self.connection.execute(statement, parameters).first()

    async def execute(self, statement: Any, parameters: dict) -> None:
        self.connection.execute(statement, parameters)

    async def execute_many(self, statement: Any, rows: list[dict]) -> None:
        self.connection.execute(statement, rows)

