"""The change feed: what changed in an account's invoices, for the live MCP streams of every process.

Every invoice event notes its invoice's URI (`invoice://in_…`) and its kind in `change_feed`, in the
change's own transaction (`note`, called by `core.billing.events.write`). A process follows the
feed from where it joined (`Follower`): on PostgreSQL the row's transaction also sends
`NOTIFY invoicing_changes, '<id>'`, delivered at commit, which wakes the follower's own connection;
on SQLite, whose writers commit one at a time in id order, the follower reads the rows past the last
id it saw every `POLL_SECONDS`. Rows are kept `KEEP` (the worker's clean-up purges older ones).

The open listen streams are counted here too (`mcp_listen_streams`, per credential across processes):
a stream is taken only while fewer than the limit are alive (`open_stream`), the process holding it
refreshes it (`refresh_streams`), and one not refreshed for `STALE_AFTER` no longer counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import BigInteger, String, bindparam, cast, delete, func, insert, select, update
from sqlmodel import Session

from config.settings import get_settings
from core.base import executor, raw
from core.base.clock import now
from core.base.db import get_engine
from core.base.executor import Db
from core.models import ChangeFeedEntry, McpListenStream

log = logging.getLogger("invoicing.change_feed")

CHANNEL = "invoicing_changes"
KEEP = timedelta(minutes=5)
POLL_SECONDS = 0.2  # SQLite: how often a follower looks for new rows
BATCH = 500  # rows read at once
STALE_AFTER = timedelta(seconds=30)  # a listen stream not refreshed for this long is gone

_FEED = ChangeFeedEntry.__table__
_STREAMS = McpListenStream.__table__


@dataclass(frozen=True)
class Change:
    id: int
    account_id: uuid.UUID
    uri: str  # the resource that changed, such as invoice://in_…
    kind: str  # what changed it: the invoice event's type


# --- writing ---------------------------------------------------------------------------------------

_VALUES = {"account_id": bindparam("account_id"), "uri": bindparam("uri", type_=String()),
           "kind": bindparam("kind", type_=String()), "created_at": bindparam("created_at")}
NOTE = insert(_FEED).values(**_VALUES)
_NOTED = insert(_FEED).values(**_VALUES).returning(_FEED.c.id).cte("noted")
# PostgreSQL: the row and its NOTIFY in one statement; the notification leaves at commit, if it commits.
NOTE_AND_NOTIFY = select(func.pg_notify(CHANNEL, cast(_NOTED.c.id, String())).label("notified")).select_from(_NOTED)


async def note(db: Db, account_id: uuid.UUID, uri: str, kind: str) -> None:
    """Note that `uri` of `account_id` changed (`kind`), in the transaction `db` is in: a unit of
    `core.base.executor`. From code on the ORM: `executor.within(session, note, …)`."""
    values = {"account_id": account_id, "uri": uri, "kind": kind, "created_at": now()}
    await db.execute(NOTE_AND_NOTIFY if db.dialect == "postgresql" else NOTE, values)


def purge(session: Session) -> None:
    """Forget changes older than `KEEP` (the newest row stays, so that SQLite never hands its id out
    again), and listen streams no process refreshes any more."""
    newest = select(func.max(ChangeFeedEntry.id)).scalar_subquery()
    session.execute(delete(ChangeFeedEntry).where(ChangeFeedEntry.created_at < now() - KEEP,
                                                  ChangeFeedEntry.id < newest))
    session.execute(delete(McpListenStream).where(McpListenStream.heartbeat_at < now() - STALE_AFTER))


# --- following -------------------------------------------------------------------------------------

LATEST = select(func.coalesce(func.max(_FEED.c.id), 0).label("latest"))
SINCE = (select(_FEED.c.id, _FEED.c.account_id, _FEED.c.uri, _FEED.c.kind)
         .where(_FEED.c.id > bindparam("after", type_=BigInteger())).order_by(_FEED.c.id).limit(BATCH))
PG_SINCE = "SELECT id, account_id, uri, kind FROM change_feed WHERE id > $1 ORDER BY id LIMIT $2"
PG_BY_ID = "SELECT id, account_id, uri, kind FROM change_feed WHERE id = ANY($1::bigint[]) ORDER BY id"


async def _latest(db: Db) -> int:
    return (await db.first(LATEST, {})).latest


async def _since(db: Db, after: int) -> list[Change]:
    return [Change(row.id, row.account_id, row.uri, row.kind) for row in await db.rows(SINCE, {"after": after})]


def follower() -> Follower:
    """A follower for this process's database, from now on (`start` positions it)."""
    return _PostgresFollower() if get_engine().dialect.name == "postgresql" else _PollingFollower()


class Follower:
    """Reads the changes committed after it started, in batches."""

    async def start(self) -> None:
        raise NotImplementedError

    async def changes(self, timeout: float) -> list[Change]:
        """The changes since the last batch, waiting at most `timeout` seconds for some ([] then)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Stop following."""


class _PollingFollower(Follower):
    """SQLite: the rows past the last id seen, read every POLL_SECONDS (one writer commits at a time,
    in id order, so no row commits behind one already read)."""

    def __init__(self) -> None:
        self.last = 0

    async def start(self) -> None:
        self.last = await executor.run(_latest, repeatable=True)

    async def changes(self, timeout: float) -> list[Change]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            found = await executor.run(_since, self.last, repeatable=True)
            if found:
                self.last = found[-1].id
                return found
            left = deadline - loop.time()
            if left <= 0:
                return []
            await asyncio.sleep(min(POLL_SECONDS, left))


class _PostgresFollower(Follower):
    """PostgreSQL: a connection of its own LISTENs; each notification names a row that has committed,
    read by id (ids are taken before commit, so rows may commit out of id order). After the
    connection is lost it reconnects and reads what it missed since the last id it saw."""

    def __init__(self) -> None:
        self.connection: Any = None
        self.last = 0
        self.notified: set[int] = set()
        self.wake = asyncio.Event()

    async def start(self) -> None:
        await self._connect()
        self.last = await self.connection.fetchval("SELECT coalesce(max(id), 0) FROM change_feed")

    async def _connect(self) -> None:
        import asyncpg
        from sqlalchemy.engine import make_url
        url = make_url(get_settings().database_url).set(drivername="postgresql")
        self.connection = await asyncpg.connect(url.render_as_string(hide_password=False), server_settings={
            "application_name": raw.application_name().replace("-fast-", "-feed-")})
        await self.connection.add_listener(CHANNEL, self._notify)
        self.connection.add_termination_listener(lambda _connection: self.wake.set())

    def _notify(self, _connection, _pid, _channel, payload: str) -> None:
        with contextlib.suppress(ValueError):
            self.notified.add(int(payload))
        self.wake.set()

    async def changes(self, timeout: float) -> list[Change]:
        if self.connection is None or self.connection.is_closed():
            await self._reconnect()
            rows = await self.connection.fetch(PG_SINCE, self.last, BATCH)  # what was missed meanwhile
        else:
            if not self.notified:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), timeout)
            self.wake.clear()
            if not self.notified:
                return []
            wanted, self.notified = sorted(self.notified), set()
            rows = await self.connection.fetch(PG_BY_ID, wanted)
        found = [Change(row["id"], uuid.UUID(int=row["account_id"].int), row["uri"], row["kind"]) for row in rows]
        if found:
            self.last = max(self.last, found[-1].id)
        return found

    async def _reconnect(self) -> None:
        await self.close()
        self.notified = set()
        await self._connect()

    async def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None and not connection.is_closed():
            try:
                await connection.close(timeout=2)
            except Exception:  # closing a connection that failed: nothing to keep
                connection.terminate()


# --- listen streams --------------------------------------------------------------------------------

LOCK_BINDING = select(func.pg_advisory_xact_lock(func.hashtext(bindparam("binding", type_=String()))).label("locked"))
FORGET_STALE = delete(_STREAMS).where(_STREAMS.c.binding == bindparam("binding", type_=String()),
                                      _STREAMS.c.heartbeat_at < bindparam("since"))
ALIVE = select(func.count().label("alive")).where(_STREAMS.c.binding == bindparam("binding", type_=String()),
                                                  _STREAMS.c.heartbeat_at >= bindparam("since"))
TAKE = insert(_STREAMS).values(id=bindparam("id", type_=String()), binding=bindparam("binding", type_=String()),
                               heartbeat_at=bindparam("at"))
REFRESH = update(_STREAMS).where(_STREAMS.c.id == bindparam("stream", type_=String())).values(
    heartbeat_at=bindparam("at"))
RELEASE = delete(_STREAMS).where(_STREAMS.c.id == bindparam("stream", type_=String()))


async def open_stream(db: Db, binding: str, limit: int) -> str | None:
    """Take a listen stream for the credential `binding`: its id, or None when `limit` are open (in
    any process). One at a time per credential (on PostgreSQL under an advisory lock)."""
    at = now()
    async with db.transaction() as tx:
        if tx.dialect == "postgresql":
            await tx.execute(LOCK_BINDING, {"binding": binding})
        await tx.execute(FORGET_STALE, {"binding": binding, "since": at - STALE_AFTER})
        if (await tx.first(ALIVE, {"binding": binding, "since": at - STALE_AFTER})).alive >= limit:
            return None
        stream_id = secrets.token_hex(16)
        await tx.execute(TAKE, {"id": stream_id, "binding": binding, "at": at})
    return stream_id


async def refresh_streams(db: Db, stream_ids: list[str]) -> None:
    """The streams this process holds are alive."""
    if stream_ids:
        at = now()
        async with db.transaction() as tx:
            await tx.execute_many(REFRESH, [{"stream": stream_id, "at": at} for stream_id in stream_ids])


async def close_stream(db: Db, stream_id: str) -> None:
    async with db.transaction() as tx:
        await tx.execute(RELEASE, {"stream": stream_id})
