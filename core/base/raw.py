"""The fast read path's access to the database, beside the ORM's.

Core statements are written once with SQLAlchemy (tables and columns stay in one place) and compiled
once per dialect to the text a driver takes. On PostgreSQL they run on an asyncpg pool on the event
loop (no thread hop, no ORM; about a third of psycopg's CPU per statement); on SQLite on a SQLAlchemy
Core connection in a thread, as SQLite has no asynchronous driver.
"""

from __future__ import annotations

import asyncio
import functools
import os
import secrets
from dataclasses import dataclass
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


class _Pool:
    """One asyncpg pool per process and event loop (a test's client may run several loops in turn)."""

    def __init__(self) -> None:
        self.pool = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock: asyncio.Lock | None = None

    async def get(self):
        loop = asyncio.get_running_loop()
        if self.pool is not None and self.loop is loop:
            return self.pool
        if self.lock is None or self.loop is not loop:
            self.lock = asyncio.Lock()
        async with self.lock:
            if self.pool is not None and self.loop is loop:
                return self.pool
            self.terminate()
            import asyncpg
            url = make_url(get_settings().database_url).set(drivername="postgresql")
            # Few connections: requests queue here, in order, rather than as many PostgreSQL backends
            # competing with this process for the CPU (p99 at 16 clients: 15 ms with 2, 25-45 ms with 8).
            size = get_settings().fast_read_connections
            self.pool = await asyncpg.create_pool(url.render_as_string(hide_password=False), min_size=1,
                                                  max_size=size, statement_cache_size=64,
                                                  server_settings={"application_name": application_name(),
                                                                   # What these connections write is the
                                                                   # request's count and a key's last use:
                                                                   # a crash may lose the last instants of
                                                                   # them, never an invoice.
                                                                   "synchronous_commit": "off"},
                                                  reset=_nothing_to_reset)
            self.loop = loop
        return self.pool

    def terminate(self) -> None:
        """Close the pool's connections at once (a pool of a loop that has ended, or at exit)."""
        if self.pool is not None and self.loop is not None and not self.loop.is_closed():
            self.pool.terminate()
        self.pool, self.loop = None, None  # a pool of a closed loop: its sockets went with the loop

    async def close(self) -> None:
        if self.pool is not None and self.loop is asyncio.get_running_loop():
            await self.pool.close()
        self.pool, self.loop = None, None


async def _nothing_to_reset(_connection) -> None:
    """asyncpg resets a connection's session on release with one more round trip (RESET ALL, UNLISTEN…);
    the fast path leaves nothing to reset: no transaction, no setting, no listener."""


_pool = _Pool()


async def postgres_pool():
    return await _pool.get()


async def close_postgres_pool() -> None:
    await _pool.close()


def application_name() -> str:
    """How the pool's connections name themselves to PostgreSQL (pg_stat_activity), per process: the
    pid and a random part, as processes of other hosts or containers on one server may share a pid."""
    return f"invoicing-fast-{os.getpid()}-{_process_mark(os.getpid())}"


@functools.cache
def _process_mark(_pid: int) -> str:
    return secrets.token_hex(4)
