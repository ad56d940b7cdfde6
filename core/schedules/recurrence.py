"""When a schedule runs: its recurrence as an RFC 5545 rule (dateutil's `rrule`), the periods it
makes, the moment of each run in the schedule's time zone, and the rule in words.

Period `i` starts on the rule's `i`-th date and ends the day before the next; a run makes the invoice
of its period at `run_at` local time on the period's first day. Local times that a daylight-saving
change skips or repeats are resolved as zoneinfo does by default (the offset before the change), so
every period has exactly one moment, and a run is identified by its period, never by its time.
"""

from __future__ import annotations

import functools
import importlib.resources
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

from dateutil import rrule
from pydantic import BeforeValidator, Field, PlainSerializer, Strict, WithJsonSchema, model_validator

from core.base.validation import CalendarDate, FieldValueError, Input

Interval = Literal["week", "month", "quarter", "year"]
def _day_of_month(value: object) -> object:
    if value is None or value == "last" or (type(value) is int and 1 <= value <= 31):
        return value
    raise ValueError('must be a day of the month, 1 to 31, or "last"')


DayOfMonth = Annotated[int | str, BeforeValidator(_day_of_month), WithJsonSchema(
    {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 31}, {"const": "last"}]})]
COUNT_MAX = 1000
INTERVAL_COUNT_MAX = {"week": 52, "month": 12, "quarter": 4, "year": 10}
DEFAULT_RUN_AT = time(8, 0)


def _clock_time(value: object) -> object:
    if isinstance(value, time):
        return value
    if not isinstance(value, str) or len(value) != 5 or value[2] != ":":
        raise ValueError("must be a local time HH:MM")
    try:
        return time.fromisoformat(value)
    except ValueError:
        raise ValueError("must be a local time HH:MM") from None


ClockTime = Annotated[time, BeforeValidator(_clock_time), PlainSerializer(lambda value: value.strftime("%H:%M"), return_type=str),
                      WithJsonSchema({"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$", "examples": ["08:00"]})]


class Recurrence(Input):
    """How often a schedule runs, from when, and until when."""

    interval: Interval = Field(description="`week`, `month`, `quarter` or `year`")
    interval_count: Annotated[int, Strict(), Field(ge=1, le=52)] = Field(
        default=1, description="Every N intervals (weeks up to 52, months up to 12, quarters up to 4, years up to 10)")
    day_of_month: DayOfMonth | None = Field(
        default=None, description="Month, quarter and year: the day of the month (1 to 31; a shorter month runs on "
                                  "its last day) or `last`; default the start date's day. Weeks run on the start "
                                  "date's weekday")
    start_date: CalendarDate = Field(description="YYYY-MM-DD in the schedule's time zone: no period starts before it; "
                                                 "the first starts on it, or on the first `day_of_month` after it")
    end_date: CalendarDate | None = Field(default=None, description="No period starts after this day")
    count: Annotated[int, Strict(), Field(ge=1, le=COUNT_MAX)] | None = Field(
        default=None, description=f"How many invoices in all (1 to {COUNT_MAX}); none: until `end_date` or cancelled")
    run_at: ClockTime = Field(default_factory=lambda: DEFAULT_RUN_AT, description="Local time of each run, HH:MM; "
                                                                                   "default 08:00")

    @model_validator(mode="after")
    def _consistent(self) -> Recurrence:
        if self.interval_count > INTERVAL_COUNT_MAX[self.interval]:
            raise FieldValueError("interval_count", f"at most {INTERVAL_COUNT_MAX[self.interval]} for {self.interval}")
        if self.interval == "week" and self.day_of_month is not None:
            raise FieldValueError("day_of_month", "weekly schedules run on the start date's weekday")
        if self.end_date is not None and self.end_date < self.start_date:
            raise FieldValueError("end_date", "is before start_date")
        return self

    def stored(self) -> dict:
        return self.model_dump(mode="json")


def from_stored(data: dict) -> Recurrence:
    return Recurrence.model_validate(data)


def _day(recurrence: Recurrence) -> int | str:
    return recurrence.day_of_month if recurrence.day_of_month is not None else recurrence.start_date.day


def _rule(recurrence: Recurrence, *, bounded: bool) -> rrule.rrule:
    """The recurrence as an RFC 5545 rule over dates (midnight). A day of month that a month lacks
    falls on the month's last day: BYMONTHDAY=28..d with BYSETPOS=-1 picks the latest day there is."""
    start = datetime.combine(recurrence.start_date, time())
    limits = {}
    if bounded:
        if recurrence.count is not None:
            limits["count"] = recurrence.count
        if recurrence.end_date is not None:
            limits["until"] = datetime.combine(recurrence.end_date, time())
    if recurrence.interval == "week":
        return rrule.rrule(rrule.WEEKLY, dtstart=start, interval=recurrence.interval_count, **limits)
    months = {"month": 1, "quarter": 3, "year": 12}[recurrence.interval] * recurrence.interval_count
    day = _day(recurrence)
    by_day = {"bymonthday": -1} if day == "last" else (
        {"bymonthday": day} if day <= 28 else {"bymonthday": tuple(range(28, day + 1)), "bysetpos": -1})
    if recurrence.interval == "year":
        return rrule.rrule(rrule.YEARLY, dtstart=start, interval=recurrence.interval_count,
                           bymonth=recurrence.start_date.month, **by_day, **limits)
    return rrule.rrule(rrule.MONTHLY, dtstart=start, interval=months, **by_day, **limits)


@functools.lru_cache(maxsize=4096)
def _dates(recurrence_key: str, bounded: bool, upto: int) -> tuple[date, ...]:
    """The rule's first `upto` dates (fewer when it ends before)."""
    rule = _rule(Recurrence.model_validate_json(recurrence_key), bounded=bounded)
    found = []
    for moment in rule:
        found.append(moment.date())
        if len(found) == upto:
            break
    return tuple(found)


def occurrence(recurrence: Recurrence, index: int, *, bounded: bool = True) -> date | None:
    """The first day of period `index` (0 is the first), or None when the schedule has no such period
    (past its count or end date). `bounded` False: as if it never ended."""
    upto = 64
    while upto <= index:
        upto *= 2
    found = _dates(recurrence.model_dump_json(), bounded, upto)
    return found[index] if index < len(found) else None


def period(recurrence: Recurrence, index: int) -> tuple[date, date] | None:
    """Period `index`: its first and last day (the day before the next period's first), or None."""
    start = occurrence(recurrence, index)
    if start is None:
        return None
    following = occurrence(recurrence, index + 1, bounded=False)
    return start, following - timedelta(days=1)


def run_moment(recurrence: Recurrence, time_zone: str, day: date) -> datetime:
    """When the run of the period starting on `day` is due: `run_at` there, in UTC."""
    local = datetime.combine(day, recurrence.run_at, tzinfo=ZoneInfo(time_zone))
    return local.astimezone(UTC)


def next_run(recurrence: Recurrence, time_zone: str, index: int) -> datetime | None:
    start = occurrence(recurrence, index)
    return run_moment(recurrence, time_zone, start) if start is not None else None


# --- time zones ------------------------------------------------------------------------------


@functools.cache
def _zones() -> frozenset[str]:
    """The IANA zones of the `tzdata` package (the same on every host, unlike the system's folder, which
    may also hold `localtime`, `posix/…` or nothing at all), less `Factory`, which is no place."""
    names = importlib.resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split()
    return frozenset(names) - {"Factory"}


def valid_time_zone(value: str) -> str:
    """An IANA time zone name as given, or ValueError."""
    if not isinstance(value, str) or value not in _zones():
        raise ValueError("must be an IANA time zone name, such as Europe/Berlin")
    return value


@functools.cache
def _main_zones() -> dict[str, str]:
    """Each country's most populous zone: its first row in the tz database's zone.tab."""
    text = importlib.resources.files("tzdata.zoneinfo").joinpath("zone.tab").read_text(encoding="utf-8")
    zones: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            country, _coordinates, zone, *_ = line.split("\t")
            zones.setdefault(country, zone)
    return zones


def main_time_zone(country: str | None) -> str:
    """The main time zone of a country (ISO 3166 alpha-2), or UTC when none is known."""
    return _main_zones().get((country or "").upper(), "UTC")


# --- in words ----------------------------------------------------------------------------------


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _every(count: int, unit: str) -> str:
    return f"every {unit}" if count == 1 else f"every {count} {unit}s"


def in_words(recurrence: Recurrence) -> str:
    """The rule as a person reads it: "on the 1st of every month, 12 times"."""
    start = recurrence.start_date
    if recurrence.interval == "week":
        words = f"on {start.strftime('%A')} {_every(recurrence.interval_count, 'week')}"
    else:
        day = _day(recurrence)
        on = "on the last day" if day == "last" else f"on the {_ordinal(day)}"
        if recurrence.interval == "year":
            words = f"{on} of {start.strftime('%B')} {_every(recurrence.interval_count, 'year')}"
        elif recurrence.interval == "quarter":
            words = f"{on} of {_every(recurrence.interval_count, 'quarter')}"
        else:
            words = f"{on} of {_every(recurrence.interval_count, 'month')}"
    words += f", from {start.isoformat()}"
    if recurrence.count is not None:
        words += ", once" if recurrence.count == 1 else f", {recurrence.count} times"
    if recurrence.end_date is not None:
        words += f", until {recurrence.end_date.isoformat()}"
    return words
