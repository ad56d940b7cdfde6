"""Limits that hold in every span of their length, counted in the database so every process shares them.

Two algorithms, chosen by the size of the limit (the reasons are in docs/decisions.md):

- **Sliding log** (up to `EXACT_MAX` requests per window: every limit at its default, the API's
  120 a minute included): the times of the last `requests` counted events, in a ring in one row. A
  request is allowed when the oldest of them has left the last `window_seconds`, so no span of that
  length ever holds more than `requests`, wherever the clock's minutes and hours begin.
- **Sliding-window counter** (a limit an operator raised above `EXACT_MAX`): one row per bucket and
  clock-aligned window; a request is allowed while the previous window's count, weighted by how much
  of it still overlaps the last `window_seconds`, plus the current window's stays within the limit.
  Its storage does not grow with the limit; a burst straddling a boundary is refused, but it assumes
  the previous window's requests were spread evenly.

Either way one upsert decides, counts and returns what the headers need, so the request path keeps
one statement. Refused requests are not counted, so `Retry-After` and `RateLimit-Reset` stay true:
they name the moment the next request will be allowed if the caller sends nothing before.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Text,
    and_,
    bindparam,
    case,
    cast,
    delete,
    func,
    literal,
    literal_column,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from config.settings import get_settings
from core.base import metrics
from core.base.errors import RateLimited
from core.base.executor import Db
from core.models import RateLimitLog, RateLimitWindow


@dataclass(frozen=True)
class Limit:
    name: str
    requests: int
    window_seconds: int

    @property
    def window_ms(self) -> int:
        return self.window_seconds * 1000

    @property
    def exact(self) -> bool:
        return self.requests <= EXACT_MAX


EXACT_MAX = 1000  # the largest limit kept as a sliding log (a ring of 13 bytes per request in one row)


API_REQUESTS = "api"


def api_requests() -> Limit:
    """Every API request of one credential (REST and MCP together)."""
    return Limit(API_REQUESTS, get_settings().rate_limit_requests, 60)


def sends_per_key() -> Limit:
    return Limit("send", get_settings().rate_limit_sends, 3600)


def emails_per_account() -> Limit:
    return Limit("email", get_settings().rate_limit_emails, 3600)


@dataclass(frozen=True)
class Usage:
    limit: int
    remaining: int
    reset: int  # Unix seconds: when a request beyond the remaining ones will be allowed
    exceeded: bool  # this request (hit) or the next one (peek) is refused
    window_seconds: int
    name: str = ""  # the limit's, for the refusals metric
    retry_after: int = 1  # whole seconds from now until `reset`, at least 1

    def refused(self) -> None:
        """Note in the metrics that a request was refused by this limit (the caller refuses it)."""
        metrics.rate_limited(self.name or "other")

    def error(self, what: str) -> RateLimited:
        """The refusal of one more `what` (`requests`, `invoice e-mails per account`, …)."""
        self.refused()
        return RateLimited(f"Rate limit exceeded: {self.limit} {what} per {_duration(self.window_seconds)}. "
                           f"Retry after {self.retry_after} seconds.", retry_after=self.retry_after, usage=self)

    def raise_if_exceeded(self, what: str) -> None:
        if self.exceeded:
            raise self.error(what)


# Where a caller stands when no request limit applies to it (a person signed in to the dashboard).
NOT_LIMITED = Usage(limit=0, remaining=0, reset=0, exceeded=False, window_seconds=0)


def _duration(seconds: int) -> str:
    if seconds % 3600 == 0:
        return "hour" if seconds == 3600 else f"{seconds // 3600} hours"
    return f"{seconds // 60} minutes" if seconds % 60 == 0 and seconds > 60 else f"{seconds} seconds"


def _bucket(limit: Limit, subject: str) -> str:
    return bucket_prefix(limit.name) + subject


def bucket_prefix(limit_name: str) -> str:
    """What precedes the subject in the buckets of the limit named so (for a statement that names
    the subject itself)."""
    return f"{limit_name}:"


def clock() -> float:
    """Seconds since the epoch as the limiter reads them. Tests drive this function, never the
    process's `time.time`, which the database pool reads too (a connection made in a test's future
    would outlive every invalidation of the pool)."""
    return time.time()


def _now_ms(now: float | None) -> int:
    return math.floor((clock() if now is None else now) * 1000)


def _usage(limit: Limit, now_ms: int, *, remaining: int, next_allowed_ms: int, exceeded: bool) -> Usage:
    return Usage(limit=limit.requests, remaining=remaining, reset=math.ceil(next_allowed_ms / 1000),
                 exceeded=exceeded, window_seconds=limit.window_seconds, name=limit.name,
                 retry_after=max(1, math.ceil((next_allowed_ms - now_ms) / 1000)))


def hit(session: Session, limit: Limit, subject: str, *, now: float | None = None) -> Usage:
    """Count one request for `subject` unless the limit refuses it; report the usage (the caller commits)."""
    count = counting(_dialect(session), limit, subject, now=now)
    return count.usage(tuple(session.execute(count.statement, count.parameters).one()))


@dataclass(frozen=True)
class Counting:
    """One request's count as a statement, its parameters and the reading of the row it returns,
    so that any driver can run it (the ORM session, or the executor's connections)."""

    statement: object  # a Core statement, made once per dialect
    parameters: dict
    usage: Callable[[tuple], Usage]


def counting(dialect: str, limit: Limit, subject: str, *, now: float | None = None, source=None) -> Counting:
    """The count of one request for `subject` on a database of `dialect` (`postgresql`, `sqlite`).
    On PostgreSQL, `source` (a selectable made once, with a `bucket` column holding `bucket_of(limit,
    subject)`) makes the statement count a request per row of it: none when a check in it failed."""
    bucket, now_ms = _bucket(limit, subject), _now_ms(now)
    if limit.exact:
        stamp = _stamp(now_ms)
        parameters = {"bucket": bucket, "size": limit.requests, "ring_length": limit.requests * WIDTH, "stamp": stamp,
                      "cutoff": _stamp(now_ms - limit.window_ms), "fresh_ring": stamp + _stamp(0) * (limit.requests - 1),
                      "expires_at": now_ms + limit.window_ms}
        return Counting(_log_statement(dialect, source), parameters,
                        lambda row: _log_usage(limit, now_ms, _stamps(row[0]), exceeded=not row[1]))
    window = _Window.at(limit, now_ms)
    return Counting(_counter_statement(dialect, source), _counter_parameters(limit, bucket, window),
                    lambda row: _counter_usage(limit, now_ms, window, row[2], row[0], exceeded=not row[1]))


@functools.cache
def gated(counting_statement, gate, columns: tuple[str, ...], touch=None) -> tuple[Any, int]:
    """PostgreSQL, one statement: the request counted for the `bucket` of each row of `gate` (a CTE of
    a credential that passed its checks; the count's `source`), `touch(gate, counted)` (a
    data-modifying statement, or None) run with it, and the gate's `columns`. Its row: the count's
    columns (how many: the second value), then `columns`; no row when the gate had none."""
    counted = counting_statement.cte("counted")
    statement = select(*counted.c, *(gate.c[name] for name in columns)).select_from(gate.join(counted, true()))
    if touch is not None:
        statement = statement.add_cte(touch(gate, counted).cte("touched"))
    return statement, len(counted.c)


async def count_through(db: Db, gate, columns: tuple[str, ...], touch, parameters: dict) -> tuple[tuple, Usage] | None:
    """PostgreSQL: a request counted against the request limit through `gate` (see `gated`), in one
    statement with the gate's own `parameters`: the gate's `columns` and the request's standing, or
    None when the gate had no row (nothing counted)."""
    count = counting("postgresql", api_requests(), "", source=gate)
    statement, width = gated(count.statement, gate, columns, touch)
    row = await db.first(statement, {**count.parameters, **parameters})
    if row is None:
        return None
    values = tuple(row)
    return values[width:], count.usage(values[:width])


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


def peek(session: Session, limit: Limit, subject: str, *, now: float | None = None) -> Usage:
    """Where `subject` stands, without counting; `exceeded` says whether one more would be refused."""
    standing = peeking(limit, subject, now=now)
    return standing.usage(session.execute(standing.statement, standing.parameters).all())


async def count_on(db: Db, limit: Limit, subject: str) -> Usage:
    """`hit` as a unit of `core.base.executor`."""
    count = counting(db.dialect, limit, subject)
    return count.usage(tuple(await db.first(count.statement, count.parameters)))


async def peek_on(db: Db, limit: Limit, subject: str) -> Usage:
    """`peek` as a unit of `core.base.executor`."""
    standing = peeking(limit, subject)
    return standing.usage(await db.rows(standing.statement, standing.parameters))


@dataclass(frozen=True)
class Peeking:
    """Where a subject stands, as a statement, its parameters and the reading of its rows (for any driver)."""

    statement: object
    parameters: dict
    usage: Callable[[list], Usage]


def peeking(limit: Limit, subject: str, *, now: float | None = None) -> Peeking:
    bucket, now_ms = _bucket(limit, subject), _now_ms(now)
    if limit.exact:
        return Peeking(_LOG_PEEK, {"bucket": bucket}, functools.partial(_log_peek, limit, now_ms))
    window = _Window.at(limit, now_ms)
    current, previous = window.start_ms // 1000, (window.start_ms - limit.window_ms) // 1000
    return Peeking(_COUNTER_PEEK, {"bucket": bucket, "current": current, "previous": previous},
                   functools.partial(_counter_peek, limit, now_ms, window, current))


def take_back(session: Session, limit: Limit, subject: str, *, now: float | None = None,
              effective: bool = True) -> None:
    """Uncount the latest request counted for `subject` (one counted ahead and then not needed).
    With `effective` false the same statement runs on the same row and changes nothing: for a
    caller whose work must not differ with a secret (a right or a wrong password)."""
    bucket, now_ms = _bucket(limit, subject), _now_ms(now)
    if limit.exact:
        ring_length = limit.requests * WIDTH if effective else -1  # no ring has a negative length
        session.execute(_log_take_back(limit), {"target": bucket, "ring_length": ring_length})
        return
    window_start = _Window.at(limit, now_ms).start_ms // 1000
    least = 0 if effective else 2**31 - 1  # no count reaches it
    session.execute(update(WINDOWS).where(WINDOWS.c.bucket == bucket, WINDOWS.c.window_start == window_start,
                                          WINDOWS.c.count > least).values(count=WINDOWS.c.count - 1))


def forget(session: Session, limit: Limit, subject: str) -> None:
    """Drop everything `subject` has counted against `limit`."""
    bucket = _bucket(limit, subject)
    session.execute(delete(LOGS).where(LOGS.c.bucket == bucket) if limit.exact
                    else delete(WINDOWS).where(WINDOWS.c.bucket == bucket))


def purge_old(session: Session, *, now: float | None = None) -> None:
    """Delete what no limit reads any more: counter windows that can no longer be a previous
    window (two hours covers the longest counter window) and logs whose every event has left its window."""
    now_ms = _now_ms(now)
    session.execute(delete(WINDOWS).where(WINDOWS.c.window_start < now_ms // 1000 - 7200))
    session.execute(delete(LOGS).where(LOGS.c.expires_at <= now_ms))


# --- sliding-window counter -------------------------------------------------------------------
# Integer arithmetic in milliseconds, identical in SQL and Python: a request is allowed when
#   previous × overlap + (current + 1) × window  ≤  limit × window
# where overlap is the part of the previous window still inside the last `window` milliseconds.

WINDOWS = RateLimitWindow.__table__  # Core statements: the ORM's paths cost more than the round trip


def _insert(dialect: str, table):
    return (postgresql if dialect == "postgresql" else sqlite).insert(table)


def _previous_count(bucket=None):
    previous = WINDOWS.alias("previous")
    return func.coalesce(select(previous.c.count).where(
        previous.c.bucket == (bindparam("bucket") if bucket is None else bucket),
        previous.c.window_start == bindparam("previous_start"),
    ).scalar_subquery(), 0)


def _wide(value):
    return cast(value, BigInteger)  # PostgreSQL's integer products overflow at 2³¹


def _allows(current, bucket=None) -> object:
    return (_wide(_previous_count(bucket)) * _wide(bindparam("overlap")) + _wide(current + 1) * _wide(bindparam("window"))
            <= _wide(bindparam("capacity")))


def _inserted(dialect: str, table, values: dict, source):
    """The INSERT of one row of `values`; from `source` (PostgreSQL: a selectable with a `bucket`
    column), one row per row of it with its bucket, so none when it holds none."""
    if source is None:
        return _insert(dialect, table).values(bucket=bindparam("bucket"), **values)
    chosen = [source.c.bucket, *(cast(value, table.c[name].type) for name, value in values.items())]
    return _insert(dialect, table).from_select(["bucket", *values], select(*chosen).select_from(source))


@functools.cache
def _counter_statement(dialect: str, source=None):
    # From a source, the bucket is the inserted row's (`excluded`) or the stored one, by name: no
    # parameter holds it.
    first = _allows(literal(0), None if source is None else source.c.bucket)
    insert = _inserted(dialect, WINDOWS, {"window_start": bindparam("window_start"),
                                          "count": case((first, 1), else_=0), "allowed": first}, source)
    again = _allows(WINDOWS.c.count, None if source is None else literal_column("excluded.bucket"))
    kept = None if source is None else literal_column("rate_limit_windows.bucket")
    return insert.on_conflict_do_update(
        index_elements=["bucket", "window_start"],
        set_={"count": WINDOWS.c.count + case((again, 1), else_=0), "allowed": again},
    ).returning(WINDOWS.c.count, WINDOWS.c.allowed, _previous_count(kept))


@dataclass(frozen=True)
class _Window:
    start_ms: int  # the current window's start
    elapsed_ms: int

    @classmethod
    def at(cls, limit: Limit, now_ms: int) -> _Window:
        start = now_ms // limit.window_ms * limit.window_ms
        return cls(start, now_ms - start)


def _counter_parameters(limit: Limit, bucket: str, window: _Window) -> dict:
    return {"bucket": bucket, "window_start": window.start_ms // 1000,
            "previous_start": (window.start_ms - limit.window_ms) // 1000,
            "overlap": limit.window_ms - window.elapsed_ms, "window": limit.window_ms,
            "capacity": limit.requests * limit.window_ms}


_COUNTER_PEEK = select(WINDOWS.c.window_start, WINDOWS.c.count).where(
    WINDOWS.c.bucket == bindparam("bucket"), WINDOWS.c.window_start.in_([bindparam("current"), bindparam("previous")]))


def _counter_peek(limit: Limit, now_ms: int, window: _Window, current: int, rows: list) -> Usage:
    counts = {start: count for start, count in rows}
    usage = _counter_usage(limit, now_ms, window, sum(count for start, count in counts.items() if start != current),
                           counts.get(current, 0), exceeded=False)
    return _replace_exceeded(usage, usage.remaining == 0)


def _replace_exceeded(usage: Usage, exceeded: bool) -> Usage:
    return Usage(usage.limit, usage.remaining, usage.reset, exceeded, usage.window_seconds, usage.name,
                 usage.retry_after)


def _counter_usage(limit: Limit, now_ms: int, window: _Window, previous: int, current: int, *,
                   exceeded: bool) -> Usage:
    span, capacity = limit.window_ms, limit.requests * limit.window_ms
    overlap = span - window.elapsed_ms
    remaining = max(0, (capacity - previous * overlap - current * span) // span)
    return _usage(limit, now_ms, remaining=remaining, exceeded=exceeded,
                  next_allowed_ms=_counter_next_allowed(limit, window, previous, current + remaining))


def _counter_next_allowed(limit: Limit, window: _Window, previous: int, current: int) -> int:
    """When one more request than `current` will be allowed, if no other request comes before."""
    span, free = limit.window_ms, limit.requests - current - 1  # free: places left beside the previous window's
    if previous > 0 and free >= 0:  # later in this window, as the previous window's weight fades
        elapsed = span - free * span // previous
        if elapsed < span:
            return window.start_ms + max(elapsed, window.elapsed_ms)
    # In the next window, where this window's count is the previous one.
    elapsed = span - (limit.requests - 1) * span // current if current else 0
    return window.start_ms + span + max(0, elapsed)


# --- sliding log ----------------------------------------------------------------------------
# A ring of `requests` fixed-width stamps (Unix milliseconds as 13 decimal digits, so text order is
# time order), written at `head`; the stamp at `head` is the oldest of the last `requests` counted.

LOGS = RateLimitLog.__table__
WIDTH = 13


def _stamp(moment_ms: int) -> str:
    return f"{max(0, moment_ms):0{WIDTH}d}"


def _stamps(ring: str) -> list[int]:
    return [int(ring[at:at + WIDTH]) for at in range(0, len(ring), WIDTH)]


def _substr(*arguments):
    return func.substr(*arguments, type_=Text)  # typed as text, so that `+` joins (`||`)


def _at(dialect: str, text):
    """Text compared byte by byte: PostgreSQL would otherwise use the database's collation."""
    return text.collate("C") if dialect == "postgresql" else text


@functools.cache
def _log_statement(dialect: str, source=None):
    size, ring, head = bindparam("size"), LOGS.c.stamps, LOGS.c.head
    offset = head * WIDTH
    oldest = _at(dialect, _substr(ring, offset + 1, WIDTH))
    fits = func.length(ring) == bindparam("ring_length")  # else the limit was changed: start afresh
    allowed = and_(fits, oldest <= _at(dialect, bindparam("cutoff")))
    fresh = or_(~fits, allowed)
    written = _substr(ring, 1, offset) + bindparam("stamp", type_=Text) + _substr(ring, offset + WIDTH + 1)
    insert = _inserted(dialect, LOGS, {"stamps": bindparam("fresh_ring"), "head": 1 % size, "allowed": True,
                                       "expires_at": bindparam("expires_at")}, source)
    return insert.on_conflict_do_update(index_elements=["bucket"], set_={
        "stamps": case((~fits, bindparam("fresh_ring")), (allowed, written), else_=ring),
        "head": case((~fits, 1 % size), (allowed, (head + 1) % size), else_=head),
        "allowed": fresh,
        "expires_at": case((fresh, bindparam("expires_at")), else_=LOGS.c.expires_at),
    }).returning(LOGS.c.stamps, LOGS.c.allowed)


def _log_take_back(limit: Limit):
    ring, latest = LOGS.c.stamps, (LOGS.c.head + limit.requests - 1) % limit.requests
    cleared = _substr(ring, 1, latest * WIDTH) + _stamp(0) + _substr(ring, latest * WIDTH + WIDTH + 1)
    return update(LOGS).where(LOGS.c.bucket == bindparam("target"), func.length(ring) == bindparam("ring_length")
                              ).values(stamps=cleared, head=latest)


_LOG_PEEK = select(LOGS.c.stamps).where(LOGS.c.bucket == bindparam("bucket"))


def _log_peek(limit: Limit, now_ms: int, rows: list) -> Usage:
    ring = rows[0][0] if rows else None
    stamps = _stamps(ring) if ring and len(ring) == limit.requests * WIDTH else []
    usage = _log_usage(limit, now_ms, stamps, exceeded=False)
    return _replace_exceeded(usage, usage.remaining == 0)


def _log_usage(limit: Limit, now_ms: int, stamps: list[int], *, exceeded: bool) -> Usage:
    counted = [stamp for stamp in stamps if stamp > now_ms - limit.window_ms]
    remaining = max(0, limit.requests - len(counted))
    spent = sorted(counted + [now_ms] * remaining)  # as if the remaining ones went now
    oldest_that_must_leave = spent[len(spent) - limit.requests]
    return _usage(limit, now_ms, remaining=remaining, exceeded=exceeded,
                  next_allowed_ms=oldest_that_must_leave + limit.window_ms)
