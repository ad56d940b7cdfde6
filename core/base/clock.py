"""The service's notion of now: UTC, truncated to milliseconds as the API shows it."""

from __future__ import annotations

from datetime import UTC, date, datetime


def now() -> datetime:
    value = datetime.now(UTC)
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def today() -> date:
    return now().date()


def iso(value: datetime | None) -> str | None:
    """ISO 8601 UTC with milliseconds, as every timestamp of the API."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds")[:23] + "Z"
