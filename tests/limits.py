"""Using up a rate limit in tests, straight in the database."""

from __future__ import annotations

from core.base import db
from core.mechanisms import ratelimit


def spend(limit: ratelimit.Limit, subject: str, count: int, *, now: float | None = None) -> ratelimit.Usage:
    """Count `count` requests of `subject` against `limit` (at `now`); the last one's usage."""
    with db.transaction() as session:
        for _ in range(count):
            usage = ratelimit.hit(session, limit, subject, now=now)
    return usage
