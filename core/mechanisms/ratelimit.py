"""Fixed-window request counting in the database, so every server process shares the limits."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from config.settings import get_settings
from core.base import metrics
from core.base.errors import RateLimited
from core.models import RateLimitWindow


@dataclass(frozen=True)
class Limit:
    name: str
    requests: int
    window_seconds: int


def api_requests() -> Limit:
    """Every API request of one credential (REST and MCP together)."""
    return Limit("api", get_settings().rate_limit_requests, 60)


def sends_per_key() -> Limit:
    return Limit("send", get_settings().rate_limit_sends, 3600)


def emails_per_account() -> Limit:
    return Limit("email", get_settings().rate_limit_emails, 3600)


@dataclass(frozen=True)
class Usage:
    limit: int
    remaining: int
    reset: int  # Unix seconds when the window ends
    exceeded: bool
    window_seconds: int
    name: str = ""  # the limit's, for the refusals metric

    def refused(self) -> None:
        """Note in the metrics that a request was refused by this limit (the caller refuses it)."""
        metrics.rate_limited(self.name or "other")

    @property
    def retry_after(self) -> int:
        return max(1, math.ceil(self.reset - time.time()))

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
    return "hour" if seconds == 3600 else f"{seconds} seconds"


def _bucket(limit: Limit, subject: str) -> str:
    return f"{limit.name}:{subject}"


WINDOWS = RateLimitWindow.__table__  # a Core statement: the ORM's bulk-insert path costs more than the round trip


def _upsert(session: Session):
    dialect = session.get_bind().dialect.name
    return (postgresql if dialect == "postgresql" else sqlite).insert(WINDOWS)


def hit(session: Session, limit: Limit, subject: str, *, cost: int = 1, now: float | None = None) -> Usage:
    """Count `cost` requests for `subject` and report the usage (the caller commits)."""
    current = time.time() if now is None else now
    window_start = int(current // limit.window_seconds) * limit.window_seconds
    insert = _upsert(session).values(bucket=_bucket(limit, subject), window_start=window_start, count=cost)
    statement = insert.on_conflict_do_update(
        index_elements=["bucket", "window_start"],
        set_={"count": WINDOWS.c.count + cost},
    ).returning(WINDOWS.c.count)
    count = session.execute(statement).scalar_one()
    return Usage(
        limit=limit.requests,
        remaining=max(0, limit.requests - count),
        reset=window_start + limit.window_seconds,
        exceeded=count > limit.requests,
        window_seconds=limit.window_seconds,
        name=limit.name,
    )


def peek(session: Session, limit: Limit, subject: str, *, now: float | None = None) -> Usage:
    current = time.time() if now is None else now
    window_start = int(current // limit.window_seconds) * limit.window_seconds
    row = session.get(RateLimitWindow, (_bucket(limit, subject), window_start))
    count = row.count if row else 0
    return Usage(limit.requests, max(0, limit.requests - count), window_start + limit.window_seconds,
                 count >= limit.requests, limit.window_seconds, limit.name)


def forget(session: Session, limit: Limit, subject: str) -> None:
    """Drop what `subject` has counted against `limit`, in every window."""
    session.execute(delete(RateLimitWindow).where(RateLimitWindow.bucket == _bucket(limit, subject)))


def purge_old(session: Session, *, older_than_seconds: int = 7200) -> None:
    cutoff = int(time.time()) - older_than_seconds
    session.execute(delete(RateLimitWindow).where(RateLimitWindow.window_start < cutoff))
