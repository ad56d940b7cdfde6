"""Engine, sessions and transactions for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from sqlalchemy import String, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DataError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.types import DateTime, TypeDecorator
from sqlmodel import Session, create_engine

from config.settings import get_settings
from core.base.errors import Conflict, DomainError, UpstreamFailed, ValidationFailed

READ_ONLY = "invoicing_read_only"


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


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Let SQLAlchemy, not pysqlite, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        # Take the write lock up front: SQLite cannot upgrade a read transaction to a write one
        # under contention without failing, and writes are short. A read-only session (see
        # `read_only_session`) begins deferred, so reads never wait for one another or for writers.
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")


def make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        _configure_sqlite(engine)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


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


# What a database exception can tell a caller; anything else it raises is a fault of ours.
DATABASE_FAULTS = (IntegrityError, DataError, OperationalError, InterfaceError, PoolTimeout)


def database_fault(exc: BaseException) -> DomainError | None:
    """The domain error a database exception means to the caller, or None when it means nothing
    to them. Only an unreachable database is `upstream_failed` (a retry may cure it); a value the
    database refuses is the caller's input; a unique clash is a conflict with a concurrent write."""
    if isinstance(exc, IntegrityError):
        return Conflict("The write clashed with another one; retry the request.")
    if isinstance(exc, DataError):
        return ValidationFailed.at("body", "holds a value the database cannot store")
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout):
        return UpstreamFailed("The database is unavailable; retry the request.")
    return None


def new_session(*, read_only: bool = False) -> Session:
    """A session whose transactions the caller manages (commit as it goes). `read_only`: the caller
    promises not to write (on SQLite its transactions then take no write lock; a flush raises)."""
    if not read_only:
        return Session(get_engine(), expire_on_commit=False)
    session = Session(get_engine().execution_options(**{READ_ONLY: True}), expire_on_commit=False)
    event.listen(session, "before_flush", _refuse_flush)
    return session


def _refuse_flush(session, _context, _instances) -> None:
    if session.new or session.dirty or session.deleted:
        raise RuntimeError("a read-only session was asked to write")
