"""Engine, sessions and transactions for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

from sqlalchemy import String, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.types import DateTime, TypeDecorator
from sqlmodel import Session, create_engine

from config.settings import get_settings
from core.base import metrics
from core.base.errors import Conflict, DomainError, UpstreamFailed, ValidationFailed

READ_ONLY = "invoicing_read_only"
T = TypeVar("T")


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on both databases (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect):
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


class DecimalText(TypeDecorator):
    """Exact decimals stored as text, so SQLite never turns them into floats."""

    impl = String(64)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        return format(Decimal(value).normalize(), "f")

    def process_result_value(self, value, dialect):
        return None if value is None else Decimal(value)


SQLITE_BUSY_SECONDS = 30


class _WriterTurns(sqlite3.Connection):
    """A SQLite connection whose write transactions take turns with the process's other writers
    on a lock of the engine (`turns`, set per engine) before they take SQLite's. SQLite makes a
    writer that finds the database locked sleep and retry, up to 100 ms at a time, so under
    contention some requests waited over a second while later ones went first; a thread waiting on
    the lock wakes as soon as the writer before it has committed. (Other processes still meet
    SQLite's own lock and its busy timeout.)"""

    turns: threading.Lock
    holds_turn = False

    def take_turn(self) -> None:
        if not self.turns.acquire(timeout=SQLITE_BUSY_SECONDS):
            raise sqlite3.OperationalError("database is locked")
        self.holds_turn = True

    def give_turn_back(self) -> None:
        if self.holds_turn:
            self.holds_turn = False
            self.turns.release()

    def commit(self) -> None:
        try:
            super().commit()
        finally:
            self.give_turn_back()

    def rollback(self) -> None:
        try:
            super().rollback()
        finally:
            self.give_turn_back()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.give_turn_back()


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Let SQLAlchemy, not pysqlite, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_SECONDS * 1000}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        # Take the write lock up front: SQLite cannot upgrade a read transaction to a write one
        # under contention without failing, and writes are short. A read-only session (see
        # `new_session`) begins deferred, so reads never wait for one another or for writers.
        if conn.get_execution_options().get(READ_ONLY):
            conn.exec_driver_sql("BEGIN")
            return
        writer = conn.connection.dbapi_connection
        try:
            writer.take_turn()
        except sqlite3.OperationalError as exc:
            raise OperationalError("BEGIN IMMEDIATE", None, exc) from exc
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            writer.give_turn_back()
            raise


def _count_connections_in_use(engine: Engine) -> Engine:
    """Connections checked out of the pool, for the `invoicing_db_connections_in_use` gauge."""
    event.listen(engine, "checkout", lambda *_: metrics.db_connection(1))
    event.listen(engine, "checkin", lambda *_: metrics.db_connection(-1))
    return engine


def make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        writer = type("WriterTurns", (_WriterTurns,), {"turns": threading.Lock()})
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_SECONDS,
                                                  "factory": writer})
        _configure_sqlite(engine)
        return _count_connections_in_use(engine)
    # No ping on every checkout (a round trip per transaction): connections are recycled before a
    # server or proxy would drop them, and one dropped all the same fails a single statement, after
    # which SQLAlchemy replaces the pool's connections (see `retrying_disconnects`).
    engine = create_engine(url, pool_size=10, max_overflow=20, pool_recycle=1800)
    _configure_postgresql(engine)
    return _count_connections_in_use(engine)


def _configure_postgresql(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # psycopg prepares a statement run five times, and PostgreSQL then plans it once for any
        # parameters: a search for a rare name would keep the plan of a common one (reading the
        # whole account instead of the trigram index). Plan every execution for its parameters.
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SET plan_cache_mode = force_custom_plan")
        dbapi_connection.commit()

    @event.listens_for(engine, "handle_error")
    def _server_ended_the_connection(context):
        # psycopg marks a connection broken only once it has read the end of the socket; the server's
        # last word before it closes (a restart, pg_terminate_backend) may arrive first, as an error
        # of class 57P. SQLAlchemy would then hand the dead connection out again: a disconnect it is.
        if getattr(context.original_exception, "sqlstate", None) in SERVER_ENDED_CONNECTION:
            context.is_disconnect = True


# admin_shutdown, crash_shutdown, cannot_connect_now: the server ends or refuses the session.
SERVER_ENDED_CONNECTION = frozenset({"57P01", "57P02", "57P03"})

_engine: Engine | None = None
_engine_lock = threading.Lock()


def get_engine() -> Engine:
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = make_engine(get_settings().database_url)
        return _engine


def reset_engine() -> None:
    global _engine
    with _engine_lock:
        if _engine is not None:
            _engine.dispose()
        _engine = None


@contextlib.contextmanager
def transaction() -> Iterator[Session]:
    """One unit of work: commits when the block ends, rolls back if it raises."""
    with Session(get_engine(), expire_on_commit=False) as session:
        with session.begin():
            yield session


def retrying_disconnects(unit: Callable[[], T]) -> T:
    """Run `unit` once more when the database dropped its connection (a restart, an idle timeout):
    SQLAlchemy has replaced the pool's connections by then. Only for a unit that is safe to repeat."""
    try:
        return unit()
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        return unit()


# What a database exception can tell a caller; anything else it raises is a fault of ours.
UNAVAILABLE = "The database is unavailable; retry the request."  # an unreachable database, to the caller
DATABASE_FAULTS = (IntegrityError, DataError, OperationalError, InterfaceError, PoolTimeout)


def database_fault(exc: BaseException) -> DomainError | None:
    """The domain error a database exception means to the caller, or None when it means nothing
    to them. Only an unreachable database is `upstream_failed` (a retry may cure it); a value the
    database refuses is the caller's input; a unique clash is a conflict with a concurrent write."""
    # The executor's drivers raise their own classes (core.base.executor: asyncpg, and sqlite3 itself,
    # whose classes SQLAlchemy's wrap): each means what SQLAlchemy's does.
    import asyncpg
    if isinstance(exc, IntegrityError | asyncpg.IntegrityConstraintViolationError | sqlite3.IntegrityError):
        return Conflict("The write clashed with another one; retry the request.")
    if isinstance(exc, DataError | asyncpg.DataError | sqlite3.DataError):
        return ValidationFailed.at("body", "holds a value the database cannot store")
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout | sqlite3.OperationalError | ConnectionError
                  | asyncpg.PostgresConnectionError | asyncpg.InterfaceError | asyncpg.OperatorInterventionError
                  | asyncpg.TransactionRollbackError | asyncpg.InsufficientResourcesError):
        return UpstreamFailed(UNAVAILABLE)
    return None


@functools.lru_cache(maxsize=8)
def _derived(engine: Engine, options: frozenset) -> Engine:
    """`engine` with execution options, made once per engine (making one costs a fifth of a read)."""
    return engine.execution_options(**dict(options))


def engine_for_reads() -> Engine:
    """The engine for sessions that never write. On PostgreSQL its statements run in autocommit:
    under READ COMMITTED every statement takes its own snapshot inside a transaction too, so a
    BEGIN and COMMIT would add two round trips and no consistency. On SQLite a deferred BEGIN
    keeps one snapshot for the whole unit without taking the write lock."""
    engine = get_engine()
    options: dict = {READ_ONLY: True}
    if engine.dialect.name == "postgresql":
        options["isolation_level"] = "AUTOCOMMIT"
    return _derived(engine, frozenset(options.items()))


def keep(session: Session, instance: T) -> T:
    """Hold `instance` while the session lives. The identity map holds objects only while something
    references them: without this, a later `session.get` of one read earlier reads its row again."""
    session.info.setdefault("kept", []).append(instance)
    return instance


def new_session(*, read_only: bool = False) -> Session:
    """A session whose transactions the caller manages (commit as it goes). `read_only`: the caller
    promises not to write (on SQLite its transactions then take no write lock; a flush raises)."""
    if not read_only:
        return Session(get_engine(), expire_on_commit=False)
    return Session(engine_for_reads(), expire_on_commit=False)


@event.listens_for(Session, "before_flush")
def _refuse_flush(session, _context, _instances) -> None:
    if session.bind is None or not session.bind.get_execution_options().get(READ_ONLY):
        return
    if session.new or session.dirty or session.deleted:
        raise RuntimeError("a read-only session was asked to write")
